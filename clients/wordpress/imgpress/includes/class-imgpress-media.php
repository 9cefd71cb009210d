<?php
/**
 * The media library: a column with each image's savings, a per-size table in the attachment's
 * details, and the Re-optimize / Remove copies actions (upload_files, the right to edit that
 * attachment, and a nonce).
 *
 * @package imgpress
 */

defined( 'ABSPATH' ) || exit;

/**
 * Column, details and per-image actions.
 */
class Imgpress_Media {

	/**
	 * Hooks.
	 */
	public static function register() {
		add_filter( 'manage_media_columns', array( __CLASS__, 'columns' ) );
		add_action( 'manage_media_custom_column', array( __CLASS__, 'column' ), 10, 2 );
		add_filter( 'media_row_actions', array( __CLASS__, 'row_actions' ), 10, 2 );
		add_filter( 'attachment_fields_to_edit', array( __CLASS__, 'details' ), 10, 2 );
		add_action( 'admin_post_imgpress_reoptimize', array( __CLASS__, 'handle_reoptimize' ) );
		add_action( 'admin_post_imgpress_remove', array( __CLASS__, 'handle_remove' ) );
	}

	/**
	 * Adds the column.
	 *
	 * @param array $columns Columns.
	 * @return array
	 */
	public static function columns( $columns ) {
		$columns['imgpress'] = __( 'imgpress', 'imgpress' );
		return $columns;
	}

	/**
	 * One line about an attachment: queued, failed, or what was saved.
	 *
	 * @param int $id Attachment.
	 * @return string Plain text.
	 */
	public static function summary( $id ) {
		if ( ! in_array( get_post_mime_type( $id ), Imgpress_Queue::MIMES, true ) ) {
			return '—';
		}
		$result = get_post_meta( $id, Imgpress_Queue::META_RESULT, true );
		$error  = get_post_meta( $id, Imgpress_Queue::META_ERROR, true );
		$queued = '' !== get_post_meta( $id, Imgpress_Queue::META_QUEUE, true );
		$parts  = array();
		if ( is_array( $result ) && ! empty( $result['sizes'] ) ) {
			$before = 0;
			$saved  = (int) get_post_meta( $id, Imgpress_Queue::META_SAVED, true );
			foreach ( $result['sizes'] as $entry ) {
				$before += (int) $entry['bytes'];
			}
			$parts[] = sprintf(
				/* translators: 1: bytes saved, e.g. "120 KB", 2: percent, 3: number of sizes */
				_n( '%1$s saved (%2$s %%) over %3$d size', '%1$s saved (%2$s %%) over %3$d sizes', count( $result['sizes'] ), 'imgpress' ),
				Imgpress_Admin::bytes( $saved ),
				number_format_i18n( $before > 0 ? 100 * $saved / $before : 0, 1 ),
				count( $result['sizes'] )
			);
		}
		if ( $queued ) {
			$parts[] = __( 'Queued', 'imgpress' );
		} elseif ( '' !== $error ) {
			/* translators: %s: why the conversion failed */
			$parts[] = sprintf( __( 'Not all copies made: %s', 'imgpress' ), $error );
		} elseif ( empty( $parts ) ) {
			$parts[] = __( 'Not optimized', 'imgpress' );
		}
		return implode( ' · ', $parts );
	}

	/**
	 * Prints the column.
	 *
	 * @param string $column Column.
	 * @param int    $id     Attachment.
	 */
	public static function column( $column, $id ) {
		if ( 'imgpress' === $column ) {
			echo '<span class="imgpress-summary">' . esc_html( self::summary( $id ) ) . '</span>';
		}
	}

	/**
	 * A signed link to a per-image action.
	 *
	 * @param string $action reoptimize|remove.
	 * @param int    $id     Attachment.
	 * @return string
	 */
	private static function action_url( $action, $id ) {
		return wp_nonce_url( add_query_arg( array( 'action' => 'imgpress_' . $action, 'id' => $id ), admin_url( 'admin-post.php' ) ), 'imgpress_' . $action . '_' . $id );
	}

	/**
	 * Re-optimize / Remove copies in the list view's row actions.
	 *
	 * @param array   $actions Actions.
	 * @param WP_Post $post    Attachment.
	 * @return array
	 */
	public static function row_actions( $actions, $post ) {
		if ( current_user_can( 'upload_files' ) && current_user_can( 'edit_post', $post->ID ) && in_array( $post->post_mime_type, Imgpress_Queue::MIMES, true ) ) {
			$actions['imgpress_reoptimize'] = '<a href="' . esc_url( self::action_url( 'reoptimize', $post->ID ) ) . '">' . esc_html__( 'Re-optimize', 'imgpress' ) . '</a>';
			$actions['imgpress_remove']     = '<a href="' . esc_url( self::action_url( 'remove', $post->ID ) ) . '">' . esc_html__( 'Remove copies', 'imgpress' ) . '</a>';
		}
		return $actions;
	}

	/**
	 * The per-size table in the attachment's details (the media modal and the edit screen).
	 *
	 * @param array   $fields Fields.
	 * @param WP_Post $post   Attachment.
	 * @return array
	 */
	public static function details( $fields, $post ) {
		if ( ! in_array( $post->post_mime_type, Imgpress_Queue::MIMES, true ) ) {
			return $fields;
		}
		$result = get_post_meta( $post->ID, Imgpress_Queue::META_RESULT, true );
		$html   = '<div class="imgpress-details"><p>' . esc_html( self::summary( $post->ID ) ) . '</p>';
		if ( is_array( $result ) && ! empty( $result['sizes'] ) ) {
			$html .= '<table class="imgpress-sizes widefat striped"><thead><tr><th>' . esc_html__( 'Size', 'imgpress' ) . '</th><th>' . esc_html__( 'Original', 'imgpress' ) . '</th><th>AVIF</th><th>WebP</th></tr></thead><tbody>';
			foreach ( $result['sizes'] as $name => $entry ) {
				$html .= '<tr><td>' . esc_html( $name ) . '</td><td>' . esc_html( Imgpress_Admin::bytes( (int) $entry['bytes'] ) ) . '</td>';
				foreach ( array( 'avif', 'webp' ) as $format ) {
					$html .= '<td>' . esc_html( self::cell( $entry, $format ) ) . '</td>';
				}
				$html .= '</tr>';
			}
			$html .= '</tbody></table>';
		}
		if ( current_user_can( 'upload_files' ) && current_user_can( 'edit_post', $post->ID ) ) {
			$html .= '<p><a class="button button-small" href="' . esc_url( self::action_url( 'reoptimize', $post->ID ) ) . '">' . esc_html__( 'Re-optimize', 'imgpress' ) . '</a> '
				. '<a class="button button-small" href="' . esc_url( self::action_url( 'remove', $post->ID ) ) . '">' . esc_html__( 'Remove copies', 'imgpress' ) . '</a></p>';
		}
		$html .= '</div>';
		$fields['imgpress'] = array(
			'label' => __( 'imgpress', 'imgpress' ),
			'input' => 'html',
			'html'  => $html,
		);
		return $fields;
	}

	/**
	 * One cell of the table: the copy's size and saving, "larger" (not kept), or a dash.
	 *
	 * @param array  $entry  A size's record.
	 * @param string $format avif|webp.
	 * @return string
	 */
	private static function cell( array $entry, $format ) {
		if ( ! isset( $entry[ $format ] ) ) {
			return '—';
		}
		if ( 'larger' === $entry[ $format ] ) {
			return __( 'larger than the original: not kept', 'imgpress' );
		}
		$bytes = (int) $entry[ $format ];
		return sprintf( '%s (−%s %%)', Imgpress_Admin::bytes( $bytes ), number_format_i18n( $entry['bytes'] > 0 ? 100 * ( 1 - $bytes / $entry['bytes'] ) : 0, 1 ) );
	}

	/**
	 * The attachment a per-image action is for, once the capability and nonce are checked.
	 *
	 * @param string $action reoptimize|remove.
	 * @return int
	 */
	private static function guarded_id( $action ) {
		$id = isset( $_GET['id'] ) ? absint( $_GET['id'] ) : 0;
		if ( ! $id || ! current_user_can( 'upload_files' ) || ! current_user_can( 'edit_post', $id ) ) {
			wp_die( esc_html__( 'You are not allowed to change this image.', 'imgpress' ), 403 );
		}
		check_admin_referer( 'imgpress_' . $action . '_' . $id );
		return $id;
	}

	/**
	 * Re-optimize: the copies are made again.
	 */
	public static function handle_reoptimize() {
		$id = self::guarded_id( 'reoptimize' );
		Imgpress_Queue::delete_copies( $id );
		Imgpress_Queue::enqueue( $id );
		wp_safe_redirect( wp_get_referer() ? wp_get_referer() : admin_url( 'upload.php?mode=list' ) );
		exit;
	}

	/**
	 * Remove copies: deleted, and the image leaves the queue.
	 */
	public static function handle_remove() {
		$id = self::guarded_id( 'remove' );
		Imgpress_Queue::delete_copies( $id );
		delete_post_meta( $id, Imgpress_Queue::META_QUEUE );
		wp_safe_redirect( wp_get_referer() ? wp_get_referer() : admin_url( 'upload.php?mode=list' ) );
		exit;
	}
}
