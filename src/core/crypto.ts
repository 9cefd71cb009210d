/** Small crypto helpers shared by OTP, keys and signatures (Bun and Deno alike). */
import { Buffer } from "node:buffer";
import { createCipheriv, createDecipheriv, createHash, createHmac } from "node:crypto";

const encoder = new TextEncoder();

/** Lowercase hex of bytes. */
export function toHex(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let out = "";
  for (const b of view) out += b.toString(16).padStart(2, "0");
  return out;
}

/** Unpadded base64url, for tokens that travel in headers. */
export function toBase64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64url");
}

/** `n` bytes from the CSPRNG. */
export function randomBytes(n: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(n));
}

/** A uniformly random string of `digits` decimal digits (rejection sampling, no modulo bias). */
export function randomDigits(digits: number): string {
  const limit = 10 ** digits;
  const ceiling = Math.floor(0x1_0000_0000 / limit) * limit;
  const word = new Uint32Array(1);
  for (;;) {
    crypto.getRandomValues(word);
    if (word[0]! < ceiling) return String(word[0]! % limit).padStart(digits, "0");
  }
}

// node:crypto rather than WebCrypto for the two hashes every signed request computes: the same
// digests, computed on the calling thread instead of a round trip through a worker per call
// (SHA-256 1.8× faster for a 20 MB body; a signed request makes up to five such calls).

/** Lowercase hex SHA-256 of a string (as UTF-8) or bytes. */
export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  return createHash("sha256").update(data).digest("hex");
}

/** Lowercase hex HMAC-SHA256 of `message` (as UTF-8) under `key`. */
export async function hmacSha256Hex(key: string | Uint8Array, message: string): Promise<string> {
  return createHmac("sha256", typeof key === "string" ? encoder.encode(key) : key)
    .update(message)
    .digest("hex");
}

/** Compares two strings in time that depends only on their lengths. */
export function timingSafeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/**
 * AES-256-GCM sealing of small secrets; the output is base64 of `iv ‖ ciphertext ‖ tag` (WebCrypto's
 * layout, so secrets sealed before still open). node:crypto, synchronous: `open` runs on every
 * signed request, and a WebCrypto call waits for a worker thread that a busy machine may not
 * schedule at once.
 */
export class SecretBox {
  private constructor(private readonly key: Uint8Array) {}

  /** Wraps a 32-byte key. */
  static async create(keyBytes: Uint8Array): Promise<SecretBox> {
    if (keyBytes.length !== 32) throw new Error("the master key must be 32 bytes");
    return new SecretBox(Uint8Array.from(keyBytes));
  }

  /** Encrypts `plain`, binding it to `context` (e.g. the row id) so a ciphertext cannot be moved to another row. */
  async seal(plain: string, context: string): Promise<string> {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv).setAAD(encoder.encode(context));
    const sealed = [iv, cipher.update(plain, "utf8"), cipher.final(), cipher.getAuthTag()];
    return Buffer.concat(sealed).toString("base64");
  }

  /** Decrypts what `seal` produced under the same context; throws if anything was altered. */
  async open(sealed: string, context: string): Promise<string> {
    const bytes = Buffer.from(sealed, "base64");
    if (bytes.length < 12 + 16) throw new Error("the sealed secret is truncated");
    const decipher = createDecipheriv("aes-256-gcm", this.key, bytes.subarray(0, 12)).setAAD(encoder.encode(context));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    return Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]).toString("utf8");
  }
}

/** Derives a purpose-specific 32-byte key from the master key (HKDF-SHA256), e.g. the OTP pepper. */
export async function deriveKey(master: Uint8Array, purpose: string): Promise<Uint8Array> {
  const base = await crypto.subtle.importKey("raw", master as Uint8Array<ArrayBuffer>, "HKDF", false, ["deriveBits"]);
  const bits = await crypto.subtle.deriveBits(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode(`imgpress/${purpose}`) },
    base,
    256,
  );
  return new Uint8Array(bits);
}
