<?php
/**
 * Loads the plugin's pure classes with the few WordPress functions they call, shimmed: enough for
 * unit tests of signing, certificates, answers, backoff and markup. Everything that needs a real
 * WordPress is tested end to end (test/wordpress/wordpress.browser.test.ts).
 *
 * @package imgpress
 */

define( 'ABSPATH', __DIR__ . '/' );
define( 'WPINC', 'wp-includes' );
define( 'IMGPRESS_VERSION', 'test' );

/** A minimal WP_Error. */
class WP_Error {
	/** @var string */
	public $code;
	/** @var string */
	public $message;
	/**
	 * @param string $code    Code.
	 * @param string $message Message.
	 */
	public function __construct( $code = '', $message = '' ) {
		$this->code    = $code;
		$this->message = $message;
	}
	/** @return string */
	public function get_error_message() {
		return $this->message;
	}
}

/**
 * Shim.
 *
 * @param string $text Text.
 * @return string
 */
function __( $text ) {
	return $text;
}

/**
 * Shim.
 *
 * @param mixed $thing Anything.
 * @return bool
 */
function is_wp_error( $thing ) {
	return $thing instanceof WP_Error;
}

/**
 * Shim.
 *
 * @param string $url       URL.
 * @param int    $component Component.
 * @return mixed
 */
function wp_parse_url( $url, $component = -1 ) {
	return parse_url( $url, $component ); // phpcs:ignore WordPress.WP.AlternativeFunctions.parse_url_parse_url
}

/**
 * Shim.
 *
 * @param string $text Text.
 * @return string
 */
function untrailingslashit( $text ) {
	return rtrim( $text, '/\\' );
}

$imgpress_dir = dirname( __DIR__ ) . '/imgpress/includes/';
foreach ( array( 'signer', 'vault', 'certificate', 'response', 'queue', 'delivery', 'connection' ) as $imgpress_part ) {
	require_once $imgpress_dir . 'class-imgpress-' . $imgpress_part . '.php';
}
