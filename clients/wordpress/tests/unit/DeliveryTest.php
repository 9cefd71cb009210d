<?php
/**
 * <picture> markup for the shapes of <img> WordPress emits.
 *
 * @package imgpress
 */

use PHPUnit\Framework\TestCase;

/**
 * Imgpress_Delivery::wrap and the content marks.
 */
class DeliveryTest extends TestCase {

	const BASE = 'https://blog.example.com/wp-content/uploads/2026/11/';

	/**
	 * Copies exist for every size but the 2048 one, and only as WebP for the 150 one.
	 *
	 * @param string $url    URL.
	 * @param string $format Format.
	 * @return bool
	 */
	public static function exists( $url, $format ) {
		if ( false !== strpos( $url, '-2048x' ) ) {
			return false;
		}
		if ( false !== strpos( $url, '-150x' ) ) {
			return 'webp' === $format;
		}
		return true;
	}

	public function test_a_block_image_with_srcset_sizes_and_lazy_loading() {
		$img = '<img decoding="async" loading="lazy" width="1024" height="683" src="' . self::BASE . 'a-1024x683.jpg" alt="beach" class="wp-image-5" srcset="' . self::BASE . 'a-1024x683.jpg 1024w, ' . self::BASE . 'a-300x200.jpg 300w, ' . self::BASE . 'a-2048x1365.jpg 2048w" sizes="(max-width: 1024px) 100vw, 1024px" />';
		$out = Imgpress_Delivery::wrap( $img, array( __CLASS__, 'exists' ) );
		$this->assertSame(
			'<picture class="imgpress-picture">'
			. '<source type="image/avif" srcset="' . self::BASE . 'a-1024x683.jpg.avif 1024w, ' . self::BASE . 'a-300x200.jpg.avif 300w" sizes="(max-width: 1024px) 100vw, 1024px">'
			. '<source type="image/webp" srcset="' . self::BASE . 'a-1024x683.jpg.webp 1024w, ' . self::BASE . 'a-300x200.jpg.webp 300w" sizes="(max-width: 1024px) 100vw, 1024px">'
			. $img . '</picture>',
			$out
		);
	}

	public function test_an_image_without_srcset_uses_its_src_and_no_sizes() {
		$img = "<img src='" . self::BASE . "a-150x150.jpg' class=\"attachment-thumbnail size-thumbnail\" alt=''>";
		$this->assertSame(
			'<picture class="imgpress-picture"><source type="image/webp" srcset="' . self::BASE . 'a-150x150.jpg.webp">' . $img . '</picture>',
			Imgpress_Delivery::wrap( $img, array( __CLASS__, 'exists' ) )
		);
	}

	public function test_no_copies_no_picture() {
		$img = '<img src="' . self::BASE . 'a-2048x1365.jpg" alt="">';
		$this->assertSame( $img, Imgpress_Delivery::wrap( $img, array( __CLASS__, 'exists' ) ) );
	}

	public function test_already_wrapped_or_not_one_image_is_left_alone() {
		$wrapped = '<picture><source srcset="x.webp"><img src="' . self::BASE . 'a.jpg"></picture>';
		$this->assertSame( $wrapped, Imgpress_Delivery::wrap( $wrapped, array( __CLASS__, 'exists' ) ) );
		$two = '<img src="' . self::BASE . 'a.jpg"><img src="' . self::BASE . 'b.jpg">';
		$this->assertSame( $two, Imgpress_Delivery::wrap( $two, array( __CLASS__, 'exists' ) ) );
		$this->assertSame( '<img alt="">', Imgpress_Delivery::wrap( '<img alt="">', array( __CLASS__, 'exists' ) ) );
	}

	public function test_wrapping_twice_never_nests() {
		$img  = '<img src="' . self::BASE . 'a-300x200.jpg" alt="">';
		$once = Imgpress_Delivery::wrap( $img, array( __CLASS__, 'exists' ) );
		$this->assertSame( $once, Imgpress_Delivery::wrap( $once, array( __CLASS__, 'exists' ) ) );
	}

	public function test_images_already_in_a_picture_in_the_content_are_marked_then_unmarked() {
		$content = '<p><img src="a.jpg"></p><picture><source srcset="b.webp"><img class="x" src="b.jpg"></picture>';
		$marked  = Imgpress_Delivery::mark_wrapped( $content );
		$this->assertSame( '<p><img src="a.jpg"></p><picture><source srcset="b.webp"><img ' . Imgpress_Delivery::SKIP . ' class="x" src="b.jpg"></picture>', $marked );
		$this->assertSame( $marked, Imgpress_Delivery::mark_wrapped( $marked ) );
		$this->assertSame( '<img class="x" src="b.jpg">', Imgpress_Delivery::filter_content_img( '<img ' . Imgpress_Delivery::SKIP . ' class="x" src="b.jpg">' ) );
		$this->assertSame( $content, Imgpress_Delivery::unmark( $marked ) );
		// WordPress adds attributes in front of it before the filter sees the tag.
		$this->assertSame( '<img decoding="async" class="x" src="b.jpg" />', Imgpress_Delivery::filter_content_img( '<img decoding="async" ' . Imgpress_Delivery::SKIP . ' class="x" src="b.jpg" />' ) );
	}

	public function test_the_extension_goes_before_a_query_string() {
		$this->assertSame( 'https://x/a.jpg.avif?v=2', Imgpress_Delivery::with_extension( 'https://x/a.jpg?v=2', 'avif' ) );
		$this->assertSame( '/a.png.webp', Imgpress_Delivery::with_extension( '/a.png', 'webp' ) );
	}
}
