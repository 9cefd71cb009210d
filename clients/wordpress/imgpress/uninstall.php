<?php
/**
 * Removes what the plugin created: options, transients, post meta (the queue and the records),
 * the scheduled run and the pinned certificate; the copies too when the owner chose so.
 *
 * @package imgpress
 */

defined( 'WP_UNINSTALL_PLUGIN' ) || exit;

global $wpdb;

$imgpress_settings = get_option( 'imgpress_settings', array() );
if ( is_array( $imgpress_settings ) && isset( $imgpress_settings['on_uninstall'] ) && 'delete' === $imgpress_settings['on_uninstall'] ) {
	$imgpress_uploads = wp_upload_dir( null, false );
	$imgpress_rows    = $wpdb->get_col( $wpdb->prepare( "SELECT meta_value FROM {$wpdb->postmeta} WHERE meta_key = %s", '_imgpress' ) ); // phpcs:ignore WordPress.DB.DirectDatabaseQuery
	foreach ( $imgpress_rows as $imgpress_row ) {
		$imgpress_record = maybe_unserialize( $imgpress_row );
		if ( ! is_array( $imgpress_record ) || empty( $imgpress_record['sizes'] ) ) {
			continue;
		}
		foreach ( $imgpress_record['sizes'] as $imgpress_entry ) {
			if ( empty( $imgpress_entry['file'] ) || false !== strpos( $imgpress_entry['file'], '..' ) ) {
				continue;
			}
			foreach ( array( 'webp', 'avif' ) as $imgpress_format ) {
				$imgpress_copy = trailingslashit( $imgpress_uploads['basedir'] ) . $imgpress_entry['file'] . '.' . $imgpress_format;
				if ( file_exists( $imgpress_copy ) ) {
					wp_delete_file( $imgpress_copy );
				}
			}
		}
	}
}

foreach ( array( 'imgpress_settings', 'imgpress_connection', 'imgpress_pending', 'imgpress_status', 'imgpress_bulk', 'imgpress_paused', 'imgpress_backoff', 'imgpress_limit', 'imgpress_limit_max', 'imgpress_lock', 'imgpress_last_signed' ) as $imgpress_option ) {
	delete_option( $imgpress_option );
}
$wpdb->query( "DELETE FROM {$wpdb->options} WHERE option_name LIKE '\\_transient\\_imgpress\\_%' OR option_name LIKE '\\_transient\\_timeout\\_imgpress\\_%'" ); // phpcs:ignore WordPress.DB.DirectDatabaseQuery
foreach ( array( '_imgpress', '_imgpress_queue', '_imgpress_attempts', '_imgpress_error', '_imgpress_saved', '_imgpress_done' ) as $imgpress_key ) {
	delete_post_meta_by_key( $imgpress_key );
}
wp_clear_scheduled_hook( 'imgpress_run_queue' );

$imgpress_dir = trailingslashit( wp_upload_dir( null, false )['basedir'] ) . 'imgpress';
foreach ( array( 'server-cert.pem', 'index.php' ) as $imgpress_file ) {
	if ( file_exists( $imgpress_dir . '/' . $imgpress_file ) ) {
		wp_delete_file( $imgpress_dir . '/' . $imgpress_file );
	}
}
if ( is_dir( $imgpress_dir ) ) {
	rmdir( $imgpress_dir ); // phpcs:ignore WordPress.WP.AlternativeFunctions.file_system_read_rmdir
}
