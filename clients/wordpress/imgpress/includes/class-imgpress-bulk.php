<?php
/**
 * Bulk optimization of the existing media library: it enqueues every JPEG/PNG attachment not yet
 * done under the current settings; the queue does the work (in the page's requests while it is
 * open, through WP-Cron after it is closed). Progress is read from the queue itself.
 *
 * @package imgpress
 */

defined( 'ABSPATH' ) || exit;

/**
 * The bulk run's state (`imgpress_bulk`) and its REST routes.
 */
class Imgpress_Bulk {

	const OPTION = 'imgpress_bulk';
	const NS     = 'imgpress/v1';

	/**
	 * Registers the REST routes; each needs manage_options (and the REST nonce, which cookie authentication requires).
	 */
	public static function register() {
		add_action( 'rest_api_init', array( __CLASS__, 'routes' ) );
	}

	/**
	 * The routes: GET /status, POST /bulk (start, pause, resume), POST /run (work for a few seconds, then the status).
	 */
	public static function routes() {
		$admin = static function () {
			return current_user_can( 'manage_options' );
		};
		register_rest_route(
			self::NS,
			'/status',
			array(
				'methods'             => 'GET',
				'callback'            => array( __CLASS__, 'rest_status' ),
				'permission_callback' => $admin,
			)
		);
		register_rest_route(
			self::NS,
			'/bulk',
			array(
				'methods'             => 'POST',
				'callback'            => array( __CLASS__, 'rest_bulk' ),
				'permission_callback' => $admin,
				'args'                => array(
					'action' => array(
						'required' => true,
						'type'     => 'string',
						'enum'     => array( 'start', 'pause', 'resume' ),
					),
				),
			)
		);
		register_rest_route(
			self::NS,
			'/run',
			array(
				'methods'             => 'POST',
				'callback'            => array( __CLASS__, 'rest_run' ),
				'permission_callback' => $admin,
			)
		);
	}

	/**
	 * GET /status.
	 *
	 * @return WP_REST_Response
	 */
	public static function rest_status() {
		return rest_ensure_response( self::status() );
	}

	/**
	 * POST /bulk.
	 *
	 * @param WP_REST_Request $request The request.
	 * @return WP_REST_Response
	 */
	public static function rest_bulk( $request ) {
		$action = $request->get_param( 'action' );
		if ( 'start' === $action ) {
			self::start();
		} elseif ( 'pause' === $action ) {
			update_option( Imgpress_Queue::PAUSED, 1, false );
		} else {
			delete_option( Imgpress_Queue::PAUSED );
			Imgpress_Queue::kick();
		}
		return rest_ensure_response( self::status() );
	}

	/**
	 * POST /run: the open bulk page lends its requests to the queue (a few seconds each, so its bar moves), then reports.
	 *
	 * @return WP_REST_Response
	 */
	public static function rest_run() {
		Imgpress_Queue::run( 4 );
		return rest_ensure_response( self::status() );
	}

	/**
	 * Starts (or restarts) a run: everything not done under the current settings joins the queue.
	 *
	 * @return int Attachments queued by this call.
	 */
	public static function start() {
		global $wpdb;
		$now   = time();
		$mimes = "'" . implode( "','", array_map( 'esc_sql', Imgpress_Queue::MIMES ) ) . "'";
		// One statement rather than one update per attachment: a library of thousands starts at once.
		$ids = $wpdb->get_col( // phpcs:ignore WordPress.DB.DirectDatabaseQuery
			$wpdb->prepare(
				"SELECT p.ID FROM {$wpdb->posts} p WHERE p.post_type = 'attachment' AND p.post_mime_type IN ($mimes)" // phpcs:ignore WordPress.DB.PreparedSQL.InterpolatedNotPrepared
				. " AND NOT EXISTS (SELECT 1 FROM {$wpdb->postmeta} q WHERE q.post_id = p.ID AND q.meta_key = %s)"
				. " AND NOT EXISTS (SELECT 1 FROM {$wpdb->postmeta} d WHERE d.post_id = p.ID AND d.meta_key = %s AND d.meta_value = %s AND NOT EXISTS (SELECT 1 FROM {$wpdb->postmeta} e WHERE e.post_id = p.ID AND e.meta_key = %s))",
				Imgpress_Queue::META_QUEUE,
				Imgpress_Queue::META_DONE,
				Imgpress_Settings::signature(),
				Imgpress_Queue::META_ERROR
			)
		);
		foreach ( array_chunk( array_map( 'intval', $ids ), 500 ) as $chunk ) {
			$values = array();
			foreach ( $chunk as $id ) {
				$values[] = $wpdb->prepare( '(%d, %s, %s)', $id, Imgpress_Queue::META_QUEUE, (string) $now );
			}
			$wpdb->query( "INSERT INTO {$wpdb->postmeta} (post_id, meta_key, meta_value) VALUES " . implode( ',', $values ) ); // phpcs:ignore WordPress.DB.DirectDatabaseQuery, WordPress.DB.PreparedSQL.NotPrepared
			$in = implode( ',', $chunk );
			$wpdb->query( $wpdb->prepare( "DELETE FROM {$wpdb->postmeta} WHERE meta_key IN (%s, %s) AND post_id IN ($in)", Imgpress_Queue::META_ERROR, Imgpress_Queue::META_ATTEMPTS ) ); // phpcs:ignore WordPress.DB.DirectDatabaseQuery, WordPress.DB.PreparedSQL.InterpolatedNotPrepared
			foreach ( $chunk as $id ) {
				wp_cache_delete( $id, 'post_meta' );
			}
		}
		$queued = self::count_meta( Imgpress_Queue::META_QUEUE );
		update_option(
			self::OPTION,
			array(
				'total'      => $queued,
				'started'    => $now,
				'saved_at_0' => self::sum_saved(),
				'errors_0'   => self::count_meta( Imgpress_Queue::META_ERROR ),
			),
			false
		);
		delete_option( Imgpress_Queue::PAUSED );
		delete_option( Imgpress_Queue::BACKOFF );
		Imgpress_Queue::kick();
		return count( $ids );
	}

	/**
	 * Rows of one meta key.
	 *
	 * @param string $key Meta key.
	 * @return int
	 */
	private static function count_meta( $key ) {
		global $wpdb;
		return (int) $wpdb->get_var( $wpdb->prepare( "SELECT COUNT(*) FROM {$wpdb->postmeta} WHERE meta_key = %s", $key ) ); // phpcs:ignore WordPress.DB.DirectDatabaseQuery
	}

	/**
	 * Bytes saved over the whole library.
	 *
	 * @return int
	 */
	private static function sum_saved() {
		global $wpdb;
		return (int) $wpdb->get_var( $wpdb->prepare( "SELECT COALESCE(SUM(CAST(meta_value AS SIGNED)), 0) FROM {$wpdb->postmeta} WHERE meta_key = %s", Imgpress_Queue::META_SAVED ) ); // phpcs:ignore WordPress.DB.DirectDatabaseQuery
	}

	/**
	 * What the bulk page shows: done / total, bytes saved, errors, an estimate of the time left, and why the queue waits.
	 *
	 * @return array
	 */
	public static function status() {
		$bulk      = get_option( self::OPTION, array() );
		$remaining = self::count_meta( Imgpress_Queue::META_QUEUE );
		$total     = is_array( $bulk ) && isset( $bulk['total'] ) ? max( (int) $bulk['total'], $remaining ) : $remaining;
		$done      = max( 0, $total - $remaining );
		$elapsed   = is_array( $bulk ) && isset( $bulk['started'] ) ? max( 1, time() - (int) $bulk['started'] ) : 0;
		$eta       = ( $done > 0 && $remaining > 0 && $elapsed > 0 ) ? (int) ceil( $remaining * $elapsed / $done ) : null;
		$blocked   = Imgpress_Queue::blocked();
		$backoff   = get_option( Imgpress_Queue::BACKOFF, array() );
		$status    = Imgpress_Connection::status();
		return array(
			'running'     => is_array( $bulk ) && isset( $bulk['started'] ),
			'total'       => $total,
			'done'        => $done,
			'remaining'   => $remaining,
			'percent'     => $total > 0 ? (int) floor( 100 * $done / $total ) : ( is_array( $bulk ) && isset( $bulk['started'] ) ? 100 : 0 ),
			'saved'       => self::sum_saved(),
			'errors'      => self::count_meta( Imgpress_Queue::META_ERROR ),
			'eta'         => $eta,
			'paused'      => (bool) get_option( Imgpress_Queue::PAUSED ),
			'blocked'     => $blocked,
			'waiting_for' => 'backoff' === $blocked && is_array( $backoff ) ? max( 0, (int) $backoff['until'] - time() ) : 0,
			'message'     => self::blocked_message( $blocked, $status ),
		);
	}

	/**
	 * A sentence for why the queue is not moving.
	 *
	 * @param string $blocked From Imgpress_Queue::blocked().
	 * @param array  $status  The connection's status.
	 * @return string
	 */
	private static function blocked_message( $blocked, array $status ) {
		switch ( $blocked ) {
			case 'paused':
				return __( 'Paused. Resume to continue.', 'imgpress' );
			case 'not_connected':
				return __( 'Not connected to an imgpress server: connect under Settings → imgpress.', 'imgpress' );
			case 'backoff':
				$backoff = get_option( Imgpress_Queue::BACKOFF, array() );
				if ( is_array( $backoff ) && isset( $backoff['kind'] ) && Imgpress_Response::UNREACHABLE === $backoff['kind'] ) {
					return __( 'The imgpress server does not answer. Waiting for it; the run continues by itself when it is back.', 'imgpress' );
				}
				return __( 'The imgpress server is busy. Waiting as it asked; the run continues by itself.', 'imgpress' );
			case '':
				return '';
		}
		return isset( $status['message'] ) ? $status['message'] : '';
	}
}
