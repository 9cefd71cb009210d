<?php
/**
 * One answer of the imgpress server, sorted into what the plugin does about it.
 *
 * @package imgpress
 */

defined( 'ABSPATH' ) || exit;

/**
 * A server answer or a transport failure, reduced to its kind; never carries a secret or a raw cURL text.
 */
class Imgpress_Response {

	/** Success. */
	const OK = 'ok';
	/** The server could not be reached (refused, timed out, DNS). */
	const UNREACHABLE = 'unreachable';
	/** The TLS handshake failed verification: the pinned certificate is not the one presented, or a name mismatch. */
	const TLS = 'tls';
	/** Busy or rate-limited: try again after `retry_after`. */
	const RETRY = 'retry';
	/** This key already has as many conversions admitted as the server allows. */
	const IN_PROGRESS = 'in_progress';
	/** The key is unknown or revoked: only reconnecting helps. */
	const REVOKED = 'revoked';
	/** Another authentication failure (clock, signature, scheme). */
	const AUTH = 'auth';
	/** The request itself is refused (this image or these options will never pass). */
	const PERMANENT = 'permanent';
	/** A server-side failure that may pass on another try. */
	const SERVER = 'server';

	/** @var int HTTP status (0 for a transport failure). */
	public $status = 0;
	/** @var string The service's error code, or a transport kind. */
	public $code = '';
	/** @var string The service's message (safe to show: it never holds a secret). */
	public $message = '';
	/** @var int|null Seconds from Retry-After. */
	public $retry_after = null;
	/** @var array<string,string> Headers, lower-case names. */
	public $headers = array();
	/** @var string Body. */
	public $body = '';
	/** @var string One of the constants. */
	public $kind = self::OK;

	/**
	 * From an HTTP answer.
	 *
	 * @param int    $status  Status code.
	 * @param array  $headers Header name => value (any case; a list value takes its last element).
	 * @param string $body    Body.
	 * @param int    $now     Unix time, for a Retry-After given as a date.
	 * @return Imgpress_Response
	 */
	public static function from_http( $status, $headers, $body, $now = null ) {
		$r         = new self();
		$r->status = (int) $status;
		foreach ( (array) $headers as $name => $value ) {
			$r->headers[ strtolower( (string) $name ) ] = is_array( $value ) ? (string) end( $value ) : (string) $value;
		}
		$r->body = (string) $body;
		if ( isset( $r->headers['retry-after'] ) ) {
			$r->retry_after = self::parse_retry_after( $r->headers['retry-after'], null === $now ? time() : $now );
		}
		if ( $r->status >= 200 && $r->status < 300 ) {
			$r->kind = self::OK;
			return $r;
		}
		$json = json_decode( $r->body, true );
		if ( is_array( $json ) ) {
			$r->code    = isset( $json['code'] ) ? (string) $json['code'] : '';
			$r->message = isset( $json['message'] ) ? (string) $json['message'] : '';
		}
		$r->kind = self::classify( $r->status, $r->code );
		return $r;
	}

	/**
	 * From a transport failure; the raw text is looked at only to tell a certificate problem apart.
	 *
	 * @param string $raw_message The transport's message (never shown).
	 * @return Imgpress_Response
	 */
	public static function from_transport( $raw_message ) {
		$r       = new self();
		$tls     = (bool) preg_match( '/SSL|certificate|TLS|handshake|subject name|issuer/i', (string) $raw_message );
		$r->kind = $tls ? self::TLS : self::UNREACHABLE;
		$r->code = $tls ? 'TLS_VERIFICATION_FAILED' : 'UNREACHABLE';
		return $r;
	}

	/**
	 * What a status and code mean for the plugin.
	 *
	 * @param int    $status HTTP status.
	 * @param string $code   The service's code.
	 * @return string
	 */
	public static function classify( $status, $code ) {
		if ( 429 === $status && 'TOO_MANY_IN_PROGRESS' === $code ) {
			return self::IN_PROGRESS;
		}
		if ( 429 === $status && 'TOO_MANY_ATTEMPTS' === $code ) {
			return self::PERMANENT;
		}
		if ( 429 === $status || 503 === $status || 408 === $status || 502 === $status ) {
			return self::RETRY;
		}
		if ( 401 === $status ) {
			return 'INVALID_API_KEY' === $code ? self::REVOKED : self::AUTH;
		}
		if ( $status >= 400 && $status < 500 ) {
			return self::PERMANENT;
		}
		return self::SERVER;
	}

	/**
	 * Retry-After in seconds: delta-seconds or an HTTP date; null when unreadable.
	 *
	 * @param string $value Header value.
	 * @param int    $now   Unix time.
	 * @return int|null
	 */
	public static function parse_retry_after( $value, $now ) {
		$value = trim( (string) $value );
		if ( preg_match( '/^\d{1,9}$/', $value ) ) {
			return (int) $value;
		}
		$at = strtotime( $value );
		return false === $at ? null : max( 0, $at - (int) $now );
	}

	/**
	 * Whether it succeeded.
	 *
	 * @return bool
	 */
	public function ok() {
		return self::OK === $this->kind;
	}

	/**
	 * The body as JSON (array), or an empty array.
	 *
	 * @return array
	 */
	public function json() {
		$data = json_decode( $this->body, true );
		return is_array( $data ) ? $data : array();
	}
}
