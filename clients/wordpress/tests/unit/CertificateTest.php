<?php
/**
 * Fingerprints and the names a certificate holds (pinning compares exactly these).
 *
 * @package imgpress
 */

use PHPUnit\Framework\TestCase;

/**
 * Imgpress_Certificate and Imgpress_Vault.
 */
class CertificateTest extends TestCase {

	/** @var string */
	private static $pem;

	public static function setUpBeforeClass(): void {
		$key  = openssl_pkey_new( array( 'private_key_type' => OPENSSL_KEYTYPE_EC, 'curve_name' => 'prime256v1' ) );
		$conf = tempnam( sys_get_temp_dir(), 'imgpress' );
		file_put_contents( $conf, "[req]\ndistinguished_name=dn\n[dn]\n[ext]\nsubjectAltName=DNS:localhost,DNS:nas.local,IP:127.0.0.1\n" );
		$csr = openssl_csr_new( array( 'commonName' => 'imgpress' ), $key, array( 'config' => $conf, 'digest_alg' => 'sha256' ) );
		$crt = openssl_csr_sign( $csr, null, $key, 30, array( 'config' => $conf, 'x509_extensions' => 'ext', 'digest_alg' => 'sha256' ) );
		openssl_x509_export( $crt, self::$pem );
		unlink( $conf );
	}

	public function test_the_fingerprint_is_the_sha256_of_the_der_as_the_server_prints_it() {
		$expected = strtoupper( implode( ':', str_split( openssl_x509_fingerprint( self::$pem, 'sha256' ), 2 ) ) );
		$this->assertSame( $expected, Imgpress_Certificate::fingerprint( self::$pem ) );
		$this->assertMatchesRegularExpression( '/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/', $expected );
	}

	public function test_a_fingerprint_compares_however_it_was_typed() {
		$f = Imgpress_Certificate::fingerprint( self::$pem );
		$this->assertTrue( Imgpress_Certificate::same_fingerprint( $f, strtolower( str_replace( ':', ' ', $f ) ) ) );
		$this->assertFalse( Imgpress_Certificate::same_fingerprint( $f, substr( $f, 0, -2 ) . ( '00' === substr( $f, -2 ) ? '01' : '00' ) ) );
		$this->assertFalse( Imgpress_Certificate::same_fingerprint( '', '' ) );
	}

	public function test_not_a_certificate_has_no_fingerprint() {
		$this->assertNull( Imgpress_Certificate::fingerprint( 'hello' ) );
		$this->assertNull( Imgpress_Certificate::fingerprint( "-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----" ) );
	}

	public function test_the_names_for_a_mismatch_message() {
		$this->assertSame( array( 'localhost', 'nas.local', '127.0.0.1' ), Imgpress_Certificate::names( self::$pem ) );
	}

	public function test_the_vault_opens_only_with_the_same_salts() {
		$key    = Imgpress_Vault::key( 'salt-one' );
		$sealed = Imgpress_Vault::seal( 'imps_secret', $key );
		$this->assertStringNotContainsString( 'imps_', base64_decode( $sealed ) );
		$this->assertSame( 'imps_secret', Imgpress_Vault::open( $sealed, $key ) );
		$this->assertNull( Imgpress_Vault::open( $sealed, Imgpress_Vault::key( 'salt-two' ) ) );
		$this->assertNull( Imgpress_Vault::open( 'not sealed', $key ) );
		$this->assertNotSame( $sealed, Imgpress_Vault::seal( 'imps_secret', $key ) );
	}
}
