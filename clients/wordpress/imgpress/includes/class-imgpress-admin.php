<?php
/**
 * The admin screens: Settings → imgpress (connect, status, settings, rewrite rules), Media → imgpress
 * (bulk), and the notices a problem with the connection raises.
 *
 * @package imgpress
 */

defined( 'ABSPATH' ) || exit;

/**
 * Every action checks manage_options and a nonce; all output is escaped where it is printed.
 */
class Imgpress_Admin {

	const PAGE      = 'imgpress';
	const BULK_PAGE = 'imgpress-bulk';

	/**
	 * Hooks.
	 */
	public static function register() {
		add_action( 'admin_menu', array( __CLASS__, 'menus' ) );
		add_action( 'admin_init', array( __CLASS__, 'settings' ) );
		add_action( 'admin_notices', array( __CLASS__, 'notices' ) );
		add_action( 'admin_enqueue_scripts', array( __CLASS__, 'assets' ) );
		foreach ( array( 'connect', 'confirm', 'reject', 'verify', 'resend', 'restart', 'disconnect' ) as $step ) {
			add_action( 'admin_post_imgpress_' . $step, array( __CLASS__, 'handle_' . $step ) );
		}
		add_filter( 'plugin_action_links_' . plugin_basename( IMGPRESS_FILE ), array( __CLASS__, 'action_links' ) );
	}

	/**
	 * A Settings link on the Plugins screen.
	 *
	 * @param array $links Links.
	 * @return array
	 */
	public static function action_links( $links ) {
		array_unshift( $links, '<a href="' . esc_url( self::url() ) . '">' . esc_html__( 'Settings', 'imgpress' ) . '</a>' );
		return $links;
	}

	/**
	 * The settings page's URL.
	 *
	 * @param array $args Extra query arguments.
	 * @return string
	 */
	public static function url( array $args = array() ) {
		return add_query_arg( array_merge( array( 'page' => self::PAGE ), $args ), admin_url( 'options-general.php' ) );
	}

	/**
	 * Settings → imgpress and Media → imgpress.
	 */
	public static function menus() {
		add_options_page( __( 'imgpress', 'imgpress' ), __( 'imgpress', 'imgpress' ), 'manage_options', self::PAGE, array( __CLASS__, 'render_settings' ) );
		add_media_page( __( 'imgpress bulk optimization', 'imgpress' ), __( 'imgpress', 'imgpress' ), 'manage_options', self::BULK_PAGE, array( __CLASS__, 'render_bulk' ) );
	}

	/**
	 * The Settings API registration of the owner's choices.
	 */
	public static function settings() {
		register_setting(
			'imgpress',
			Imgpress_Settings::OPTION,
			array(
				'type'              => 'array',
				'sanitize_callback' => array( 'Imgpress_Settings', 'sanitize' ),
				'default'           => Imgpress_Settings::defaults(),
			)
		);
		add_settings_section( 'imgpress_main', __( 'Optimization and delivery', 'imgpress' ), '__return_false', self::PAGE );
		add_settings_field( 'imgpress_formats', __( 'Formats', 'imgpress' ), array( __CLASS__, 'field_formats' ), self::PAGE, 'imgpress_main' );
		add_settings_field( 'imgpress_quality', __( 'Quality', 'imgpress' ), array( __CLASS__, 'field_quality' ), self::PAGE, 'imgpress_main' );
		add_settings_field( 'imgpress_delivery', __( 'Delivery', 'imgpress' ), array( __CLASS__, 'field_delivery' ), self::PAGE, 'imgpress_main' );
		add_settings_field( 'imgpress_uninstall', __( 'When the plugin is deleted', 'imgpress' ), array( __CLASS__, 'field_uninstall' ), self::PAGE, 'imgpress_main' );
	}

	/**
	 * Scripts and styles of the plugin's own pages only.
	 *
	 * @param string $hook The page's hook suffix.
	 */
	public static function assets( $hook ) {
		if ( false === strpos( $hook, self::PAGE ) ) {
			return;
		}
		wp_enqueue_style( 'imgpress-admin', plugins_url( 'assets/admin.css', IMGPRESS_FILE ), array(), IMGPRESS_VERSION );
		if ( false !== strpos( $hook, self::BULK_PAGE ) ) {
			wp_enqueue_script( 'imgpress-bulk', plugins_url( 'assets/bulk.js', IMGPRESS_FILE ), array(), IMGPRESS_VERSION, true );
			wp_localize_script(
				'imgpress-bulk',
				'imgpressBulk',
				array(
					'root'    => esc_url_raw( rest_url( Imgpress_Bulk::NS ) ),
					'nonce'   => wp_create_nonce( 'wp_rest' ),
					'status'  => Imgpress_Bulk::status(),
					'strings' => array(
						'of'        => __( '%1$s of %2$s attachments', 'imgpress' ),
						'saved'     => __( '%s saved', 'imgpress' ),
						'errors'    => __( '%s with errors', 'imgpress' ),
						'eta'       => __( 'about %s left', 'imgpress' ),
						'done'      => __( 'Done: every attachment has its copies.', 'imgpress' ),
						'idle'      => __( 'Nothing is running. Start to optimize every image not done yet.', 'imgpress' ),
						'failed'    => __( 'The page could not reach WordPress; the run goes on in the background. Reload the page to see it.', 'imgpress' ),
						'minutes'   => __( '%d min', 'imgpress' ),
						'seconds'   => __( '%d s', 'imgpress' ),
						'running'   => __( 'Optimizing…', 'imgpress' ),
						'next'      => __( '(next try in %s)', 'imgpress' ),
					),
				)
			);
		}
	}

	/**
	 * Stops a request without the capability or a valid nonce.
	 *
	 * @param string $action Nonce action.
	 */
	private static function guard( $action ) {
		if ( ! current_user_can( 'manage_options' ) ) {
			wp_die( esc_html__( 'You are not allowed to change imgpress settings.', 'imgpress' ), 403 );
		}
		check_admin_referer( $action );
	}

	/**
	 * Back to the settings page with a message for this user.
	 *
	 * @param true|WP_Error $outcome  What happened.
	 * @param string        $success  Message on success ('' for none).
	 */
	private static function back( $outcome, $success = '' ) {
		if ( is_wp_error( $outcome ) ) {
			set_transient( 'imgpress_flash_' . get_current_user_id(), array( 'error', $outcome->get_error_message() ), 120 );
		} elseif ( '' !== $success ) {
			set_transient( 'imgpress_flash_' . get_current_user_id(), array( 'success', $success ), 120 );
		}
		wp_safe_redirect( self::url() );
		exit;
	}

	/**
	 * Step 1: address and e-mail.
	 */
	public static function handle_connect() {
		self::guard( 'imgpress_connect' );
		$server = isset( $_POST['server'] ) ? sanitize_text_field( wp_unslash( $_POST['server'] ) ) : '';
		$email  = isset( $_POST['email'] ) ? sanitize_email( wp_unslash( $_POST['email'] ) ) : '';
		self::back( Imgpress_Connection::start( $server, $email ) );
	}

	/**
	 * Step 2: the owner says the fingerprint matches.
	 */
	public static function handle_confirm() {
		self::guard( 'imgpress_confirm' );
		if ( empty( $_POST['matches'] ) ) {
			self::back( new WP_Error( 'imgpress_unticked', __( 'Tick the box once you have compared the fingerprint with the one your server printed.', 'imgpress' ) ) );
		}
		self::back( Imgpress_Connection::confirm_certificate() );
	}

	/**
	 * Step 2: the fingerprint does not match; nothing was sent to that server.
	 */
	public static function handle_reject() {
		self::guard( 'imgpress_confirm' );
		delete_option( Imgpress_Connection::PENDING );
		self::back( new WP_Error( 'imgpress_mismatch', __( 'The certificate was not trusted and nothing was sent to that server. A fingerprint that differs from the one your server printed means the address reaches another machine, or someone is intercepting the connection: check the address (and that the server did not make a new certificate), then start again.', 'imgpress' ) ) );
	}

	/**
	 * Step 3: the code.
	 */
	public static function handle_verify() {
		self::guard( 'imgpress_verify' );
		$code = isset( $_POST['code'] ) ? sanitize_text_field( wp_unslash( $_POST['code'] ) ) : '';
		self::back( Imgpress_Connection::verify_code( $code ), __( 'Connected. New uploads are optimized from now on; use Media → imgpress for the images already there.', 'imgpress' ) );
	}

	/**
	 * Step 3: a new code.
	 */
	public static function handle_resend() {
		self::guard( 'imgpress_verify' );
		self::back( Imgpress_Connection::request_code(), __( 'A new code was sent.', 'imgpress' ) );
	}

	/**
	 * Back to step 1.
	 */
	public static function handle_restart() {
		self::guard( 'imgpress_restart' );
		delete_option( Imgpress_Connection::PENDING );
		self::back( true );
	}

	/**
	 * Forget the key pair.
	 */
	public static function handle_disconnect() {
		self::guard( 'imgpress_disconnect' );
		Imgpress_Connection::disconnect();
		self::back( true, __( 'Disconnected. The key stays valid on the server until its operator revokes it.', 'imgpress' ) );
	}

	/**
	 * A connection problem, on every admin page for those who can fix it.
	 */
	public static function notices() {
		if ( ! current_user_can( 'manage_options' ) ) {
			return;
		}
		$flash = get_transient( 'imgpress_flash_' . get_current_user_id() );
		if ( is_array( $flash ) ) {
			delete_transient( 'imgpress_flash_' . get_current_user_id() );
			printf( '<div class="notice notice-%1$s is-dismissible imgpress-flash"><p>%2$s</p></div>', esc_attr( $flash[0] ), esc_html( $flash[1] ) );
		}
		$status = Imgpress_Connection::status();
		if ( empty( $status['state'] ) ) {
			return;
		}
		$reconnect = in_array( $status['state'], array( 'revoked', 'certificate', 'sealed' ), true );
		printf(
			'<div class="notice notice-%1$s imgpress-notice imgpress-notice-%2$s"><p><strong>%3$s</strong> %4$s</p>%5$s</div>',
			esc_attr( $reconnect ? 'error' : 'warning' ),
			esc_attr( $status['state'] ),
			esc_html__( 'imgpress:', 'imgpress' ),
			esc_html( $status['message'] ),
			$reconnect ? '<p><a class="button button-primary imgpress-reconnect" href="' . esc_url( self::url( array( 'reconnect' => 1 ) ) ) . '">' . esc_html__( 'Reconnect', 'imgpress' ) . '</a></p>' : '' // phpcs:ignore WordPress.Security.EscapeOutput.OutputNotEscaped -- escaped in place.
		);
	}

	/**
	 * Settings → imgpress.
	 */
	public static function render_settings() {
		if ( ! current_user_can( 'manage_options' ) ) {
			return;
		}
		$connected = Imgpress_Connection::is_connected();
		$reconnect = isset( $_GET['reconnect'] ); // phpcs:ignore WordPress.Security.NonceVerification.Recommended -- only shows the form.
		echo '<div class="wrap imgpress-settings"><h1>' . esc_html__( 'imgpress', 'imgpress' ) . '</h1>';
		echo '<p class="imgpress-lead">' . esc_html__( 'Makes WebP and AVIF copies of your JPEG and PNG images on your own imgpress server, and serves them to browsers that take them.', 'imgpress' ) . '</p>';
		if ( $connected ) {
			self::render_status_box();
		}
		if ( ! $connected || $reconnect || ! empty( Imgpress_Connection::pending() ) ) {
			self::render_connect();
		}
		echo '<form method="post" action="' . esc_url( admin_url( 'options.php' ) ) . '" class="imgpress-card">';
		settings_fields( 'imgpress' );
		do_settings_sections( self::PAGE );
		submit_button();
		echo '</form>';
		self::render_rules();
		echo '</div>';
	}

	/**
	 * The status box: server, key prefix, server version, this month's figures.
	 */
	private static function render_status_box() {
		$c       = Imgpress_Connection::get();
		$account = Imgpress_Connection::account();
		echo '<div class="imgpress-card imgpress-status"><h2>' . esc_html__( 'Connection', 'imgpress' ) . '</h2><table class="widefat striped imgpress-status-table"><tbody>';
		$rows = array(
			__( 'Server', 'imgpress' )       => preg_replace( '#/v1$#', '', $c['server'] ),
			__( 'Key', 'imgpress' )          => $c['key_prefix'] . '…',
			__( 'E-mail', 'imgpress' )       => $c['email'],
			__( 'Certificate', 'imgpress' )  => empty( $c['fingerprint'] ) ? __( 'trusted by a public authority', 'imgpress' ) : sprintf( /* translators: %s: SHA-256 fingerprint */ __( 'pinned, SHA-256 %s', 'imgpress' ), $c['fingerprint'] ),
		);
		if ( is_array( $account ) ) {
			$rows[ __( 'Server version', 'imgpress' ) ] = isset( $account['server_version'] ) ? $account['server_version'] : '';
			$rows[ __( 'This month', 'imgpress' ) ]     = sprintf(
				/* translators: 1: number of conversions, 2: bytes saved, e.g. "3 MB" */
				_n( '%1$s conversion, %2$s saved', '%1$s conversions, %2$s saved', (int) $account['month']['conversions'], 'imgpress' ),
				number_format_i18n( (int) $account['month']['conversions'] ),
				self::bytes( (int) $account['month']['bytes_saved'] )
			);
		} else {
			$rows[ __( 'Server', 'imgpress' ) ] .= ' — ' . $account->get_error_message();
		}
		foreach ( $rows as $label => $value ) {
			echo '<tr><th scope="row">' . esc_html( $label ) . '</th><td>' . esc_html( $value ) . '</td></tr>';
		}
		echo '</tbody></table><div class="imgpress-actions">';
		echo '<a class="button" href="' . esc_url( self::url( array( 'reconnect' => 1 ) ) ) . '">' . esc_html__( 'Reconnect', 'imgpress' ) . '</a> ';
		self::post_button( 'disconnect', 'imgpress_disconnect', __( 'Disconnect', 'imgpress' ), 'button-link-delete' );
		echo '</div></div>';
	}

	/**
	 * Bytes for people: "0 B", "1.2 MB".
	 *
	 * @param int $bytes Bytes (negative shown as 0).
	 * @return string
	 */
	public static function bytes( $bytes ) {
		return $bytes > 0 ? size_format( $bytes, 1 ) : size_format( 0 );
	}

	/**
	 * A one-button form posting to admin-post.php.
	 *
	 * @param string $action Handler suffix.
	 * @param string $nonce  Nonce action.
	 * @param string $label  Button text.
	 * @param string $class  Button class.
	 */
	private static function post_button( $action, $nonce, $label, $class = 'button' ) {
		echo '<form method="post" action="' . esc_url( admin_url( 'admin-post.php' ) ) . '" class="imgpress-inline">';
		echo '<input type="hidden" name="action" value="' . esc_attr( 'imgpress_' . $action ) . '">';
		wp_nonce_field( $nonce );
		echo '<button type="submit" class="button ' . esc_attr( $class ) . '">' . esc_html( $label ) . '</button></form>';
	}

	/**
	 * The connect flow's current step.
	 */
	private static function render_connect() {
		$pending = Imgpress_Connection::pending();
		$step    = isset( $pending['step'] ) ? $pending['step'] : '';
		$c       = Imgpress_Connection::get();
		echo '<div class="imgpress-card imgpress-connect"><h2>' . esc_html__( 'Connect to your imgpress server', 'imgpress' ) . '</h2>';
		if ( 'confirm' === $step ) {
			echo '<p>' . esc_html__( 'This server\'s certificate is not vouched for by a public authority, which is normal for the certificate an imgpress server makes for itself. Before anything is sent to it, compare its fingerprint with the one your server printed when it started (certSha256 on its "imgpress listening" line, or on its dashboard):', 'imgpress' ) . '</p>';
			echo '<p class="imgpress-fingerprint"><code>' . esc_html( $pending['fingerprint'] ) . '</code></p>';
			echo '<form method="post" action="' . esc_url( admin_url( 'admin-post.php' ) ) . '">';
			wp_nonce_field( 'imgpress_confirm' );
			echo '<p><label><input type="checkbox" name="matches" value="1"> ' . esc_html__( 'It is the same fingerprint, character for character.', 'imgpress' ) . '</label></p><p>';
			echo '<button type="submit" class="button button-primary" name="action" value="imgpress_confirm">' . esc_html__( 'Trust this certificate and send me a code', 'imgpress' ) . '</button> ';
			echo '<button type="submit" class="button" name="action" value="imgpress_reject">' . esc_html__( 'It does not match', 'imgpress' ) . '</button>';
			echo '</p></form>';
		} elseif ( 'code' === $step ) {
			$sent = sprintf(
				/* translators: %s: e-mail address */
				__( 'A 6-digit code was sent to %s. It is valid for 15 minutes.', 'imgpress' ),
				$pending['email']
			);
			echo '<p>' . esc_html( $sent ) . '</p>';
			echo '<form method="post" action="' . esc_url( admin_url( 'admin-post.php' ) ) . '">';
			wp_nonce_field( 'imgpress_verify' );
			echo '<p><label for="imgpress-code">' . esc_html__( 'Code', 'imgpress' ) . '</label><br><input id="imgpress-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" maxlength="7" class="regular-text imgpress-code" required></p><p>';
			echo '<button type="submit" class="button button-primary" name="action" value="imgpress_verify">' . esc_html__( 'Connect', 'imgpress' ) . '</button> ';
			echo '<button type="submit" class="button" name="action" value="imgpress_resend" formnovalidate>' . esc_html__( 'Send a new code', 'imgpress' ) . '</button>';
			echo '</p></form>';
		}
		if ( '' !== $step ) {
			self::post_button( 'restart', 'imgpress_restart', __( 'Start again', 'imgpress' ), 'button-link' );
			echo '</div>';
			return;
		}
		$server = isset( $c['server'] ) ? preg_replace( '#/v1$#', '', $c['server'] ) : '';
		$email  = isset( $c['email'] ) ? $c['email'] : get_option( 'admin_email' );
		echo '<p>' . esc_html__( 'Type your server\'s address and an e-mail address: the server e-mails a code, you type it here, and this site gets its own key. No key is ever copied by hand.', 'imgpress' ) . '</p>';
		echo '<form method="post" action="' . esc_url( admin_url( 'admin-post.php' ) ) . '"><input type="hidden" name="action" value="imgpress_connect">';
		wp_nonce_field( 'imgpress_connect' );
		echo '<table class="form-table" role="presentation"><tbody>';
		echo '<tr><th scope="row"><label for="imgpress-server">' . esc_html__( 'Server address', 'imgpress' ) . '</label></th><td><input id="imgpress-server" name="server" type="text" class="regular-text" placeholder="https://nas.local:8443" value="' . esc_attr( $server ) . '" required><p class="description">' . esc_html__( 'As the server printed it, e.g. https://nas.local:8443 (port 8443 is assumed when you type none).', 'imgpress' ) . '</p></td></tr>';
		echo '<tr><th scope="row"><label for="imgpress-email">' . esc_html__( 'E-mail address', 'imgpress' ) . '</label></th><td><input id="imgpress-email" name="email" type="email" class="regular-text" value="' . esc_attr( $email ) . '" required></td></tr>';
		echo '</tbody></table>';
		submit_button( __( 'Send me a code', 'imgpress' ), 'primary', 'submit', false );
		echo '</form></div>';
	}

	/**
	 * The formats field.
	 */
	public static function field_formats() {
		$s = Imgpress_Settings::get();
		foreach ( array( 'avif' => __( 'AVIF (smallest; Chrome, Firefox, Safari 16+)', 'imgpress' ), 'webp' => __( 'WebP (every current browser)', 'imgpress' ) ) as $format => $label ) {
			printf(
				'<label><input type="checkbox" name="%1$s[formats][]" value="%2$s" %3$s> %4$s</label><br>',
				esc_attr( Imgpress_Settings::OPTION ),
				esc_attr( $format ),
				checked( in_array( $format, $s['formats'], true ), true, false ),
				esc_html( $label )
			);
		}
	}

	/**
	 * The quality field.
	 */
	public static function field_quality() {
		$s = Imgpress_Settings::get();
		foreach ( array( 'lossy' => __( 'Lossy: the smallest file that looks right (photos)', 'imgpress' ), 'lossless' => __( 'Lossless: exact pixels (graphics; photos grow)', 'imgpress' ) ) as $value => $label ) {
			printf( '<label><input type="radio" name="%1$s[quality]" value="%2$s" %3$s> %4$s</label><br>', esc_attr( Imgpress_Settings::OPTION ), esc_attr( $value ), checked( $s['quality'], $value, false ), esc_html( $label ) );
		}
	}

	/**
	 * The delivery field.
	 */
	public static function field_delivery() {
		$s = Imgpress_Settings::get();
		$choices = array(
			'picture' => __( '<picture> markup: AVIF and WebP sources around each image (works on any host)', 'imgpress' ),
			'rewrite' => __( 'Rewrite rules on the web server (below): same URLs, the copy is served when the browser accepts it', 'imgpress' ),
			'off'     => __( 'Do not serve the copies', 'imgpress' ),
		);
		foreach ( $choices as $value => $label ) {
			printf( '<label><input type="radio" name="%1$s[delivery]" value="%2$s" %3$s> %4$s</label><br>', esc_attr( Imgpress_Settings::OPTION ), esc_attr( $value ), checked( $s['delivery'], $value, false ), esc_html( $label ) );
		}
	}

	/**
	 * What uninstalling does with the copies.
	 */
	public static function field_uninstall() {
		$s = Imgpress_Settings::get();
		foreach ( array( 'keep' => __( 'Keep the WebP and AVIF copies (rewrite rules go on serving them)', 'imgpress' ), 'delete' => __( 'Delete the copies too', 'imgpress' ) ) as $value => $label ) {
			printf( '<label><input type="radio" name="%1$s[on_uninstall]" value="%2$s" %3$s> %4$s</label><br>', esc_attr( Imgpress_Settings::OPTION ), esc_attr( $value ), checked( $s['on_uninstall'], $value, false ), esc_html( $label ) );
		}
		echo '<p class="description">' . esc_html__( 'Settings, keys and the records in the media library are always removed.', 'imgpress' ) . '</p>';
	}

	/**
	 * The rewrite rules and the system-cron line.
	 */
	private static function render_rules() {
		echo '<div class="imgpress-card imgpress-rules"><h2>' . esc_html__( 'Serving copies with rewrite rules', 'imgpress' ) . '</h2>';
		echo '<p>' . esc_html__( 'Instead of <picture> markup, the web server can answer an image URL with its copy when the browser says it accepts AVIF or WebP (and tell caches so with Vary: Accept).', 'imgpress' ) . '</p>';
		echo '<h3>' . esc_html__( 'Apache', 'imgpress' ) . '</h3><pre class="imgpress-code-block">' . esc_html( Imgpress_Delivery::apache_rules() ) . '</pre>';
		echo '<h3>' . esc_html__( 'nginx', 'imgpress' ) . '</h3><pre class="imgpress-code-block">' . esc_html( Imgpress_Delivery::nginx_rules() ) . '</pre>';
		echo '<h2>' . esc_html__( 'With WP-Cron disabled', 'imgpress' ) . '</h2>';
		echo '<p>' . esc_html__( 'The queue runs through WP-Cron. If your site sets DISABLE_WP_CRON, have the system call WordPress\'s cron every minute:', 'imgpress' ) . '</p>';
		echo '<pre class="imgpress-code-block">' . esc_html( '* * * * * curl -fsS ' . site_url( 'wp-cron.php?doing_wp_cron' ) . ' >/dev/null' ) . '</pre></div>';
	}

	/**
	 * Media → imgpress.
	 */
	public static function render_bulk() {
		if ( ! current_user_can( 'manage_options' ) ) {
			return;
		}
		$s = Imgpress_Bulk::status();
		echo '<div class="wrap imgpress-bulk"><h1>' . esc_html__( 'Optimize the media library', 'imgpress' ) . '</h1>';
		if ( ! Imgpress_Connection::is_connected() ) {
			echo '<div class="notice notice-warning inline"><p>' . esc_html__( 'Connect to your imgpress server first.', 'imgpress' ) . ' <a href="' . esc_url( self::url() ) . '">' . esc_html__( 'Settings → imgpress', 'imgpress' ) . '</a></p></div>';
		}
		echo '<p>' . esc_html__( 'Makes the copies of every JPEG and PNG image not done yet, as many at once as your server allows. You can close this page: the run goes on in the background, and starting it again skips what is done.', 'imgpress' ) . '</p>';
		echo '<div class="imgpress-card">';
		echo '<div class="imgpress-bar" role="progressbar" aria-valuemin="0" aria-valuemax="100" aria-valuenow="' . esc_attr( $s['percent'] ) . '"><div class="imgpress-bar-fill" style="width:' . esc_attr( $s['percent'] ) . '%"></div></div>';
		echo '<p class="imgpress-figures" id="imgpress-count"></p>';
		echo '<p id="imgpress-message" class="imgpress-message" aria-live="polite"></p>';
		echo '<p><button type="button" class="button button-primary" id="imgpress-start">' . esc_html__( 'Start', 'imgpress' ) . '</button> ';
		echo '<button type="button" class="button" id="imgpress-pause">' . esc_html__( 'Pause', 'imgpress' ) . '</button> ';
		echo '<button type="button" class="button" id="imgpress-resume">' . esc_html__( 'Resume', 'imgpress' ) . '</button></p>';
		echo '</div></div>';
	}
}
