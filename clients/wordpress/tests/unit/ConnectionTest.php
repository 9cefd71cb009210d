<?php
/**
 * The server address as typed, made into the base URL.
 *
 * @package imgpress
 */

use PHPUnit\Framework\TestCase;

/**
 * Imgpress_Connection::normalise_server.
 */
class ConnectionTest extends TestCase {

	public function test_addresses_as_owners_type_them() {
		$cases = array(
			'nas.local'                          => 'https://nas.local:8443/v1',
			'NAS.local:9443'                     => 'https://nas.local:9443/v1',
			'192.168.1.10'                       => 'https://192.168.1.10:8443/v1',
			'https://nas.local:8443'             => 'https://nas.local:8443/v1',
			'https://nas.local:8443/'            => 'https://nas.local:8443/v1',
			'https://nas.local:8443/v1'          => 'https://nas.local:8443/v1',
			' https://images.example.com/ '      => 'https://images.example.com/v1',
			'https://example.com/imgpress/v1/'   => 'https://example.com/imgpress/v1',
			'https://[::1]:8443'                 => 'https://[::1]:8443/v1',
		);
		foreach ( $cases as $typed => $base ) {
			$this->assertSame( $base, Imgpress_Connection::normalise_server( $typed ), $typed );
		}
	}

	public function test_what_cannot_be_an_imgpress_address() {
		foreach ( array( '', 'http://nas.local:8443', 'ftp://nas.local', 'https://user:pw@nas.local', 'https://nas.local/?x=1', 'https://' ) as $typed ) {
			$this->assertNull( Imgpress_Connection::normalise_server( $typed ), $typed );
		}
	}
}
