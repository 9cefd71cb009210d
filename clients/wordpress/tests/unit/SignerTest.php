<?php
/**
 * Multipart body and signature against the vectors the service's own tests check
 * (tests/fixtures/signing-vectors.json, verified by test/wordpress/vectors.test.ts with src/crypto.ts).
 *
 * @package imgpress
 */

use PHPUnit\Framework\TestCase;

/**
 * Imgpress_Signer.
 */
class SignerTest extends TestCase {

	/** @var array */
	private static $v;

	public static function setUpBeforeClass(): void {
		self::$v = json_decode( file_get_contents( dirname( __DIR__ ) . '/fixtures/signing-vectors.json' ), true );
	}

	public function test_hmac_matches_rfc_4231_case_2_as_the_service_does() {
		$c = self::$v['rfc4231_case2'];
		$this->assertSame( $c['hmac'], hash_hmac( 'sha256', $c['data'], $c['key'] ) );
	}

	public function test_the_multipart_body_is_byte_for_byte_the_vector() {
		$c                 = self::$v['convert'];
		list( $body, $ct ) = Imgpress_Signer::multipart( $c['fields'], $c['filename'], base64_decode( $c['image_base64'] ), $c['mime'], $c['boundary'] );
		$this->assertSame( base64_decode( $c['body_base64'] ), $body );
		$this->assertSame( 'multipart/form-data; boundary=' . $c['boundary'], $ct );
		$this->assertSame( $c['body_sha256'], hash( 'sha256', $body ) );
	}

	public function test_the_signature_covers_the_raw_body() {
		$c       = self::$v['convert'];
		$body    = base64_decode( $c['body_base64'] );
		$this->assertSame( $c['string_to_sign'], Imgpress_Signer::string_to_sign( 'post', '/plugin/convert', $c['timestamp'], $body ) );
		$headers = Imgpress_Signer::headers( $c['api_key'], $c['secret_key'], 'POST', '/plugin/convert', $body, (int) $c['timestamp'] );
		$this->assertSame(
			array(
				'x-api-key'   => $c['api_key'],
				'x-timestamp' => $c['timestamp'],
				'x-signature' => $c['signature'],
			),
			$headers
		);
		// Never the empty-body reading.
		$this->assertStringNotContainsString( 'e3b0c442', Imgpress_Signer::string_to_sign( 'POST', '/plugin/convert', $c['timestamp'], $body ) );
	}

	public function test_the_account_route_signs_get_and_the_empty_body() {
		$c = self::$v['account'];
		$h = Imgpress_Signer::headers( 'imp_x', $c['secret_key'], $c['method'], $c['endpoint'], '', (int) $c['timestamp'] );
		$this->assertSame( $c['signature'], $h['x-signature'] );
	}

	public function test_a_random_boundary_never_appears_in_the_image() {
		list( $body, $ct ) = Imgpress_Signer::multipart( array( 'format' => 'webp' ), 'a.jpg', 'bytes', 'image/jpeg' );
		$this->assertMatchesRegularExpression( '/^multipart\/form-data; boundary=imgpress-[0-9a-f]{24}$/', $ct );
		$this->assertStringEndsWith( "--\r\n", $body );
	}

	public function test_quotes_and_line_breaks_in_a_file_name_cannot_break_the_header() {
		list( $body ) = Imgpress_Signer::multipart( array(), "evil\"\r\nX: y.jpg", 'b', 'image/jpeg', 'B' );
		$this->assertStringContainsString( 'filename="evil%22%0D%0AX: y.jpg"', $body );
	}
}
