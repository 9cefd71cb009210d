<?php
/**
 * The owner's choices, in one option registered with the Settings API.
 *
 * @package imgpress
 */

defined( 'ABSPATH' ) || exit;

/**
 * Reads and sanitises `imgpress_settings`.
 */
class Imgpress_Settings {

	const OPTION = 'imgpress_settings';

	/**
	 * The defaults: both formats, lossy, <picture> delivery, copies kept on uninstall.
	 *
	 * @return array
	 */
	public static function defaults() {
		return array(
			'formats'     => array( 'avif', 'webp' ),
			'quality'     => 'lossy',
			'delivery'    => 'picture',
			'on_uninstall' => 'keep',
		);
	}

	/**
	 * The current settings, defaults filled in.
	 *
	 * @return array
	 */
	public static function get() {
		$s = get_option( self::OPTION, array() );
		return self::sanitize( is_array( $s ) ? $s : array() );
	}

	/**
	 * Keeps only known values (the Settings API's sanitize_callback).
	 *
	 * @param mixed $input Submitted values.
	 * @return array
	 */
	public static function sanitize( $input ) {
		$d     = self::defaults();
		$input = is_array( $input ) ? $input : array();
		$out   = $d;
		if ( isset( $input['formats'] ) && is_array( $input['formats'] ) ) {
			$out['formats'] = array_values( array_intersect( array( 'avif', 'webp' ), array_map( 'strval', $input['formats'] ) ) );
		} elseif ( isset( $input['quality'] ) ) {
			// A submitted form with no box ticked.
			$out['formats'] = array();
		}
		if ( isset( $input['quality'] ) && in_array( $input['quality'], array( 'lossy', 'lossless' ), true ) ) {
			$out['quality'] = $input['quality'];
		}
		if ( isset( $input['delivery'] ) && in_array( $input['delivery'], array( 'picture', 'rewrite', 'off' ), true ) ) {
			$out['delivery'] = $input['delivery'];
		}
		if ( isset( $input['on_uninstall'] ) && in_array( $input['on_uninstall'], array( 'keep', 'delete' ), true ) ) {
			$out['on_uninstall'] = $input['on_uninstall'];
		}
		return $out;
	}

	/**
	 * What "done" means for an attachment under these settings (formats and quality), stored with it.
	 *
	 * @return string
	 */
	public static function signature() {
		$s = self::get();
		return implode( ',', $s['formats'] ) . ':' . $s['quality'];
	}
}
