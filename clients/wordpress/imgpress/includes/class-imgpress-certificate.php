<?php
/**
 * The server's TLS certificate: read it once for the owner to confirm, then pin it.
 *
 * Reading: a TLS handshake with verification off whose only purpose is to capture the certificate
 * the server presents; nothing is ever sent on that connection, and it is closed at once. What is
 * shown to the owner is its SHA-256 fingerprint, which they compare with the one the server printed.
 * Pinning: the confirmed PEM becomes the only trusted authority of every request (the HTTP API's
 * `sslcertificates`), so every later connection is verified against exactly that certificate.
 *
 * @package imgpress
 */

defined( 'ABSPATH' ) || exit;

/**
 * Certificate capture, fingerprints and the pinned file.
 */
class Imgpress_Certificate {

	/**
	 * SHA-256 of a PEM certificate's DER bytes, as colon-separated upper-case hex (as the server and openssl print it).
	 *
	 * @param string $pem PEM text.
	 * @return string|null Null when it is not a certificate.
	 */
	public static function fingerprint( $pem ) {
		if ( ! preg_match( '/-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----/s', (string) $pem, $m ) ) {
			return null;
		}
		$der = base64_decode( preg_replace( '/\s+/', '', $m[1] ), true );
		if ( false === $der || '' === $der ) {
			return null;
		}
		return strtoupper( implode( ':', str_split( hash( 'sha256', $der ), 2 ) ) );
	}

	/**
	 * Whether two fingerprints are the same, however the owner typed or pasted them (case, colons, spaces).
	 *
	 * @param string $a One fingerprint.
	 * @param string $b The other.
	 * @return bool
	 */
	public static function same_fingerprint( $a, $b ) {
		$clean = static function ( $f ) {
			return strtolower( preg_replace( '/[^0-9a-fA-F]/', '', (string) $f ) );
		};
		return 64 === strlen( $clean( $a ) ) && hash_equals( $clean( $a ), $clean( $b ) );
	}

	/**
	 * The DNS names and IP addresses a certificate holds (subjectAltName), for a host-name mismatch message.
	 *
	 * @param string $pem PEM text.
	 * @return string[]
	 */
	public static function names( $pem ) {
		if ( ! function_exists( 'openssl_x509_parse' ) ) {
			return array();
		}
		$info = openssl_x509_parse( $pem );
		if ( ! is_array( $info ) || empty( $info['extensions']['subjectAltName'] ) ) {
			return array();
		}
		$names = array();
		foreach ( explode( ',', $info['extensions']['subjectAltName'] ) as $entry ) {
			$parts = explode( ':', trim( $entry ), 2 );
			if ( 2 === count( $parts ) ) {
				$names[] = trim( $parts[1] );
			}
		}
		return $names;
	}

	/**
	 * Captures the certificate a server presents, without trusting or sending anything.
	 *
	 * @param string $host    Host name or IP address.
	 * @param int    $port    TLS port.
	 * @param int    $timeout Seconds.
	 * @return string|WP_Error PEM, or why it could not be read.
	 */
	public static function capture( $host, $port, $timeout = 10 ) {
		$context = stream_context_create(
			array(
				'ssl' => array(
					'capture_peer_cert' => true,
					// Only to read the certificate for the owner to compare: this connection carries no request.
					'verify_peer'       => false,
					'verify_peer_name'  => false,
					'SNI_enabled'       => true,
					'peer_name'         => $host,
				),
			)
		);
		$target = 'ssl://' . ( false !== strpos( $host, ':' ) ? '[' . $host . ']' : $host ) . ':' . (int) $port;
		$errno  = 0;
		$errstr = '';
		// The warning PHP raises on failure (a raw OpenSSL or socket text) is replaced by the WP_Error below.
		set_error_handler( // phpcs:ignore WordPress.PHP.DevelopmentFunctions.error_log_set_error_handler
			static function () {
				return true;
			}
		);
		try {
			$stream = stream_socket_client( $target, $errno, $errstr, $timeout, STREAM_CLIENT_CONNECT, $context );
		} finally {
			restore_error_handler();
		}
		if ( false === $stream ) {
			return new WP_Error( 'imgpress_unreachable', 'unreachable' );
		}
		$params = stream_context_get_params( $stream );
		fclose( $stream ); // phpcs:ignore WordPress.WP.AlternativeFunctions.file_system_read_fclose
		if ( empty( $params['options']['ssl']['peer_certificate'] ) ) {
			return new WP_Error( 'imgpress_no_certificate', 'no certificate' );
		}
		$pem = '';
		if ( ! openssl_x509_export( $params['options']['ssl']['peer_certificate'], $pem ) ) {
			return new WP_Error( 'imgpress_no_certificate', 'no certificate' );
		}
		return $pem;
	}

	/**
	 * Where the pinned certificate lives: a file the HTTP API can be pointed at.
	 *
	 * @return string
	 */
	public static function pinned_path() {
		$uploads = wp_upload_dir( null, false );
		return trailingslashit( $uploads['basedir'] ) . 'imgpress/server-cert.pem';
	}

	/**
	 * Writes the pinned certificate (public data: the server hands it to anyone who connects).
	 *
	 * @param string $pem PEM text.
	 * @return string|null The file, or null when it could not be written.
	 */
	public static function write_pinned( $pem ) {
		$path = self::pinned_path();
		if ( ! wp_mkdir_p( dirname( $path ) ) ) {
			return null;
		}
		if ( ! file_exists( dirname( $path ) . '/index.php' ) ) {
			file_put_contents( dirname( $path ) . '/index.php', "<?php\n// Silence is golden.\n" ); // phpcs:ignore WordPress.WP.AlternativeFunctions.file_system_read_file_put_contents
		}
		return false === file_put_contents( $path, $pem ) ? null : $path; // phpcs:ignore WordPress.WP.AlternativeFunctions.file_system_read_file_put_contents
	}

	/**
	 * The pinned file for `$pem`, rewritten when it is missing or differs (a restored backup, a moved uploads folder).
	 *
	 * @param string $pem The confirmed certificate.
	 * @return string|null
	 */
	public static function ensure_pinned( $pem ) {
		$path = self::pinned_path();
		if ( is_readable( $path ) && file_get_contents( $path ) === $pem ) { // phpcs:ignore WordPress.WP.AlternativeFunctions.file_get_contents_file_get_contents
			return $path;
		}
		return self::write_pinned( $pem );
	}
}
