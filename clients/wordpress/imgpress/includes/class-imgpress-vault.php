<?php
/**
 * Sealing of the key pair at rest: sodium secretbox under a key derived from the site's salts, so a
 * copy of wp_options alone (a database dump, a backup) does not reveal the keys.
 *
 * @package imgpress
 */

defined( 'ABSPATH' ) || exit;

/**
 * Seals and opens short strings.
 */
class Imgpress_Vault {

	/**
	 * The 32-byte key: BLAKE2b of the site's auth salts (wp_salt), under a purpose label.
	 *
	 * @param string $salt Normally wp_salt( 'auth' ); tests pass their own.
	 * @return string
	 */
	public static function key( $salt = null ) {
		if ( null === $salt ) {
			$salt = wp_salt( 'auth' ) . wp_salt( 'secure_auth' );
		}
		return sodium_crypto_generichash( 'imgpress key vault v1|' . $salt, '', SODIUM_CRYPTO_SECRETBOX_KEYBYTES );
	}

	/**
	 * Seals a string: base64 of nonce ‖ ciphertext.
	 *
	 * @param string $plain Text to seal.
	 * @param string $key   From key().
	 * @return string
	 */
	public static function seal( $plain, $key ) {
		$nonce = random_bytes( SODIUM_CRYPTO_SECRETBOX_NONCEBYTES );
		return base64_encode( $nonce . sodium_crypto_secretbox( $plain, $nonce, $key ) );
	}

	/**
	 * Opens a sealed string; null when it cannot be opened (the salts changed, or it was altered).
	 *
	 * @param string $sealed From seal().
	 * @param string $key    From key().
	 * @return string|null
	 */
	public static function open( $sealed, $key ) {
		$raw = base64_decode( (string) $sealed, true );
		if ( false === $raw || strlen( $raw ) <= SODIUM_CRYPTO_SECRETBOX_NONCEBYTES ) {
			return null;
		}
		$plain = sodium_crypto_secretbox_open( substr( $raw, SODIUM_CRYPTO_SECRETBOX_NONCEBYTES ), substr( $raw, 0, SODIUM_CRYPTO_SECRETBOX_NONCEBYTES ), $key );
		return false === $plain ? null : $plain;
	}
}
