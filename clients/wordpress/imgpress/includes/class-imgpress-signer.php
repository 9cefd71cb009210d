<?php
/**
 * Signing of imgpress requests (docs/api.md#signing): the multipart body is built here so that the
 * signature covers exactly the bytes sent (the raw-body hash reading), never the empty-body hash.
 *
 * @package imgpress
 */

defined( 'ABSPATH' ) || exit;

/**
 * Pure functions: no WordPress calls, so the unit tests check them against the service's vectors.
 */
class Imgpress_Signer {

	/**
	 * Builds a multipart/form-data body.
	 *
	 * @param array  $fields   Plain fields, name => value (sent before the file, in this order).
	 * @param string $filename The image part's file name.
	 * @param string $bytes    The image.
	 * @param string $mime     The image part's Content-Type.
	 * @param string $boundary The boundary (random when empty).
	 * @return array{0:string,1:string} The body and its Content-Type header value.
	 */
	public static function multipart( array $fields, $filename, $bytes, $mime, $boundary = '' ) {
		if ( '' === $boundary ) {
			$boundary = 'imgpress-' . bin2hex( random_bytes( 12 ) );
		}
		$body = '';
		foreach ( $fields as $name => $value ) {
			$body .= '--' . $boundary . "\r\n" . 'Content-Disposition: form-data; name="' . self::quote( (string) $name ) . "\"\r\n\r\n" . $value . "\r\n";
		}
		$body .= '--' . $boundary . "\r\n"
			. 'Content-Disposition: form-data; name="image"; filename="' . self::quote( $filename ) . "\"\r\n"
			. 'Content-Type: ' . $mime . "\r\n\r\n"
			. $bytes . "\r\n"
			. '--' . $boundary . "--\r\n";
		return array( $body, 'multipart/form-data; boundary=' . $boundary );
	}

	/**
	 * The string to sign: METHOD, ENDPOINT, TIMESTAMP and the body's SHA-256, joined by "\n".
	 *
	 * @param string $method    HTTP method.
	 * @param string $endpoint  Path relative to the base URL, e.g. /plugin/convert.
	 * @param string $timestamp Unix seconds.
	 * @param string $body      The exact bytes sent ('' for none).
	 * @return string
	 */
	public static function string_to_sign( $method, $endpoint, $timestamp, $body ) {
		return strtoupper( $method ) . "\n" . $endpoint . "\n" . $timestamp . "\n" . hash( 'sha256', $body );
	}

	/**
	 * The three headers of a signed request.
	 *
	 * @param string $api_key   The api_key.
	 * @param string $secret    The secret_key (its UTF-8 bytes, prefix included, are the HMAC key).
	 * @param string $method    HTTP method.
	 * @param string $endpoint  Path relative to the base URL.
	 * @param string $body      The exact bytes sent.
	 * @param int    $timestamp Unix seconds.
	 * @return array<string,string>
	 */
	public static function headers( $api_key, $secret, $method, $endpoint, $body, $timestamp ) {
		$ts = (string) $timestamp;
		return array(
			'x-api-key'   => $api_key,
			'x-timestamp' => $ts,
			'x-signature' => hash_hmac( 'sha256', self::string_to_sign( $method, $endpoint, $ts, $body ), $secret ),
		);
	}

	/**
	 * A file or field name made safe inside a quoted header parameter.
	 *
	 * @param string $name Raw name.
	 * @return string
	 */
	private static function quote( $name ) {
		return str_replace( array( '"', "\r", "\n" ), array( '%22', '%0D', '%0A' ), $name );
	}
}
