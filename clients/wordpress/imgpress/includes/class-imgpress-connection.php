<?php
/**
 * The link to one imgpress server: the connect flow (certificate, one-time code, key pair), the
 * sealed keys, and the connection's health as the queue last saw it.
 *
 * @package imgpress
 */

defined( 'ABSPATH' ) || exit;

/**
 * Stored in options: `imgpress_connection` (server, key prefix, sealed keys, pinned certificate),
 * `imgpress_pending` (a connect flow under way) and `imgpress_status` (the last problem seen).
 */
class Imgpress_Connection {

	const OPTION  = 'imgpress_connection';
	const PENDING = 'imgpress_pending';
	const STATUS  = 'imgpress_status';

	/**
	 * The stored connection, or an empty array.
	 *
	 * @return array
	 */
	public static function get() {
		$c = get_option( self::OPTION, array() );
		return is_array( $c ) ? $c : array();
	}

	/**
	 * Whether a key pair is stored.
	 *
	 * @return bool
	 */
	public static function is_connected() {
		$c = self::get();
		return ! empty( $c['api_key'] ) && ! empty( $c['secret'] );
	}

	/**
	 * A client with the stored keys; null when not connected or when the keys cannot be opened.
	 *
	 * @return Imgpress_Client|null
	 */
	public static function client() {
		$c = self::get();
		if ( empty( $c['api_key'] ) || empty( $c['secret'] ) ) {
			return null;
		}
		$key     = Imgpress_Vault::key();
		$api_key = Imgpress_Vault::open( $c['api_key'], $key );
		$secret  = Imgpress_Vault::open( $c['secret'], $key );
		if ( null === $api_key || null === $secret ) {
			self::set_status( 'sealed', __( 'The stored key pair cannot be read any more (the site\'s security salts changed). Reconnect to get a new one.', 'imgpress' ) );
			return null;
		}
		return new Imgpress_Client( $c['server'], self::ca_file( $c ), $api_key, $secret );
	}

	/**
	 * The pinned certificate file of a connection (or a pending one), null for a publicly trusted server.
	 *
	 * @param array $c Connection or pending state.
	 * @return string|null
	 */
	private static function ca_file( array $c ) {
		return empty( $c['cert_pem'] ) ? null : Imgpress_Certificate::ensure_pinned( $c['cert_pem'] );
	}

	/**
	 * The server address as typed, made into the base URL: https, port 8443 when no scheme and no port were typed, ending in /v1.
	 *
	 * @param string $typed What the owner typed.
	 * @return string|null Null when it cannot be an imgpress address.
	 */
	public static function normalise_server( $typed ) {
		$typed = trim( (string) $typed );
		if ( '' === $typed ) {
			return null;
		}
		if ( ! preg_match( '#^[a-z][a-z0-9+.-]*://#i', $typed ) ) {
			$typed = 'https://' . $typed;
			$parts = wp_parse_url( $typed );
			if ( is_array( $parts ) && empty( $parts['port'] ) && ! empty( $parts['host'] ) ) {
				$typed = 'https://' . $parts['host'] . ':8443' . ( isset( $parts['path'] ) ? $parts['path'] : '' );
			}
		}
		$parts = wp_parse_url( $typed );
		if ( ! is_array( $parts ) || empty( $parts['host'] ) || 'https' !== strtolower( $parts['scheme'] ) || isset( $parts['user'] ) || isset( $parts['query'] ) ) {
			return null;
		}
		$host = false !== strpos( $parts['host'], ':' ) && '[' !== $parts['host'][0] ? '[' . $parts['host'] . ']' : $parts['host'];
		$path = isset( $parts['path'] ) ? untrailingslashit( $parts['path'] ) : '';
		if ( ! preg_match( '#/v1$#', $path ) ) {
			$path .= '/v1';
		}
		return 'https://' . strtolower( $host ) . ( isset( $parts['port'] ) ? ':' . (int) $parts['port'] : '' ) . $path;
	}

	/**
	 * Step 1: checks the server over verified TLS; a certificate no authority vouches for is captured for the owner to confirm.
	 *
	 * @param string $typed_server The address typed.
	 * @param string $email        The owner's address.
	 * @return true|WP_Error True when the next step (confirm or code) is ready in the pending state.
	 */
	public static function start( $typed_server, $email ) {
		$server = self::normalise_server( $typed_server );
		if ( null === $server ) {
			return new WP_Error( 'imgpress_address', __( 'That is not an imgpress server address. Type it as https://host:8443 (or just host:8443), as the server printed it.', 'imgpress' ) );
		}
		if ( ! is_email( $email ) ) {
			return new WP_Error( 'imgpress_email', __( 'Type the e-mail address the code should be sent to.', 'imgpress' ) );
		}
		$pending = array(
			'server'   => $server,
			'email'    => $email,
			'cert_pem' => '',
			'step'     => 'code',
		);
		$probe   = ( new Imgpress_Client( $server, null ) )->get_outside( '/health' );
		if ( Imgpress_Response::TLS === $probe->kind ) {
			$parts = wp_parse_url( $server );
			$pem   = Imgpress_Certificate::capture( trim( $parts['host'], '[]' ), isset( $parts['port'] ) ? $parts['port'] : 443 );
			if ( is_wp_error( $pem ) ) {
				return self::unreachable_error( $server );
			}
			$pending['cert_pem']    = $pem;
			$pending['fingerprint'] = Imgpress_Certificate::fingerprint( $pem );
			$pending['step']        = 'confirm';
			update_option( self::PENDING, $pending, false );
			return true;
		}
		if ( Imgpress_Response::UNREACHABLE === $probe->kind ) {
			return self::unreachable_error( $server );
		}
		update_option( self::PENDING, $pending, false );
		return self::request_code();
	}

	/**
	 * Step 2 (self-signed servers): the owner confirmed the fingerprint; the certificate is pinned and checked, then the code is requested.
	 *
	 * @return true|WP_Error
	 */
	public static function confirm_certificate() {
		$pending = self::pending();
		if ( empty( $pending['cert_pem'] ) ) {
			return new WP_Error( 'imgpress_flow', __( 'Start again: type the server address and your e-mail address.', 'imgpress' ) );
		}
		$ca = Imgpress_Certificate::write_pinned( $pending['cert_pem'] );
		if ( null === $ca ) {
			return new WP_Error( 'imgpress_write', __( 'The certificate could not be saved in the uploads folder. Make the uploads folder writable by the web server and try again.', 'imgpress' ) );
		}
		$probe = ( new Imgpress_Client( $pending['server'], $ca ) )->get_outside( '/health' );
		if ( Imgpress_Response::TLS === $probe->kind ) {
			$parts = wp_parse_url( $pending['server'] );
			$names = Imgpress_Certificate::names( $pending['cert_pem'] );
			return new WP_Error(
				'imgpress_names',
				sprintf(
					/* translators: 1: the host typed, 2: the names the certificate holds */
					__( 'The server\'s certificate does not hold the name you typed (%1$s), so no connection can be verified. It holds: %2$s. Connect with one of those names, or add this one to IMGPRESS_TLS_NAMES on the server, restart it, and start again.', 'imgpress' ),
					trim( $parts['host'], '[]' ),
					implode( ', ', $names )
				)
			);
		}
		if ( Imgpress_Response::UNREACHABLE === $probe->kind ) {
			return self::unreachable_error( $pending['server'] );
		}
		$pending['step'] = 'code';
		update_option( self::PENDING, $pending, false );
		return self::request_code();
	}

	/**
	 * Asks the server to e-mail a code (request-otp, site_url = this site's home URL).
	 *
	 * @return true|WP_Error
	 */
	public static function request_code() {
		$pending = self::pending();
		if ( empty( $pending['server'] ) ) {
			return new WP_Error( 'imgpress_flow', __( 'Start again: type the server address and your e-mail address.', 'imgpress' ) );
		}
		$client = new Imgpress_Client( $pending['server'], self::ca_file( $pending ) );
		$r      = $client->post_json(
			'/plugin/auth/request-otp',
			array(
				'email'    => $pending['email'],
				'site_url' => home_url(),
			)
		);
		if ( ! $r->ok() ) {
			return self::answer_error( $r, $pending );
		}
		$pending['step']       = 'code';
		$pending['code_sent']  = time();
		update_option( self::PENDING, $pending, false );
		return true;
	}

	/**
	 * Step 3: exchanges the code for the key pair, which is sealed and stored; the secret is never shown.
	 *
	 * @param string $code The six digits typed.
	 * @return true|WP_Error
	 */
	public static function verify_code( $code ) {
		$pending = self::pending();
		$code    = preg_replace( '/\s+/', '', (string) $code );
		if ( empty( $pending['server'] ) || 'code' !== $pending['step'] ) {
			return new WP_Error( 'imgpress_flow', __( 'Start again: type the server address and your e-mail address.', 'imgpress' ) );
		}
		if ( ! preg_match( '/^\d{6}$/', $code ) ) {
			return new WP_Error( 'imgpress_code', __( 'The code is the six digits of the e-mail.', 'imgpress' ) );
		}
		$client = new Imgpress_Client( $pending['server'], self::ca_file( $pending ) );
		$r      = $client->post_json(
			'/plugin/auth/verify-otp',
			array(
				'email'    => $pending['email'],
				'otp'      => $code,
				'site_url' => home_url(),
			)
		);
		if ( ! $r->ok() ) {
			return self::answer_error( $r, $pending );
		}
		$keys = $r->json();
		if ( empty( $keys['api_key'] ) || empty( $keys['secret_key'] ) ) {
			return new WP_Error( 'imgpress_answer', __( 'The server\'s answer held no key pair. Check that the address is an imgpress server.', 'imgpress' ) );
		}
		$vault = Imgpress_Vault::key();
		update_option(
			self::OPTION,
			array(
				'server'       => $pending['server'],
				'email'        => $pending['email'],
				'key_prefix'   => substr( $keys['api_key'], 0, 12 ),
				'api_key'      => Imgpress_Vault::seal( $keys['api_key'], $vault ),
				'secret'       => Imgpress_Vault::seal( $keys['secret_key'], $vault ),
				'cert_pem'     => $pending['cert_pem'],
				'fingerprint'  => empty( $pending['cert_pem'] ) ? '' : Imgpress_Certificate::fingerprint( $pending['cert_pem'] ),
				'connected_at' => time(),
			),
			false
		);
		delete_option( self::PENDING );
		self::clear_status();
		delete_transient( 'imgpress_account' );
		// The server's limit of conversions at once, before the first run.
		self::account( true );
		Imgpress_Queue::kick();
		return true;
	}

	/**
	 * Forgets the key pair (the server keeps it until an operator revokes it).
	 */
	public static function disconnect() {
		delete_option( self::OPTION );
		delete_option( self::PENDING );
		self::clear_status();
		delete_transient( 'imgpress_account' );
	}

	/**
	 * The pending connect flow.
	 *
	 * @return array
	 */
	public static function pending() {
		$p = get_option( self::PENDING, array() );
		return is_array( $p ) ? $p : array();
	}

	/**
	 * This key's figures from GET /plugin/account (cached five minutes).
	 *
	 * @param bool $fresh Skip the cache.
	 * @return array|WP_Error
	 */
	public static function account( $fresh = false ) {
		$cached = get_transient( 'imgpress_account' );
		if ( ! $fresh && is_array( $cached ) ) {
			return $cached;
		}
		$client = self::client();
		if ( null === $client ) {
			return new WP_Error( 'imgpress_not_connected', __( 'Not connected.', 'imgpress' ) );
		}
		$r = $client->get_signed( '/plugin/account' );
		if ( ! $r->ok() ) {
			self::note_failure( $r );
			return self::answer_error( $r, self::get() );
		}
		$data = $r->json();
		if ( isset( $data['max_in_progress'] ) ) {
			update_option( Imgpress_Queue::LIMIT, max( 1, (int) $data['max_in_progress'] ), false );
			update_option( Imgpress_Queue::LIMIT_MAX, max( 1, (int) $data['max_in_progress'] ), false );
		}
		set_transient( 'imgpress_account', $data, 5 * MINUTE_IN_SECONDS );
		return $data;
	}

	/**
	 * Records what a failed answer means for the connection (revoked key, certificate change, unreachable server).
	 *
	 * @param Imgpress_Response $r The answer.
	 */
	public static function note_failure( Imgpress_Response $r ) {
		$c = self::get();
		if ( Imgpress_Response::REVOKED === $r->kind ) {
			self::set_status( 'revoked', __( 'The imgpress server no longer accepts this site\'s key: it was revoked. Uploads still work, but new images are not optimized until you reconnect.', 'imgpress' ) );
		} elseif ( Imgpress_Response::TLS === $r->kind ) {
			self::set_status( 'certificate', __( 'The imgpress server now presents a certificate other than the one you confirmed, so nothing is sent to it. If the server made a new certificate, reconnect and confirm its fingerprint; if not, someone may be intercepting the connection.', 'imgpress' ) );
		} elseif ( Imgpress_Response::UNREACHABLE === $r->kind && ! empty( $c['server'] ) ) {
			self::set_status( 'unreachable', self::unreachable_error( $c['server'] )->get_error_message() );
		}
	}

	/**
	 * Stores the connection's state for the admin notice.
	 *
	 * @param string $state   ok|revoked|certificate|unreachable|sealed.
	 * @param string $message A sentence for the owner.
	 */
	public static function set_status( $state, $message ) {
		update_option(
			self::STATUS,
			array(
				'state'   => $state,
				'message' => $message,
				'since'   => time(),
			),
			false
		);
	}

	/**
	 * Forgets the last problem (after a success).
	 */
	public static function clear_status() {
		if ( false !== get_option( self::STATUS, false ) ) {
			delete_option( self::STATUS );
		}
	}

	/**
	 * The last problem, or an empty array.
	 *
	 * @return array
	 */
	public static function status() {
		$s = get_option( self::STATUS, array() );
		return is_array( $s ) ? $s : array();
	}

	/**
	 * The sentence for an unreachable server.
	 *
	 * @param string $server Base URL.
	 * @return WP_Error
	 */
	private static function unreachable_error( $server ) {
		return new WP_Error(
			'imgpress_unreachable',
			sprintf(
				/* translators: %s: the server address */
				__( 'The imgpress server at %s did not answer. Check the address and port, that the server is running, and that this web server can reach it (a firewall, or an address only reachable from your home network).', 'imgpress' ),
				preg_replace( '#/v1$#', '', $server )
			)
		);
	}

	/**
	 * A plain sentence for a refused credential request.
	 *
	 * @param Imgpress_Response $r       The answer.
	 * @param array             $pending The flow's state (for the address).
	 * @return WP_Error
	 */
	private static function answer_error( Imgpress_Response $r, array $pending ) {
		$server = isset( $pending['server'] ) ? $pending['server'] : '';
		switch ( $r->kind === Imgpress_Response::UNREACHABLE || $r->kind === Imgpress_Response::TLS ? $r->kind : $r->code ) {
			case Imgpress_Response::UNREACHABLE:
				return self::unreachable_error( $server );
			case Imgpress_Response::TLS:
				return new WP_Error( 'imgpress_tls', __( 'The connection to the server could not be verified: it presented a certificate other than the one you confirmed. Start again and compare the fingerprint with the one the server printed.', 'imgpress' ) );
			case 'EMAIL_NOT_ALLOWED':
				return new WP_Error(
					'imgpress_not_allowed',
					sprintf(
						/* translators: %s: e-mail address */
						__( 'The server does not give keys to %s: the address is not on its allowlist (IMGPRESS_ALLOWED_EMAILS). Use an address it allows, or ask its operator to add this one.', 'imgpress' ),
						isset( $pending['email'] ) ? $pending['email'] : ''
					)
				);
			case 'MAIL_DELIVERY_FAILED':
				return new WP_Error( 'imgpress_mail', __( 'The server could not send the e-mail with the code: its mail server refused the message or did not answer. Ask the server\'s operator to check its mail settings (IMGPRESS_SMTP_URL), then ask for a code again.', 'imgpress' ) );
			case 'RATE_LIMITED':
				return new WP_Error(
					'imgpress_rate',
					sprintf(
						/* translators: %d: seconds */
						__( 'Too many codes were asked for this address or from this site. Try again in %d seconds.', 'imgpress' ),
						null === $r->retry_after ? 60 : $r->retry_after
					)
				);
			case 'INVALID_OTP':
				return new WP_Error( 'imgpress_otp', __( 'That code is wrong, expired or already used. Type it again, or ask for a new code.', 'imgpress' ) );
			case 'TOO_MANY_ATTEMPTS':
				return new WP_Error( 'imgpress_attempts', __( 'Too many wrong codes: this one no longer works. Ask for a new code.', 'imgpress' ) );
			case 'INVALID_EMAIL':
				return new WP_Error( 'imgpress_email', __( 'The server does not accept this e-mail address. Use an ordinary address such as owner@example.com.', 'imgpress' ) );
			case 'INVALID_API_KEY':
				return new WP_Error( 'imgpress_revoked', __( 'The server no longer accepts this site\'s key. Reconnect to get a new one.', 'imgpress' ) );
		}
		return new WP_Error(
			'imgpress_server',
			sprintf(
				/* translators: 1: HTTP status, 2: the server's own explanation */
				__( 'The server refused the request (%1$d): %2$s', 'imgpress' ),
				$r->status,
				'' !== $r->message ? $r->message : __( 'no explanation given.', 'imgpress' )
			)
		);
	}
}
