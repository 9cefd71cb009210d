import { lt, sql } from "drizzle-orm";
import { hmacSha256Hex, sha256Hex, timingSafeEqual } from "../../core/crypto.ts";
import { AppError } from "../../core/errors.ts";
import { API_PREFIX } from "../../core/http/paths.ts";
import type { Store } from "../../data/db/index.ts";
import type { ActiveKey, KeyService } from "../../data/keys/service.ts";

/** The two ways of presenting credentials (spec part 5). */
export type Scheme = "bearer" | "signed";

/** How signatures are checked. */
export interface SignaturePolicy {
  schemes: readonly Scheme[];
  /** `lenient` also accepts the empty-body hash on multipart requests. */
  bodyHash: "lenient" | "strict";
  toleranceS: number;
}

/** Credentials whose headers checked out; `verifyBody` finishes the check once the body is read. */
export interface Credential {
  scheme: Scheme;
  key: ActiveKey;
  verifyBody(body: Uint8Array): Promise<void>;
}

const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/**
 * Authenticates API requests. Header checks run before the body is read, so a request with bad
 * credentials never makes the server buffer 20 MB. Signed requests are checked in the order
 * headers → timestamp → key → HMAC (constant time) → replay.
 */
export class RequestAuthenticator {
  // Built once: every signed request runs it.
  private readonly insertSeen;

  constructor(
    private readonly keys: KeyService,
    private readonly store: Store,
    private readonly policy: SignaturePolicy,
    private readonly now: () => number,
  ) {
    const { seenSignatures } = store.tables;
    this.insertSeen = store.db
      .insert(seenSignatures)
      .values({
        keyId: sql.placeholder("keyId"),
        signature: sql.placeholder("signature"),
        expiresAt: sql.placeholder("expiresAt"),
      })
      .onConflictDoNothing()
      .returning({ keyId: seenSignatures.keyId })
      .prepare();
  }

  /** Checks everything the headers alone can prove; `named` hears the id of the key named, once found (active or revoked). */
  async fromHeaders(
    method: string,
    path: string,
    headers: Headers,
    named?: (keyId: string) => void,
  ): Promise<Credential> {
    const signed = headers.has("x-signature") || headers.has("x-timestamp");
    const bearer = /^bearer\s+(\S+)\s*$/i.exec(headers.get("authorization") ?? "")?.[1];
    if (!signed && !bearer && !headers.has("x-api-key")) {
      // Sent but not one Bearer key (Basic, an empty or two-word token, two headers merged with a comma).
      if (headers.has("authorization"))
        throw this.unauthorized("UNAUTHORIZED", "The Authorization header must be exactly: Bearer <api_key>.");
      throw this.unauthorized(
        "UNAUTHORIZED",
        "Missing credentials: send Authorization: Bearer <api_key>, or x-api-key, x-timestamp and x-signature.",
      );
    }
    const scheme: Scheme = signed || !bearer ? "signed" : "bearer";
    if (!this.policy.schemes.includes(scheme)) {
      throw this.unauthorized(
        "SCHEME_DISABLED",
        `This server does not accept ${scheme} requests; use ${this.policy.schemes.join(" or ")}.`,
      );
    }
    return scheme === "bearer" ? this.bearer(bearer!, named) : this.signed(method, path, headers, named);
  }

  // A 401 names the schemes this server accepts (RFC 9110 asks every 401 for a WWW-Authenticate).
  private unauthorized(code: string, message: string): AppError {
    const challenges = this.policy.schemes.map((scheme) =>
      scheme === "bearer"
        ? 'Bearer realm="imgpress"'
        : 'HMAC-SHA256 realm="imgpress", headers="x-api-key x-timestamp x-signature"',
    );
    return new AppError(401, code, message, { "www-authenticate": challenges.join(", ") });
  }

  /**
   * Forgets replay records that can no longer match a valid timestamp, on any instance whose clock
   * is within the tolerance of this one's: pruned by this clock alone, an instance running ahead
   * would delete records that one running behind still needs, and a replay would pass there.
   */
  async prune(): Promise<void> {
    const { seenSignatures } = this.store.tables;
    await this.store.db
      .delete(seenSignatures)
      .where(lt(seenSignatures.expiresAt, this.now() - this.policy.toleranceS * 1000));
  }

  private async bearer(apiKey: string, named?: (keyId: string) => void): Promise<Credential> {
    const key = await this.findKey(apiKey, named);
    return { scheme: "bearer", key, verifyBody: async () => {} };
  }

  private async signed(
    method: string,
    path: string,
    headers: Headers,
    named?: (keyId: string) => void,
  ): Promise<Credential> {
    const apiKey = headers.get("x-api-key");
    const timestamp = headers.get("x-timestamp")?.trim();
    const signature = headers.get("x-signature")?.trim().toLowerCase();
    const missing = [!apiKey && "x-api-key", !timestamp && "x-timestamp", !signature && "x-signature"].filter(Boolean);
    if (missing.length) throw this.unauthorized("UNAUTHORIZED", `Missing signature header(s): ${missing.join(", ")}.`);

    const nowS = Math.floor(this.now() / 1000);
    if (!/^\d{1,12}$/.test(timestamp!) || Math.abs(nowS - Number(timestamp)) > this.policy.toleranceS) {
      throw this.unauthorized(
        "TIMESTAMP_OUT_OF_RANGE",
        `x-timestamp must be whole Unix seconds within ±${this.policy.toleranceS} s of the server time; server time is ${nowS}.`,
      );
    }
    const key = await this.findKey(apiKey!, named);
    return {
      scheme: "signed",
      key,
      verifyBody: async (body) => {
        const { bodyHash, coversBody } = await this.checkSignature(
          key,
          { method, path },
          timestamp!,
          signature!,
          body,
          headers.get("content-type"),
        );
        // An empty-hash signature is the same for every upload signed in the same second, so
        // its replay record names the body too: two different uploads pass, a resend does not.
        await this.rememberSignature(key.id, coversBody ? signature! : `${signature}:${bodyHash}`, Number(timestamp));
      },
    };
  }

  private async findKey(apiKey: string, named?: (keyId: string) => void): Promise<ActiveKey> {
    const key = await this.keys.findActive(apiKey.trim(), named);
    if (!key) throw this.unauthorized("INVALID_API_KEY", "The API key is unknown or has been revoked.");
    return key;
  }

  /** Verifies the HMAC; tells whether the matching candidate covered the body's real hash. */
  private async checkSignature(
    key: ActiveKey,
    { method, path }: { method: string; path: string },
    timestamp: string,
    signature: string,
    body: Uint8Array,
    contentType: string | null,
  ) {
    const secret = await key.secret();
    const bodyHash = await sha256Hex(body);
    // WordPress-style clients follow the spec's "hash of the JSON payload" and hash nothing for multipart:
    // accepted when lenient; a strict server still tries it, to say why it refuses.
    const hashes = /^multipart\//i.test(contentType ?? "") && body.length > 0 ? [bodyHash, EMPTY_SHA256] : [bodyHash];
    let matched: string | undefined;
    for (const endpoint of signableEndpoints(path)) {
      for (const hash of hashes) {
        const expected = await hmacSha256Hex(secret, `${method.toUpperCase()}\n${endpoint}\n${timestamp}\n${hash}`);
        if (timingSafeEqual(expected, signature)) matched ??= hash; // no early exit: every candidate costs the same
      }
    }
    if (matched !== undefined && matched !== bodyHash && this.policy.bodyHash === "strict") {
      // The empty-hash form the docs offer CURLFile clients: said as such, rather than leave them to doubt their key or clock.
      throw this.unauthorized(
        "INVALID_SIGNATURE",
        "The signature covers the SHA-256 of an empty body, which this server does not accept (IMGPRESS_SIGNATURE_BODY=strict): sign the SHA-256 of the raw request body. See docs/api.md#signing.",
      );
    }
    if (!matched)
      throw this.unauthorized(
        "INVALID_SIGNATURE",
        "The signature does not match. See docs/api.md#signing for the string to sign.",
      );
    return { bodyHash, coversBody: matched === bodyHash };
  }

  // Stored in the database so that every instance sharing it refuses the second use.
  private async rememberSignature(keyId: string, signature: string, timestampS: number): Promise<void> {
    const expiresAt = (timestampS + this.policy.toleranceS) * 1000 + 1000;
    // One INSERT on the shared database, whose primary key makes the check exact across processes.
    const inserted = await this.store.bounded(this.insertSeen.execute({ keyId, signature, expiresAt }));
    if (inserted.length === 0)
      throw this.unauthorized(
        "REPLAYED_REQUEST",
        "This signature was already used; sign each request with a fresh timestamp.",
      );
  }
}

/**
 * The ENDPOINTs a signature for a request to `path` may name: the path relative to the base URL
 * (`/convert`, as the spec writes it) and the full one (`/v1/convert`). A signature is bound to
 * the route it was made for: one made for /convert opens no other route.
 */
export function signableEndpoints(path: string): string[] {
  return path.startsWith(`${API_PREFIX}/`) ? [path.slice(API_PREFIX.length), path] : [path];
}
