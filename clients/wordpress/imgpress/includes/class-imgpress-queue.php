<?php
/**
 * The background queue: every JPEG/PNG attachment waiting for its copies is a `_imgpress_queue`
 * post meta row holding the time of its next attempt. An upload only adds that row (it never waits
 * for the server); WP-Cron, a system cron calling wp-cron.php, or the bulk page runs the queue.
 *
 * @package imgpress
 */

defined( 'ABSPATH' ) || exit;

/**
 * Enqueues, runs and records conversions.
 */
class Imgpress_Queue {

	const META_QUEUE    = '_imgpress_queue';
	const META_ATTEMPTS = '_imgpress_attempts';
	const META_ERROR    = '_imgpress_error';
	const META_RESULT   = '_imgpress';
	const META_SAVED    = '_imgpress_saved';
	const META_DONE     = '_imgpress_done';
	const HOOK          = 'imgpress_run_queue';
	const LOCK          = 'imgpress_lock';
	const PAUSED        = 'imgpress_paused';
	const BACKOFF       = 'imgpress_backoff';
	const LIMIT         = 'imgpress_limit';
	const LIMIT_MAX     = 'imgpress_limit_max';
	/** Attempts of one attachment against server-side failures before it is given up. */
	const MAX_ATTEMPTS = 6;
	/** Conversions at once until the server has said its limit (docs/api.md: 8 on a 2-core server, at least half the places). */
	const DEFAULT_LIMIT = 4;
	/** The mime types converted. */
	const MIMES = array( 'image/jpeg', 'image/png' );

	/**
	 * Hooks the queue into WordPress.
	 */
	public static function register() {
		add_filter( 'wp_generate_attachment_metadata', array( __CLASS__, 'on_generated' ), 20, 2 );
		add_action( 'delete_attachment', array( __CLASS__, 'delete_copies' ) );
		add_filter( 'cron_schedules', array( __CLASS__, 'schedules' ) ); // phpcs:ignore WordPress.WP.CronInterval.ChangeDetected
		add_action( self::HOOK, array( __CLASS__, 'run_from_cron' ) );
	}

	/**
	 * A one-minute schedule for the recurring run.
	 *
	 * @param array $schedules Schedules.
	 * @return array
	 */
	public static function schedules( $schedules ) {
		$schedules['imgpress_minute'] = array(
			'interval' => 60,
			'display'  => __( 'Every minute (imgpress queue)', 'imgpress' ),
		);
		return $schedules;
	}

	/**
	 * New or regenerated sizes: old copies go, the attachment joins the queue. Never fails the upload.
	 *
	 * @param array $metadata      Attachment metadata.
	 * @param int   $attachment_id Attachment.
	 * @return array The metadata, unchanged.
	 */
	public static function on_generated( $metadata, $attachment_id ) {
		if ( in_array( get_post_mime_type( $attachment_id ), self::MIMES, true ) ) {
			self::delete_copies( $attachment_id );
			self::enqueue( $attachment_id );
		}
		return $metadata;
	}

	/**
	 * Puts an attachment in the queue, due now.
	 *
	 * @param int $attachment_id Attachment.
	 */
	public static function enqueue( $attachment_id ) {
		$result = get_post_meta( $attachment_id, self::META_RESULT, true );
		if ( is_array( $result ) && isset( $result['failed'] ) ) {
			// A new try for what was refused before (the server's limits may have changed).
			unset( $result['failed'] );
			update_post_meta( $attachment_id, self::META_RESULT, $result );
		}
		update_post_meta( $attachment_id, self::META_QUEUE, time() );
		delete_post_meta( $attachment_id, self::META_ATTEMPTS );
		delete_post_meta( $attachment_id, self::META_ERROR );
		delete_post_meta( $attachment_id, self::META_DONE );
		self::kick();
	}

	/**
	 * Makes sure a run comes soon: the recurring event exists, and one is due now.
	 */
	public static function kick() {
		if ( ! wp_next_scheduled( self::HOOK ) ) {
			wp_schedule_event( time(), 'imgpress_minute', self::HOOK );
		} elseif ( wp_next_scheduled( self::HOOK ) > time() + 5 ) {
			wp_clear_scheduled_hook( self::HOOK );
			wp_schedule_event( time(), 'imgpress_minute', self::HOOK );
		}
	}

	/**
	 * The cron entry: runs for up to 40 seconds (under wp-cron.php's own time limit).
	 */
	public static function run_from_cron() {
		self::run( 40 );
		// Work left and nothing to wait for: the next cron call (a page view, or the system cron) goes on at once.
		if ( '' === self::blocked() && array() !== self::due( 1 ) ) {
			wp_clear_scheduled_hook( self::HOOK );
			wp_schedule_event( time(), 'imgpress_minute', self::HOOK );
		}
	}

	/**
	 * How long to wait before trying again after an answer: Retry-After when the server gave it,
	 * else by what failed (an unreachable server: 5 s doubling to 2 minutes; a failed conversion:
	 * 30 s doubling to an hour; busy or at this key's limit: 5 s).
	 *
	 * @param Imgpress_Response $r        The answer.
	 * @param int               $attempts How many tries have failed so far (at least 1).
	 * @return int Seconds.
	 */
	public static function retry_delay( Imgpress_Response $r, $attempts ) {
		$attempts = max( 1, (int) $attempts );
		if ( null !== $r->retry_after ) {
			return max( 1, min( 86400, (int) $r->retry_after ) );
		}
		switch ( $r->kind ) {
			case Imgpress_Response::UNREACHABLE:
			case Imgpress_Response::TLS:
			case Imgpress_Response::AUTH:
				return (int) min( 120, 5 * pow( 2, min( 10, $attempts - 1 ) ) );
			case Imgpress_Response::SERVER:
				return (int) min( 3600, 30 * pow( 2, min( 10, $attempts - 1 ) ) );
			default:
				return 5;
		}
	}

	/**
	 * Whether the queue may run now, and why not.
	 *
	 * @return string '' when it may, else paused|not_connected|revoked|certificate|sealed|backoff.
	 */
	public static function blocked() {
		if ( get_option( self::PAUSED ) ) {
			return 'paused';
		}
		if ( ! Imgpress_Connection::is_connected() ) {
			return 'not_connected';
		}
		$status = Imgpress_Connection::status();
		if ( isset( $status['state'] ) && in_array( $status['state'], array( 'revoked', 'certificate', 'sealed' ), true ) ) {
			return $status['state'];
		}
		$backoff = get_option( self::BACKOFF, array() );
		if ( is_array( $backoff ) && ! empty( $backoff['until'] ) && $backoff['until'] > time() ) {
			return 'backoff';
		}
		return '';
	}

	/**
	 * Runs due work for up to `$budget` seconds; one run at a time.
	 *
	 * @param int $budget Seconds.
	 * @return int Conversions made.
	 */
	public static function run( $budget ) {
		if ( '' !== self::blocked() || ! self::lock( $budget + 150 ) ) {
			return 0;
		}
		$made = 0;
		// Room for the budget and the conversions still in flight at its end (hosts often stop PHP at 30 s).
		if ( function_exists( 'set_time_limit' ) ) {
			set_time_limit( $budget + 150 );
		}
		try {
			$made = self::work( microtime( true ) + $budget );
		} finally {
			delete_option( self::LOCK );
		}
		return $made;
	}

	/**
	 * Takes the run lock (an option added only when absent; a stale one is taken over).
	 *
	 * @param int $ttl Seconds the lock is honoured.
	 * @return bool
	 */
	private static function lock( $ttl ) {
		if ( add_option( self::LOCK, time() + $ttl, '', 'no' ) ) {
			return true;
		}
		$held = (int) get_option( self::LOCK );
		if ( $held > time() ) {
			return false;
		}
		delete_option( self::LOCK );
		return add_option( self::LOCK, time() + $ttl, '', 'no' );
	}

	/**
	 * Attachments due now, oldest first.
	 *
	 * @param int $n At most.
	 * @return int[]
	 */
	public static function due( $n ) {
		global $wpdb;
		return array_map(
			'intval',
			$wpdb->get_col( // phpcs:ignore WordPress.DB.DirectDatabaseQuery
				$wpdb->prepare(
					"SELECT post_id FROM {$wpdb->postmeta} WHERE meta_key = %s AND CAST(meta_value AS UNSIGNED) <= %d ORDER BY CAST(meta_value AS UNSIGNED), post_id LIMIT %d",
					self::META_QUEUE,
					time(),
					$n
				)
			)
		);
	}

	/**
	 * The files of an attachment that are converted: the main file (the -scaled one when WordPress made it) and every size.
	 *
	 * @param int $attachment_id Attachment.
	 * @return array size name => absolute path (existing files only).
	 */
	public static function files( $attachment_id ) {
		$main = get_attached_file( $attachment_id );
		$meta = wp_get_attachment_metadata( $attachment_id );
		$out  = array();
		if ( $main && file_exists( $main ) ) {
			$out['full'] = $main;
		}
		if ( $main && is_array( $meta ) && ! empty( $meta['sizes'] ) ) {
			$dir = trailingslashit( dirname( $main ) );
			foreach ( $meta['sizes'] as $name => $size ) {
				if ( ! empty( $size['file'] ) && file_exists( $dir . $size['file'] ) && ! in_array( $dir . $size['file'], $out, true ) ) {
					$out[ $name ] = $dir . $size['file'];
				}
			}
		}
		return $out;
	}

	/**
	 * The conversions an attachment still needs under the current settings.
	 *
	 * @param int   $attachment_id Attachment.
	 * @param array $result        Its `_imgpress` meta.
	 * @return array list of array( id, size, path, format ).
	 */
	private static function tasks_for( $attachment_id, array $result ) {
		$settings = Imgpress_Settings::get();
		$tasks    = array();
		foreach ( self::files( $attachment_id ) as $size => $path ) {
			foreach ( $settings['formats'] as $format ) {
				$entry = isset( $result['sizes'][ $size ] ) ? $result['sizes'][ $size ] : array();
				$has   = isset( $entry[ $format ] ) && ( 'larger' === $entry[ $format ] || file_exists( $path . '.' . $format ) );
				$fail  = isset( $result['failed'][ $size . '/' . $format ] );
				if ( $has && isset( $entry['quality'] ) && $entry['quality'] !== $settings['quality'] ) {
					// Made under the other quality setting: made again.
					$has = false;
				}
				if ( ! $has && ! $fail ) {
					$tasks[] = array( $attachment_id, $size, $path, $format );
				}
			}
		}
		return $tasks;
	}

	/**
	 * The run itself: due attachments' conversions kept `limit` at once (the server's per-key
	 * limit), attachment after attachment, each settled as soon as its last copy arrives.
	 *
	 * @param float $deadline microtime() after which nothing new starts.
	 * @return int Conversions made.
	 */
	private static function work( $deadline ) {
		$client = Imgpress_Connection::client();
		if ( null === $client ) {
			return 0;
		}
		$settings = Imgpress_Settings::get();
		$made     = 0;
		while ( microtime( true ) < $deadline ) {
			$limit = max( 1, (int) get_option( self::LIMIT, self::DEFAULT_LIMIT ) );
			// Enough attachments to keep the pool full for a while; each settles as soon as it is done.
			$ids = self::due( 2 * $limit );
			if ( empty( $ids ) ) {
				break;
			}
			$results = array();
			$left    = array();
			$tasks   = array();
			foreach ( $ids as $id ) {
				$r              = get_post_meta( $id, self::META_RESULT, true );
				$results[ $id ] = is_array( $r ) ? $r : array( 'sizes' => array() );
				$own            = self::tasks_for( $id, $results[ $id ] );
				$left[ $id ]    = count( $own );
				// Its biggest files first: they take longest, the small ones fill the gaps.
				usort(
					$own,
					static function ( $a, $b ) {
						return filesize( $b[2] ) - filesize( $a[2] );
					}
				);
				$tasks = array_merge( $tasks, $own );
			}
			foreach ( $left as $id => $n ) {
				if ( 0 === $n ) {
					self::settle( $id, $results[ $id ], false );
				}
			}
			$send = array();
			foreach ( $tasks as $i => $task ) {
				$send[ $i ] = array(
					'path'   => $task[2],
					'format' => $task[3],
				);
			}
			$stop    = false;
			$touched = array();
			$failed  = array();
			$client->convert_pool(
				$send,
				$settings['quality'],
				$limit,
				$deadline,
				static function ( $i, Imgpress_Response $r, $bytes ) use ( $tasks, $settings, $limit, &$results, &$left, &$touched, &$failed, &$made, &$stop ) {
					list( $id, $size, $path, $format ) = $tasks[ $i ];
					$touched[ $id ]                    = true;
					if ( $r->ok() ) {
						$made += self::store_copy( $results[ $id ], $size, $path, $format, $bytes, $settings['quality'] );
					} elseif ( Imgpress_Response::PERMANENT === $r->kind ) {
						$results[ $id ]['failed'][ $size . '/' . $format ] = '' !== $r->message ? $r->message : $r->code;
					} elseif ( Imgpress_Response::SERVER === $r->kind ) {
						// One attempt of the attachment per run, however many of its files failed.
						if ( ! isset( $failed[ $id ] ) ) {
							self::on_failure( $r, $id, $limit );
						}
						$failed[ $id ] = true;
					} elseif ( ! $stop ) {
						// The server's state, not this image's: the pool starts nothing more, counted once.
						$stop = self::on_failure( $r, $id, $limit );
						return ! $stop;
					}
					$left[ $id ]--;
					if ( 0 === $left[ $id ] ) {
						self::settle( $id, $results[ $id ], true );
						unset( $touched[ $id ] );
					}
					return ! $stop;
				}
			);
			foreach ( array_keys( $touched ) as $id ) {
				self::settle( $id, $results[ $id ], true );
			}
			if ( $stop ) {
				break;
			}
			self::clear_backoff();
		}
		return $made;
	}

	/**
	 * Writes one copy beside its file and records its size; a copy larger than its file is not kept (it would only slow pages).
	 *
	 * @param array  $result  The attachment's record (updated).
	 * @param string $size    Size name.
	 * @param string $path    Source file.
	 * @param string $format  webp|avif.
	 * @param string $bytes   The copy.
	 * @param string $quality lossy|lossless.
	 * @return int 1 when a copy was made.
	 */
	private static function store_copy( array &$result, $size, $path, $format, $bytes, $quality ) {
		$original = (int) filesize( $path );
		$entry    = isset( $result['sizes'][ $size ] ) ? $result['sizes'][ $size ] : array();
		$entry    = array_merge(
			$entry,
			array(
				'file'    => _wp_relative_upload_path( $path ),
				'bytes'   => $original,
				'quality' => $quality,
			)
		);
		if ( strlen( $bytes ) >= $original ) {
			$entry[ $format ] = 'larger';
			wp_delete_file( $path . '.' . $format );
		} elseif ( false !== file_put_contents( $path . '.' . $format, $bytes ) ) { // phpcs:ignore WordPress.WP.AlternativeFunctions.file_system_read_file_put_contents
			$entry[ $format ] = strlen( $bytes );
		}
		$result['sizes'][ $size ] = $entry;
		return 1;
	}

	/**
	 * Reacts to a failure that is not this image's fault; true when the run should stop.
	 *
	 * @param Imgpress_Response $r     The answer.
	 * @param int               $id    The attachment it was for.
	 * @param int               $limit The batch size used.
	 * @return bool
	 */
	private static function on_failure( Imgpress_Response $r, $id, $limit ) {
		switch ( $r->kind ) {
			case Imgpress_Response::SERVER:
				$attempts = (int) get_post_meta( $id, self::META_ATTEMPTS, true ) + 1;
				update_post_meta( $id, self::META_ATTEMPTS, $attempts );
				if ( $attempts >= self::MAX_ATTEMPTS ) {
					update_post_meta(
						$id,
						self::META_ERROR,
						sprintf(
							/* translators: 1: number of attempts, 2: the server's explanation */
							__( 'Given up after %1$d attempts: %2$s', 'imgpress' ),
							$attempts,
							'' !== $r->message ? $r->message : $r->code
						)
					);
					delete_post_meta( $id, self::META_QUEUE );
				} else {
					update_post_meta( $id, self::META_QUEUE, time() + self::retry_delay( $r, $attempts ) );
				}
				return false;
			case Imgpress_Response::IN_PROGRESS:
				// Another process holds some of this key's places: send fewer at once from now on.
				update_option( self::LIMIT, max( 1, intdiv( $limit, 2 ) ), false );
				self::back_off( $r );
				return true;
			case Imgpress_Response::REVOKED:
			case Imgpress_Response::TLS:
				Imgpress_Connection::note_failure( $r );
				return true;
			default:
				self::back_off( $r );
				if ( Imgpress_Response::UNREACHABLE === $r->kind ) {
					Imgpress_Connection::note_failure( $r );
				}
				return true;
		}
	}

	/**
	 * The whole queue waits (the server is down, busy or rate-limiting): not one attachment's attempt.
	 *
	 * @param Imgpress_Response $r The answer.
	 */
	private static function back_off( Imgpress_Response $r ) {
		$backoff  = get_option( self::BACKOFF, array() );
		$failures = ( is_array( $backoff ) && isset( $backoff['failures'] ) ? (int) $backoff['failures'] : 0 ) + 1;
		update_option(
			self::BACKOFF,
			array(
				'until'    => time() + self::retry_delay( $r, $failures ),
				'failures' => $failures,
				'kind'     => $r->kind,
				'code'     => $r->code,
			),
			false
		);
	}

	/**
	 * After a batch went through: no more waiting, and a problem notice about reachability goes away.
	 */
	private static function clear_backoff() {
		if ( false !== get_option( self::BACKOFF, false ) ) {
			delete_option( self::BACKOFF );
		}
		// After TOO_MANY_IN_PROGRESS halved it: back up by one per round that went through, to the server's limit.
		$limit = (int) get_option( self::LIMIT, self::DEFAULT_LIMIT );
		$max   = (int) get_option( self::LIMIT_MAX, self::DEFAULT_LIMIT );
		if ( $limit < $max ) {
			update_option( self::LIMIT, $limit + 1, false );
		}
		$status = Imgpress_Connection::status();
		if ( isset( $status['state'] ) && 'unreachable' === $status['state'] ) {
			Imgpress_Connection::clear_status();
		}
	}

	/**
	 * Saves an attachment's record and takes it off the queue when nothing is left to do.
	 *
	 * @param int   $id      Attachment.
	 * @param array $result  Its record.
	 * @param bool  $touched Whether this run sent anything for it.
	 */
	private static function settle( $id, array $result, $touched ) {
		if ( $touched ) {
			$saved = 0;
			foreach ( $result['sizes'] as $entry ) {
				$best = $entry['bytes'];
				foreach ( array( 'avif', 'webp' ) as $f ) {
					if ( isset( $entry[ $f ] ) && is_int( $entry[ $f ] ) ) {
						$best = min( $best, $entry[ $f ] );
					}
				}
				$saved += $entry['bytes'] - $best;
			}
			$result['at'] = time();
			update_post_meta( $id, self::META_RESULT, $result );
			update_post_meta( $id, self::META_SAVED, $saved );
		}
		if ( array() !== self::tasks_for( $id, $result ) ) {
			return;
		}
		delete_post_meta( $id, self::META_QUEUE );
		delete_post_meta( $id, self::META_ATTEMPTS );
		if ( ! empty( $result['failed'] ) ) {
			$lines = array();
			foreach ( $result['failed'] as $what => $why ) {
				$lines[] = $what . ': ' . $why;
			}
			update_post_meta( $id, self::META_ERROR, implode( '; ', $lines ) );
		}
		update_post_meta( $id, self::META_DONE, Imgpress_Settings::signature() );
	}

	/**
	 * Deletes an attachment's copies (on delete, regenerate, or the Remove copies action) and its record.
	 *
	 * @param int $attachment_id Attachment.
	 */
	public static function delete_copies( $attachment_id ) {
		$result = get_post_meta( $attachment_id, self::META_RESULT, true );
		$paths  = array_values( self::files( $attachment_id ) );
		if ( is_array( $result ) && ! empty( $result['sizes'] ) ) {
			$uploads = wp_upload_dir( null, false );
			foreach ( $result['sizes'] as $entry ) {
				if ( ! empty( $entry['file'] ) ) {
					$paths[] = trailingslashit( $uploads['basedir'] ) . $entry['file'];
				}
			}
		}
		foreach ( array_unique( $paths ) as $path ) {
			foreach ( array( 'webp', 'avif' ) as $format ) {
				if ( file_exists( $path . '.' . $format ) ) {
					wp_delete_file( $path . '.' . $format );
				}
			}
		}
		foreach ( array( self::META_RESULT, self::META_SAVED, self::META_DONE, self::META_ERROR, self::META_ATTEMPTS ) as $key ) {
			delete_post_meta( $attachment_id, $key );
		}
	}
}
