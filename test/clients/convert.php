<?php
/**
 * A WordPress-style imgpress client: PHP cURL with CURLFile, signing as the spec (part 5) says.
 *
 *   php convert.php <base_url> <api_key> <secret_key> <file> <format> [out_file] [quality] [max_width]
 *
 *   base_url   e.g. https://images.example.com/v1 (ends with the version segment)
 *   format     webp | avif
 *   out_file   where to write the converted image (default: <file stem>.<format> beside <file>)
 *
 * Environment:
 *   IMGPRESS_SCHEME     signed (default) | bearer
 *   IMGPRESS_BODY_HASH  empty (default): CURLFile upload signed with SHA-256 of the empty string, as a
 *                       client following the spec's "hash of the JSON payload" does (accepted unless the
 *                       server runs IMGPRESS_SIGNATURE_BODY=strict);
 *                       raw: the multipart body is built here and its exact bytes are hashed (recommended,
 *                       works in strict mode too).
 *   IMGPRESS_CA_FILE    PEM file to trust (e.g. the server's self-signed certificate)
 *
 * Prints one JSON line {status, content_type, original_size, optimized_size, savings_percent, code,
 * message, out_file}; exits 0 on 200, 1 on an error answer, 2 on a usage or transport error.
 *
 * Needs the php-cli and php-curl packages (Debian/Ubuntu: apt-get install php-cli php-curl).
 */

if ($argc < 6) {
    fwrite(STDERR, "usage: php convert.php <base_url> <api_key> <secret_key> <file> <format> [out_file] [quality] [max_width]\n");
    exit(2);
}
[, $baseUrl, $apiKey, $secretKey, $file, $format] = $argv;
$outFile = $argv[6] ?? preg_replace('/\.[^.\/]*$/', '', $file) . '.' . $format;
$quality = $argv[7] ?? null;
$maxWidth = $argv[8] ?? null;
$scheme = getenv('IMGPRESS_SCHEME') ?: 'signed';
$hashMode = getenv('IMGPRESS_BODY_HASH') ?: 'empty';

if (!is_readable($file)) {
    fwrite(STDERR, "cannot read $file\n");
    exit(2);
}

// ENDPOINT is the path relative to the base URL (the canonical form the service documents).
$endpoint = '/plugin/convert';
$url = rtrim($baseUrl, '/') . $endpoint;

$fields = ['format' => $format];
if ($quality !== null) $fields['quality'] = $quality;
if ($maxWidth !== null) $fields['max_width'] = $maxWidth;
$mime = (function_exists('mime_content_type') ? mime_content_type($file) : null) ?: 'application/octet-stream';

$headers = ['Expect:']; // no 100-continue round trip
if ($hashMode === 'raw') {
    // Build the multipart body ourselves so that the signed hash covers exactly the bytes sent.
    $boundary = '----imgpress' . bin2hex(random_bytes(12));
    $body = '';
    foreach ($fields as $name => $value) {
        $body .= "--$boundary\r\nContent-Disposition: form-data; name=\"$name\"\r\n\r\n$value\r\n";
    }
    $filename = str_replace(['"', "\r", "\n"], ['%22', '%0D', '%0A'], basename($file));
    $body .= "--$boundary\r\nContent-Disposition: form-data; name=\"image\"; filename=\"$filename\"\r\n"
        . "Content-Type: $mime\r\n\r\n" . file_get_contents($file) . "\r\n--$boundary--\r\n";
    $postFields = $body;
    $headers[] = "Content-Type: multipart/form-data; boundary=$boundary";
    $bodyHash = hash('sha256', $body);
} else {
    // CURLFile: libcurl writes the multipart body, so the client cannot hash it; per the spec's text
    // the payload hash of a request without a JSON body is the hash of the empty string.
    $postFields = $fields + ['image' => new CURLFile($file, $mime, basename($file))];
    $bodyHash = hash('sha256', '');
}

if ($scheme === 'bearer') {
    $headers[] = "Authorization: Bearer $apiKey";
} else {
    $timestamp = (string) time();
    $stringToSign = "POST\n$endpoint\n$timestamp\n$bodyHash";
    $headers[] = "x-api-key: $apiKey";
    $headers[] = "x-timestamp: $timestamp";
    $headers[] = 'x-signature: ' . hash_hmac('sha256', $stringToSign, $secretKey);
}

$responseHeaders = [];
$ch = curl_init($url);
curl_setopt_array($ch, [
    CURLOPT_POST => true,
    CURLOPT_POSTFIELDS => $postFields,
    CURLOPT_HTTPHEADER => $headers,
    CURLOPT_RETURNTRANSFER => true,
    CURLOPT_TIMEOUT => 120,
    CURLOPT_SSL_VERIFYPEER => true,
    CURLOPT_SSL_VERIFYHOST => 2,
    CURLOPT_HEADERFUNCTION => function ($ch, $line) use (&$responseHeaders) {
        $parts = explode(':', $line, 2);
        if (count($parts) === 2) $responseHeaders[strtolower(trim($parts[0]))] = trim($parts[1]);
        return strlen($line);
    },
]);
$ca = getenv('IMGPRESS_CA_FILE');
if ($ca) curl_setopt($ch, CURLOPT_CAINFO, $ca);

$response = curl_exec($ch);
if ($response === false) {
    fwrite(STDERR, 'transport error: ' . curl_error($ch) . "\n");
    exit(2);
}
$status = curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
curl_close($ch);

$summary = [
    'status' => $status,
    'content_type' => $responseHeaders['content-type'] ?? null,
    'original_size' => isset($responseHeaders['x-original-size']) ? (int) $responseHeaders['x-original-size'] : null,
    'optimized_size' => isset($responseHeaders['x-optimized-size']) ? (int) $responseHeaders['x-optimized-size'] : null,
    'savings_percent' => $responseHeaders['x-savings-percent'] ?? null,
    'code' => null,
    'message' => null,
    'out_file' => null,
];
if ($status === 200) {
    file_put_contents($outFile, $response);
    $summary['out_file'] = $outFile;
} else {
    $error = json_decode($response, true);
    $summary['code'] = $error['code'] ?? null;
    $summary['message'] = $error['message'] ?? null;
}
echo json_encode($summary, JSON_UNESCAPED_SLASHES), "\n";
exit($status === 200 ? 0 : 1);
