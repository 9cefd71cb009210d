<?php
/**
 * What an answer means and how long the queue waits after it.
 *
 * @package imgpress
 */

use PHPUnit\Framework\TestCase;

/**
 * Imgpress_Response and Imgpress_Queue::retry_delay.
 */
class BackoffTest extends TestCase {

	/**
	 * An error answer as the service sends it.
	 *
	 * @param int    $status  Status.
	 * @param string $code    Code.
	 * @param array  $headers Headers.
	 * @return Imgpress_Response
	 */
	private function answer( $status, $code, array $headers = array() ) {
		return Imgpress_Response::from_http( $status, $headers, json_encode( array( 'error' => 'x', 'message' => 'said ' . $code, 'code' => $code ) ), 1000 );
	}

	public function test_retry_after_wins_whatever_the_attempt() {
		$busy = $this->answer( 503, 'SERVER_BUSY', array( 'Retry-After' => '7' ) );
		$this->assertSame( Imgpress_Response::RETRY, $busy->kind );
		$this->assertSame( 7, Imgpress_Queue::retry_delay( $busy, 1 ) );
		$this->assertSame( 7, Imgpress_Queue::retry_delay( $busy, 9 ) );
		$limited = $this->answer( 429, 'RATE_LIMITED', array( 'retry-after' => array( '1', '30' ) ) );
		$this->assertSame( 30, Imgpress_Queue::retry_delay( $limited, 1 ) );
	}

	public function test_retry_after_as_a_date() {
		$r = $this->answer( 503, 'STORAGE_UNAVAILABLE', array( 'Retry-After' => gmdate( 'D, d M Y H:i:s \G\M\T', 1045 ) ) );
		$this->assertSame( 45, $r->retry_after );
		$this->assertSame( 1, Imgpress_Queue::retry_delay( $this->answer( 503, 'SERVER_BUSY', array( 'Retry-After' => '0' ) ), 1 ) );
	}

	public function test_too_many_in_progress_waits_the_five_seconds_the_server_asks() {
		$r = $this->answer( 429, 'TOO_MANY_IN_PROGRESS', array( 'Retry-After' => '5' ) );
		$this->assertSame( Imgpress_Response::IN_PROGRESS, $r->kind );
		$this->assertSame( 5, Imgpress_Queue::retry_delay( $r, 3 ) );
		$this->assertSame( 5, Imgpress_Queue::retry_delay( $this->answer( 429, 'TOO_MANY_IN_PROGRESS' ), 3 ) );
	}

	public function test_an_unreachable_server_doubles_from_5_s_to_2_minutes() {
		$r = Imgpress_Response::from_transport( 'cURL error 7: Failed to connect to 127.0.0.1 port 8443: Connection refused' );
		$this->assertSame( Imgpress_Response::UNREACHABLE, $r->kind );
		$this->assertSame( '', $r->message );
		$delays = array_map(
			function ( $n ) use ( $r ) {
				return Imgpress_Queue::retry_delay( $r, $n );
			},
			range( 1, 9 )
		);
		$this->assertSame( array( 5, 10, 20, 40, 80, 120, 120, 120, 120 ), $delays );
	}

	public function test_a_failed_conversion_doubles_from_30_s_to_an_hour() {
		$r = $this->answer( 500, 'CONVERSION_FAILED' );
		$this->assertSame( Imgpress_Response::SERVER, $r->kind );
		$this->assertSame( 30, Imgpress_Queue::retry_delay( $r, 1 ) );
		$this->assertSame( 60, Imgpress_Queue::retry_delay( $r, 2 ) );
		$this->assertSame( 3600, Imgpress_Queue::retry_delay( $r, 12 ) );
	}

	public function test_each_answer_is_sorted_into_what_the_plugin_does() {
		$cases = array(
			array( 401, 'INVALID_API_KEY', Imgpress_Response::REVOKED ),
			array( 401, 'TIMESTAMP_OUT_OF_RANGE', Imgpress_Response::AUTH ),
			array( 422, 'IMAGE_TOO_LARGE', Imgpress_Response::PERMANENT ),
			array( 415, 'UNSUPPORTED_MEDIA_TYPE', Imgpress_Response::PERMANENT ),
			array( 504, 'CONVERSION_TIMEOUT', Imgpress_Response::SERVER ),
			array( 502, 'MAIL_DELIVERY_FAILED', Imgpress_Response::RETRY ),
			array( 429, 'TOO_MANY_ATTEMPTS', Imgpress_Response::PERMANENT ),
		);
		foreach ( $cases as $c ) {
			$this->assertSame( $c[2], $this->answer( $c[0], $c[1] )->kind, $c[1] );
		}
		$this->assertSame( 'said IMAGE_TOO_LARGE', $this->answer( 422, 'IMAGE_TOO_LARGE' )->message );
	}

	public function test_a_certificate_failure_is_told_apart_without_showing_the_transport_text() {
		$r = Imgpress_Response::from_transport( 'cURL error 60: SSL certificate problem: self-signed certificate' );
		$this->assertSame( Imgpress_Response::TLS, $r->kind );
		$this->assertSame( 'TLS_VERIFICATION_FAILED', $r->code );
		$this->assertSame( '', $r->message );
	}
}
