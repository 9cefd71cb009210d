<?php
/**
 * Serving the copies: `<picture>` with AVIF and WebP `<source>`s around the original `<img>` (post
 * content, featured images, wp_get_attachment_image), or rewrite rules that serve them in place.
 *
 * @package imgpress
 */

defined( 'ABSPATH' ) || exit;

/**
 * Markup only; the copies' existence is asked of a callable so the markup can be tested alone.
 */
class Imgpress_Delivery {

	/** Marks an <img> that was already inside a <picture> in the content, so it is not wrapped again. */
	const SKIP = 'data-imgpress-skip';

	/** @var array<string,bool> URL.format => exists, for one page view. */
	private static $seen = array();

	/**
	 * Hooks the front-end filters when <picture> delivery is chosen.
	 */
	public static function register() {
		$settings = Imgpress_Settings::get();
		if ( 'picture' !== $settings['delivery'] || is_admin() ) {
			return;
		}
		add_filter( 'the_content', array( __CLASS__, 'mark_wrapped' ), 9 );
		add_filter( 'wp_content_img_tag', array( __CLASS__, 'filter_content_img' ), 20, 3 );
		add_filter( 'wp_get_attachment_image', array( __CLASS__, 'filter_attachment_image' ), 20 );
		add_filter( 'the_content', array( __CLASS__, 'unmark' ), 99 );
	}

	/**
	 * Before WordPress filters the content's images: marks those inside an existing <picture>.
	 *
	 * @param string $content Post content.
	 * @return string
	 */
	public static function mark_wrapped( $content ) {
		if ( false === stripos( $content, '<picture' ) ) {
			return $content;
		}
		return preg_replace_callback(
			'#<picture\b.*?</picture>#is',
			static function ( $m ) {
				return preg_replace( '#<img\b(?![^>]*' . self::SKIP . ')#i', '<img ' . self::SKIP, $m[0] );
			},
			$content
		);
	}

	/**
	 * Removes any mark left (a theme that skipped WordPress's image filter).
	 *
	 * @param string $content Post content.
	 * @return string
	 */
	public static function unmark( $content ) {
		// WordPress may have added attributes before it (decoding, loading): removed wherever it stands.
		return false === strpos( $content, self::SKIP ) ? $content : preg_replace( '#\s' . self::SKIP . '(?=[\s/>])#', '', $content );
	}

	/**
	 * The wp_content_img_tag filter.
	 *
	 * @param string $img           The <img> tag.
	 * @param string $context       Where it is.
	 * @param int    $attachment_id Attachment, 0 when unknown.
	 * @return string
	 */
	public static function filter_content_img( $img, $context = '', $attachment_id = 0 ) {
		if ( false !== strpos( $img, self::SKIP ) ) {
			return self::unmark( $img );
		}
		return self::wrap( $img, array( __CLASS__, 'copy_exists' ) );
	}

	/**
	 * The wp_get_attachment_image filter (featured images use it too).
	 *
	 * @param string $html The <img> tag.
	 * @return string
	 */
	public static function filter_attachment_image( $html ) {
		return self::wrap( $html, array( __CLASS__, 'copy_exists' ) );
	}

	/**
	 * Wraps one <img> in <picture> with a <source> per format that has copies; unchanged when none has, or when already wrapped.
	 *
	 * @param string   $img    Markup holding one <img>.
	 * @param callable $exists function( string $url, string $format ): bool.
	 * @return string
	 */
	public static function wrap( $img, $exists ) {
		if ( false !== stripos( $img, '<picture' ) || ! preg_match( '#^\s*<img\b[^>]*>\s*$#is', $img ) ) {
			return $img;
		}
		$src    = self::attribute( $img, 'src' );
		$srcset = self::attribute( $img, 'srcset' );
		$sizes  = self::attribute( $img, 'sizes' );
		if ( null === $src || '' === $src ) {
			return $img;
		}
		$candidates = array();
		if ( null !== $srcset && '' !== trim( $srcset ) ) {
			foreach ( explode( ',', $srcset ) as $candidate ) {
				$parts = preg_split( '/\s+/', trim( $candidate ), 2 );
				if ( '' !== $parts[0] ) {
					$candidates[] = array( $parts[0], isset( $parts[1] ) ? $parts[1] : '' );
				}
			}
		} else {
			$candidates[] = array( $src, '' );
		}
		$sources = '';
		foreach ( array( 'avif', 'webp' ) as $format ) {
			$list = array();
			foreach ( $candidates as $c ) {
				if ( call_user_func( $exists, html_entity_decode( $c[0], ENT_QUOTES ), $format ) ) {
					$list[] = self::with_extension( $c[0], $format ) . ( '' !== $c[1] ? ' ' . $c[1] : '' );
				}
			}
			if ( empty( $list ) ) {
				continue;
			}
			// The values come from the <img>'s own attributes, already escaped there.
			$sources .= '<source type="image/' . $format . '" srcset="' . implode( ', ', $list ) . '"' . ( null !== $sizes && null !== $srcset ? ' sizes="' . $sizes . '"' : '' ) . '>';
		}
		if ( '' === $sources ) {
			return $img;
		}
		return '<picture class="imgpress-picture">' . $sources . trim( $img ) . '</picture>';
	}

	/**
	 * An attribute's raw (still escaped) value, or null.
	 *
	 * @param string $tag  The tag.
	 * @param string $name Attribute name.
	 * @return string|null
	 */
	private static function attribute( $tag, $name ) {
		if ( preg_match( '#\s' . preg_quote( $name, '#' ) . '\s*=\s*("([^"]*)"|\'([^\']*)\'|([^\s>]+))#i', $tag, $m ) ) {
			if ( isset( $m[4] ) && '' !== $m[4] ) {
				return $m[4];
			}
			return isset( $m[3] ) && '' !== $m[3] ? $m[3] : $m[2];
		}
		return null;
	}

	/**
	 * `photo.jpg?x` → `photo.jpg.avif?x`.
	 *
	 * @param string $url    URL.
	 * @param string $format webp|avif.
	 * @return string
	 */
	public static function with_extension( $url, $format ) {
		$cut = strcspn( $url, '?#' );
		return substr( $url, 0, $cut ) . '.' . $format . substr( $url, $cut );
	}

	/**
	 * Whether a copy exists for an uploads URL (scheme-less comparison, so http/https and CDN-less mixes match).
	 *
	 * @param string $url    The image URL.
	 * @param string $format webp|avif.
	 * @return bool
	 */
	public static function copy_exists( $url, $format ) {
		$key = $url . '.' . $format;
		if ( isset( self::$seen[ $key ] ) ) {
			return self::$seen[ $key ];
		}
		$uploads = wp_upload_dir( null, false );
		$base    = preg_replace( '#^https?:#i', '', $uploads['baseurl'] );
		$path    = preg_replace( '#^https?:#i', '', strtok( $url, '?#' ) );
		$found   = false;
		if ( 0 === strpos( $path, $base . '/' ) && preg_match( '/\.(jpe?g|png)$/i', $path ) ) {
			$relative = rawurldecode( substr( $path, strlen( $base ) ) );
			$found    = false === strpos( $relative, '..' ) && file_exists( $uploads['basedir'] . $relative . '.' . $format );
		}
		self::$seen[ $key ] = $found;
		return $found;
	}

	/**
	 * Apache rules for the uploads folder's .htaccess: serve a copy in place when the browser accepts its type.
	 *
	 * @return string
	 */
	public static function apache_rules() {
		return "# BEGIN imgpress (in wp-content/uploads/.htaccess)\n"
			. "AddType image/avif .avif\nAddType image/webp .webp\n"
			. "<IfModule mod_rewrite.c>\n  RewriteEngine On\n"
			. "  RewriteCond %{HTTP_ACCEPT} image/avif\n  RewriteCond %{REQUEST_FILENAME}.avif -f\n"
			. "  RewriteRule ^(.+\\.(?:jpe?g|png))$ $1.avif [NC,T=image/avif,E=imgpress:1,L]\n"
			. "  RewriteCond %{HTTP_ACCEPT} image/webp\n  RewriteCond %{REQUEST_FILENAME}.webp -f\n"
			. "  RewriteRule ^(.+\\.(?:jpe?g|png))$ $1.webp [NC,T=image/webp,E=imgpress:1,L]\n"
			. "</IfModule>\n<IfModule mod_headers.c>\n  <FilesMatch \"\\.(?i:jpe?g|png)$\">\n    Header append Vary Accept\n  </FilesMatch>\n"
			. "  Header append Vary Accept env=REDIRECT_imgpress\n</IfModule>\n# END imgpress\n";
	}

	/**
	 * nginx rules (the map blocks go in http {}, the location in the site's server {}).
	 *
	 * @return string
	 */
	public static function nginx_rules() {
		$uploads = wp_upload_dir( null, false );
		$path    = wp_parse_url( $uploads['baseurl'], PHP_URL_PATH );
		return "# in http { }\n"
			. "map \$http_accept \$imgpress_avif { default \"\"; \"~*image/avif\" \".avif\"; }\n"
			. "map \$http_accept \$imgpress_webp { default \"\"; \"~*image/webp\" \".webp\"; }\n\n"
			. "# in server { }\n"
			. 'location ~* ^' . preg_quote( (string) $path, '/' ) . "/.+\\.(?:jpe?g|png)$ {\n"
			. "    add_header Vary Accept;\n"
			. "    types { image/avif avif; image/webp webp; image/jpeg jpg jpeg; image/png png; }\n"
			. "    try_files \$uri\$imgpress_avif \$uri\$imgpress_webp \$uri =404;\n}\n";
	}
}
