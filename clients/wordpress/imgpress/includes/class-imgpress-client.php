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
	/** Option: the last timestamp each signed GET endpoint was signed with (see unused_second). */
	const LAST_SIGNED = 'imgpress_last_signed';

	/** @var float Seconds this PHP request spent waiting on the server's answers (bench/wordpress.ts tells WordPress's own time apart with it). */
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
		$args['headers'] = Imgpress_Signer::headers( $this->api_key, $this->secret, 'GET', $endpoint, '', self::unused_second( $endpoint ) );
		return $this->send( $this->base . $endpoint, $args );
	}

	/**
	 * A timestamp no earlier signed GET of $endpoint used. Two empty-body GETs of one endpoint in the
	 * same second sign the same string, and the server refuses the second as a replay: it takes the
	 * next second instead (the server accepts a clock minutes ahead; never more than 60 s here).
	 *
	 * @param string $endpoint e.g. /plugin/account.
	 * @return int Unix seconds.
	 */
	private static function unused_second( $endpoint ) {
		$used = get_option( self::LAST_SIGNED, array() );
		$used = is_array( $used ) ? $used : array();
		$last = isset( $used[ $endpoint ] ) ? (int) $used[ $endpoint ] : 0;
		$now  = time();
		$ts   = min( max( $now, $last + 1 ), $now + 60 );
		$used[ $endpoint ] = $ts;
		update_option( self::LAST_SIGNED, $used, false );
		return $ts;
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
			$request = $this->convert_request( $task, $quality );
			if ( null === $request ) {
				continue;
			}
			$requests[ $key ] = array(
				'url'     => $this->base . '/plugin/convert',
				'headers' => $request['headers'],
				'data'    => $request['body'],
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
	 * One signed conversion request: the multipart body (built here, so the signature covers its exact bytes) and its headers.
	 *
	 * @param array  $task    array( 'path' => file, 'format' => webp|avif ).
	 * @param string $quality lossy|lossless.
	 * @return array|null array( 'body' => string, 'headers' => array ), null when the file cannot be read.
	 */
	private function convert_request( array $task, $quality ) {
		$bytes = file_get_contents( $task['path'] ); // phpcs:ignore WordPress.WP.AlternativeFunctions.file_get_contents_file_get_contents
		if ( false === $bytes ) {
			return null;
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
		$headers                 = Imgpress_Signer::headers( $this->api_key, $this->secret, 'POST', '/plugin/convert', $body, time() );
		$headers['Content-Type'] = $ct;
		$headers['Expect']       = '';
		return array(
			'body'    => $body,
			'headers' => $headers,
		);
	}

	/**
	 * Converts a list of files keeping `$limit` requests in flight: a new one starts as soon as one
	 * ends, so the server never idles waiting for the slowest of a batch. Each answer is handed to
	 * `$done( $key, Imgpress_Response, $bytes )` as it arrives; `$done` returns false to start no
	 * more (the server is down, busy or refuses the key: what is in flight still ends).
	 *
	 * With PHP's cURL (WordPress's own transport) the pool is a cURL multi handle verified exactly
	 * as the HTTP API verifies (the pinned certificate or WordPress's CA bundle, peer and host name);
	 * without it, batches of `$limit` go through convert_many().
	 *
	 * @param array    $tasks    key => array( 'path' => file, 'format' => webp|avif ), in the order to send.
	 * @param string   $quality  lossy|lossless.
	 * @param int      $limit    Requests in flight at most.
	 * @param float    $deadline microtime() after which nothing new starts.
	 * @param callable $done     function( $key, Imgpress_Response $r, string $bytes ): bool.
	 */
	public function convert_pool( array $tasks, $quality, $limit, $deadline, $done ) {
		if ( ! function_exists( 'curl_multi_init' ) ) {
			foreach ( array_chunk( $tasks, max( 1, $limit ), true ) as $batch ) {
				if ( microtime( true ) >= $deadline ) {
					return;
				}
				$go = true;
				foreach ( $this->convert_many( $batch, $quality ) as $key => $answer ) {
					$go = call_user_func( $done, $key, $answer[0], $answer[1] ) && $go;
				}
				if ( ! $go ) {
					return;
				}
			}
			return;
		}
		$ca_file = null !== $this->ca_file ? $this->ca_file : ABSPATH . WPINC . '/certificates/ca-bundle.crt';
		$multi   = curl_multi_init();
		$pending = $tasks;
		$flying  = array();
		$go      = true;
		while ( true ) {
			while ( $go && count( $flying ) < $limit && ! empty( $pending ) && microtime( true ) < $deadline ) {
				$key     = array_key_first( $pending );
				$task    = $pending[ $key ];
				$request = $this->convert_request( $task, $quality );
				unset( $pending[ $key ] );
				if ( null === $request ) {
					$r       = new Imgpress_Response();
					$r->kind = Imgpress_Response::PERMANENT;
					$r->code = 'UNREADABLE_FILE';
					$go      = call_user_func( $done, $key, $r, '' ) && $go;
					continue;
				}
				$slot          = new stdClass();
				$slot->key     = $key;
				$slot->headers = array();
				$slot->handle  = $this->curl_handle( $request, $ca_file );
				curl_setopt( // phpcs:ignore WordPress.WP.AlternativeFunctions.curl_curl_setopt
					$slot->handle,
					CURLOPT_HEADERFUNCTION,
					static function ( $h, $line ) use ( $slot ) {
						$parts = explode( ':', $line, 2 );
						if ( 2 === count( $parts ) ) {
							$slot->headers[ strtolower( trim( $parts[0] ) ) ] = trim( $parts[1] );
						}
						return strlen( $line );
					}
				);
				curl_multi_add_handle( $multi, $slot->handle );
				$flying[ self::handle_id( $slot->handle ) ] = $slot;
			}
			if ( empty( $flying ) ) {
				break;
			}
			$waiting = microtime( true );
			do {
				$status = curl_multi_exec( $multi, $running );
			} while ( CURLM_CALL_MULTI_PERFORM === $status );
			self::$convert_seconds += microtime( true ) - $waiting;
			while ( false !== ( $info = curl_multi_info_read( $multi ) ) ) { // phpcs:ignore WordPress.CodeAnalysis.AssignmentInCondition.FoundInWhileCondition
				$slot = $flying[ self::handle_id( $info['handle'] ) ];
				unset( $flying[ self::handle_id( $info['handle'] ) ] );
				$bytes = '';
				if ( CURLE_OK !== $info['result'] ) {
					// Only sorted (certificate or not): never shown.
					$r = Imgpress_Response::from_transport( curl_strerror( $info['result'] ) . ' ' . curl_error( $slot->handle ) );
				} else {
					$body = (string) curl_multi_getcontent( $slot->handle );
					$r    = Imgpress_Response::from_http( curl_getinfo( $slot->handle, CURLINFO_RESPONSE_CODE ), $slot->headers, $body );
					if ( $r->ok() ) {
						$bytes   = $body;
						$r->body = '';
					}
				}
				curl_multi_remove_handle( $multi, $slot->handle );
				curl_close( $slot->handle );
				$go = call_user_func( $done, $slot->key, $r, $bytes ) && $go;
			}
			$waiting = microtime( true );
			if ( ! empty( $flying ) && -1 === curl_multi_select( $multi, 0.5 ) ) {
				usleep( 10000 );
			}
			self::$convert_seconds += microtime( true ) - $waiting;
		}
		curl_multi_close( $multi );
	}

	/**
	 * A key for a cURL handle (a resource before PHP 8, an object since).
	 *
	 * @param resource|object $handle cURL handle.
	 * @return int
	 */
	private static function handle_id( $handle ) {
		return is_object( $handle ) ? spl_object_id( $handle ) : (int) $handle;
	}

	/**
	 * A cURL handle for one conversion, verified as the HTTP API verifies: peer and host name against the pin or WordPress's CAs.
	 *
	 * @param array  $request From convert_request().
	 * @param string $ca_file CA file.
	 * @return resource|CurlHandle
	 */
	private function curl_handle( array $request, $ca_file ) {
		$lines = array();
		foreach ( $request['headers'] as $name => $value ) {
			$lines[] = $name . ': ' . $value;
		}
		$handle = curl_init( $this->base . '/plugin/convert' ); // phpcs:ignore WordPress.WP.AlternativeFunctions.curl_curl_init
		curl_setopt_array( // phpcs:ignore WordPress.WP.AlternativeFunctions.curl_curl_setopt_array
			$handle,
			array(
				CURLOPT_POST           => true,
				CURLOPT_POSTFIELDS     => $request['body'],
				CURLOPT_HTTPHEADER     => $lines,
				CURLOPT_RETURNTRANSFER => true,
				CURLOPT_FOLLOWLOCATION => false,
				CURLOPT_CONNECTTIMEOUT => 10,
				CURLOPT_TIMEOUT        => self::CONVERT_TIMEOUT,
				CURLOPT_SSL_VERIFYPEER => true,
				CURLOPT_SSL_VERIFYHOST => 2,
				CURLOPT_CAINFO         => $ca_file,
				CURLOPT_USERAGENT      => 'imgpress-wordpress/' . IMGPRESS_VERSION,
				CURLOPT_PROTOCOLS      => CURLPROTO_HTTPS,
			)
		);
		return $handle;
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
