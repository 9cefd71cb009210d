<?php
/**
 * Plugin Name:       imgpress
 * Plugin URI:        https://github.com/imgpress/imgpress/tree/main/clients/wordpress
 * Description:       WebP and AVIF copies of your JPEG and PNG images, made by the imgpress server you run yourself, and served with <picture> or rewrite rules.
 * Version:           0.1.0
 * Requires at least: 6.1
 * Requires PHP:      7.4
 * Author:            imgpress
 * License:           MIT
 * License URI:       https://opensource.org/licenses/MIT
 * Text Domain:       imgpress
 * Domain Path:       /languages
 *
 * @package imgpress
 */

defined( 'ABSPATH' ) || exit;

define( 'IMGPRESS_VERSION', '0.1.0' );
define( 'IMGPRESS_FILE', __FILE__ );

foreach ( array( 'signer', 'vault', 'certificate', 'response', 'client', 'settings', 'connection', 'queue', 'bulk', 'delivery', 'admin', 'media' ) as $imgpress_part ) {
	require_once __DIR__ . '/includes/class-imgpress-' . $imgpress_part . '.php';
}
unset( $imgpress_part );

/**
 * Loads the translations.
 */
function imgpress_load_textdomain() {
	load_plugin_textdomain( 'imgpress', false, dirname( plugin_basename( __FILE__ ) ) . '/languages' );
}
add_action( 'init', 'imgpress_load_textdomain' );

Imgpress_Queue::register();
Imgpress_Bulk::register();
Imgpress_Media::register();
add_action( 'init', array( 'Imgpress_Delivery', 'register' ) );
if ( is_admin() ) {
	Imgpress_Admin::register();
}

/**
 * Activation: the recurring queue run.
 */
function imgpress_activate() {
	if ( ! wp_next_scheduled( Imgpress_Queue::HOOK ) ) {
		wp_schedule_event( time(), 'imgpress_minute', Imgpress_Queue::HOOK );
	}
}
register_activation_hook( __FILE__, 'imgpress_activate' );

/**
 * Deactivation: no more runs (the queue and the copies stay).
 */
function imgpress_deactivate() {
	wp_clear_scheduled_hook( Imgpress_Queue::HOOK );
}
register_deactivation_hook( __FILE__, 'imgpress_deactivate' );
