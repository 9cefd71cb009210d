<?php
/**
 * HTTP to the imgpress server through WordPress's HTTP API, with certificate verification always on:
 * against the pinned certificate when the owner confirmed a self-signed one, else WordPress's CAs.
 *
 * @package imgpress
 */

defined( 'ABSPATH' ) || exit;

/**
 * Unsigned (credential routes) and signed requests, and batches of conversions sent at once.
 */
class Imgpress_Client {

	/** Seconds to wait for a conversion answer: the server's queue wait (30 s) plus a conversion (60 s) plus the transfer. */
	const CONVERT_TIMEOUT = 120;
	/** Seconds for the small JSON routes. */
	const JSON_TIMEOUT = 20;

	/** @var float Seconds this request spent waiting for conversion batches (bench/wordpress.ts tells WordPress's own time apart with it). */
	public static $convert_seconds = 0.0;

	/** @var string Base URL ending in /v1. */
	private $base;
	/** @var string|null Pinned certificate file, or null for WordPress's CA bundle. */
	private $ca_file;
	/** @var string */
	private $api_key;
	/** @var string */
	private $secret;

	/**
	 * A client for one server.
	 *
	 * @param string      $base    Base URL ending in /v1.
	 * @param string|null $ca_file Pinned certificate file, or null.
	 * @param string      $api_key The api_key ('' before connecting).
	 * @param string      $secret  The secret_key ('' before connecting).
	 */
	public function __construct( $base, $ca_file, $api_key = '', $secret = '' ) {
		$this->base    = untrailingslashit( $base );
		$this->ca_file = $ca_file;
		$this->api_key = $api_key;
		$this->secret  = $secret;
	}

	/**
	 * Arguments every request shares: verification on, the pinned certificate when there is one.
	 *
	 * @param int $timeout Seconds.
	 * @return array
	 */
	private function base_args( $timeout ) {
		$args = array(
			'timeout'     => $timeout,
			'redirection' => 0,
			'sslverify'   => true,
			'user-agent'  => 'imgpress-wordpress/' . IMGPRESS_VERSION . '; ' . home_url( '/' ),
		);
		if ( null !== $this->ca_file ) {
			$args['sslcertificates'] = $this->ca_file;
		}
		return $args;
	}

	/**
	 * POSTs JSON to a credential route (no authentication).
	 *
	 * @param string $endpoint e.g. /plugin/auth/request-otp.
	 * @param array  $data     Fields.
	 * @return Imgpress_Response
	 */
	public function post_json( $endpoint, array $data ) {
		$args            = $this->base_args( self::JSON_TIMEOUT );
		$args['method']  = 'POST';
		$args['headers'] = array( 'Content-Type' => 'application/json' );
		$args['body']    = wp_json_encode( $data );
		return $this->send( $this->base . $endpoint, $args );
	}

	/**
	 * GETs a URL outside /v1 (e.g. /health) to see whether the server answers over verified TLS.
	 *
	 * @param string $path e.g. /health.
	 * @return Imgpress_Response
	 */
	public function get_outside( $path ) {
		$args           = $this->base_args( self::JSON_TIMEOUT );
		$args['method'] = 'GET';
		return $this->send( preg_replace( '#/v1$#', '', $this->base ) . $path, $args );
	}

	/**
	 * A signed GET (empty body).
	 *
	 * @param string $endpoint e.g. /plugin/account.
	 * @return Imgpress_Response
	 */
	public function get_signed( $endpoint ) {
		$args            = $this->base_args( self::JSON_TIMEOUT );
		$args['method']  = 'GET';
		$args['headers'] = Imgpress_Signer::headers( $this->api_key, $this->secret, 'GET', $endpoint, '', time() );
		return $this->send( $this->base . $endpoint, $args );
	}

	/**
	 * Sends through wp_remote_request and sorts the outcome.
	 *
	 * @param string $url  URL.
	 * @param array  $args HTTP API arguments.
	 * @return Imgpress_Response
	 */
	private function send( $url, array $args ) {
		$res = wp_remote_request( $url, $args );
		if ( is_wp_error( $res ) ) {
			return Imgpress_Response::from_transport( $res->get_error_message() );
		}
		$headers = wp_remote_retrieve_headers( $res );
		$plain   = array();
		foreach ( $headers as $name => $value ) {
			$plain[ $name ] = $value;
		}
		return Imgpress_Response::from_http( wp_remote_retrieve_response_code( $res ), $plain, wp_remote_retrieve_body( $res ) );
	}

	/**
	 * Converts several files at once (at most as many as given: the caller sizes the batch to the server's limit).
	 *
	 * Sent together through the Requests library that WordPress's HTTP API is built on (its multi
	 * handle): wp_remote_request sends one request at a time, and the server converts several at
	 * once. The same verification applies: `verify` is the pinned certificate or WordPress's CAs.
	 *
	 * @param array  $tasks   key => array( 'path' => file, 'format' => webp|avif ).
	 * @param string $quality lossy|lossless.
	 * @return array key => array( Imgpress_Response, string $bytes )
	 */
	public function convert_many( array $tasks, $quality ) {
		$requests = array();
		foreach ( $tasks as $key => $task ) {
			$bytes = file_get_contents( $task['path'] ); // phpcs:ignore WordPress.WP.AlternativeFunctions.file_get_contents_file_get_contents
			if ( false === $bytes ) {
				continue;
			}
			$mime              = 'png' === strtolower( pathinfo( $task['path'], PATHINFO_EXTENSION ) ) ? 'image/png' : 'image/jpeg';
			list( $body, $ct ) = Imgpress_Signer::multipart(
				array(
					'format'  => $task['format'],
					'quality' => $quality,
				),
				wp_basename( $task['path'] ),
				$bytes,
				$mime
			);
			$headers           = Imgpress_Signer::headers( $this->api_key, $this->secret, 'POST', '/plugin/convert', $body, time() );
			$headers['Content-Type'] = $ct;
			$headers['Expect']       = '';
			$requests[ $key ]        = array(
				'url'     => $this->base . '/plugin/convert',
				'headers' => $headers,
				'data'    => $body,
				'type'    => 'POST',
			);
		}
		$ca_file = null !== $this->ca_file ? $this->ca_file : ABSPATH . WPINC . '/certificates/ca-bundle.crt';
		$class   = self::requests_class();
		$hooks   = '\WpOrg\Requests\Requests' === $class ? new \WpOrg\Requests\Hooks() : new Requests_Hooks();
		// The cURL transport applies `verify` to single requests only; each handle of a batch gets the same pin here.
		$hooks->register(
			'curl.before_multi_add',
			static function ( &$handle ) use ( $ca_file ) {
				curl_setopt( $handle, CURLOPT_SSL_VERIFYPEER, true ); // phpcs:ignore WordPress.WP.AlternativeFunctions.curl_curl_setopt
				curl_setopt( $handle, CURLOPT_SSL_VERIFYHOST, 2 ); // phpcs:ignore WordPress.WP.AlternativeFunctions.curl_curl_setopt
				curl_setopt( $handle, CURLOPT_CAINFO, $ca_file ); // phpcs:ignore WordPress.WP.AlternativeFunctions.curl_curl_setopt
			}
		);
		$options = array(
			'timeout'          => self::CONVERT_TIMEOUT,
			'connect_timeout'  => 10,
			'follow_redirects' => false,
			'verify'           => $ca_file,
			'useragent'        => 'imgpress-wordpress/' . IMGPRESS_VERSION,
			'hooks'            => $hooks,
		);
		$started                = microtime( true );
		$answers                = empty( $requests ) ? array() : $class::request_multiple( $requests, $options );
		self::$convert_seconds += microtime( true ) - $started;
		$out     = array();
		foreach ( $tasks as $key => $task ) {
			if ( ! isset( $answers[ $key ] ) ) {
				$out[ $key ] = array( Imgpress_Response::from_http( 0, array(), '' ), '' );
				$out[ $key ][0]->kind = Imgpress_Response::PERMANENT;
				$out[ $key ][0]->code = 'UNREADABLE_FILE';
				continue;
			}
			$answer = $answers[ $key ];
			if ( $answer instanceof Exception ) {
				$out[ $key ] = array( Imgpress_Response::from_transport( $answer->getMessage() ), '' );
				continue;
			}
			$headers = array();
			foreach ( $answer->headers as $name => $value ) {
				$headers[ $name ] = $value;
			}
			$r           = Imgpress_Response::from_http( $answer->status_code, $headers, $answer->success ? '' : $answer->body );
			$out[ $key ] = array( $r, $r->ok() ? $answer->body : '' );
		}
		return $out;
	}

	/**
	 * The Requests class of this WordPress: namespaced from 6.2, global before.
	 *
	 * @return string
	 */
	private static function requests_class() {
		if ( class_exists( '\WpOrg\Requests\Requests' ) ) {
			return '\WpOrg\Requests\Requests';
		}
		// Loading WP_Http loads (and registers the autoloader of) the bundled Requests library.
		_wp_http_get_object();
		return class_exists( '\WpOrg\Requests\Requests' ) ? '\WpOrg\Requests\Requests' : 'Requests';
	}
}
