/**
 * Client-side signing for Scheme B (spec part 5), written independently of src/ so tests check the
 * server against the documented algorithm rather than against its own code:
 *
 *   string_to_sign = METHOD \n ENDPOINT \n TIMESTAMP \n BODY_HASH
 *   x-signature    = lowercase hex HMAC-SHA256(key = secret_key as UTF-8, string_to_sign)
 */
import { createHash, createHmac } from "node:crypto";

/** The canonical ENDPOINT (relative to the base URL that ends in /v1). */
export const CANONICAL_ENDPOINT = "/plugin/convert";
/** The full path, also accepted. */
export const FULL_ENDPOINT = "/v1/plugin/convert";
/** SHA-256 of the empty byte string: what WordPress-style clients sign for a multipart body. */
export const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/** Lowercase hex SHA-256 of `data`. */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Lowercase hex HMAC-SHA256 of `message`, keyed with the secret string as UTF-8. */
export function hmacHex(secret: string, message: string): string {
  return createHmac("sha256", Buffer.from(secret, "utf8")).update(message, "utf8").digest("hex");
}

/** What a client signs with. */
export interface SignInput {
  apiKey: string;
  secretKey: string;
  /** Unix seconds (or any string, to test malformed timestamps). */
  timestamp: number | string;
  /** Default POST. */
  method?: string;
  /** Default CANONICAL_ENDPOINT. */
  endpoint?: string;
  /** The raw body; its hash is signed unless `bodyHash` is given. */
  body?: Uint8Array;
  bodyHash?: string;
}

/** The string to sign, as a client builds it. */
export function stringToSign(input: SignInput): string {
  const hash = input.bodyHash ?? sha256Hex(input.body ?? new Uint8Array(0));
  return [input.method ?? "POST", input.endpoint ?? CANONICAL_ENDPOINT, String(input.timestamp), hash].join("\n");
}

/** The three Scheme B headers. */
export function signedHeaders(input: SignInput): Record<string, string> {
  return {
    "x-api-key": input.apiKey,
    "x-timestamp": String(input.timestamp),
    "x-signature": hmacHex(input.secretKey, stringToSign(input)),
  };
}
