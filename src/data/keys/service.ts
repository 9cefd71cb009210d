import { Buffer } from "node:buffer";
import { and, desc, eq, getTableColumns, isNull, type SQL, sql } from "drizzle-orm";
import { randomBytes, type SecretBox, sha256Hex, toBase64Url } from "../../core/crypto.ts";
import type { BatchStatement, Database, Store, Tables } from "../db/index.ts";
import type { apiKeys } from "../db/schema.ts";

/** A freshly issued pair: the only moment the clear api_key and secret_key exist outside the client. */
export interface IssuedKey {
  id: string;
  apiKey: string;
  secretKey: string;
  keyPrefix: string;
}

/** An active key as the authentication step sees it. */
export interface ActiveKey {
  id: string;
  email: string;
  /** Decrypts the secret for an HMAC check. */
  secret(): Promise<string>;
}

/** A key row for operators (never with the secret). */
export type KeyRow = Omit<typeof apiKeys.$inferSelect, "keyHash" | "secretSealed">;

/** Recognisable prefix of an API key, so a leaked one is easy to spot in code or logs. */
export const API_KEY_PREFIX = "imp_";
/** Recognisable prefix of a secret key (signing requests), likewise. */
export const SECRET_KEY_PREFIX = "imps_";

/** Characters after the recognisable prefix of an api_key or a secret_key: 32 random bytes in base64url. */
export const KEY_BODY_CHARS = 43;

/** The key_prefix of an api_key: its first characters, enough to tell keys apart in lists and logs. */
export function keyPrefixOf(apiKey: string): string {
  return apiKey.slice(0, API_KEY_PREFIX.length + 8);
}

/** Writes what an issuance records (its audit events) on its transaction: the new key and the ids of the keys it replaced. */
export type RecordIssued = (db: Database, issued: IssuedKey, replaced: string[]) => BatchStatement;

/** Writes what a revocation of `ids` records (their audit events) on the revocation's transaction. */
export type RecordRevoked = (db: Database, ids: string[]) => PromiseLike<unknown>;

/** Issues, finds and revokes API key pairs (their usage counters are written by the usage recorder). */
export class KeyService {
  // Built once: every API request runs this lookup, and building the query costs as much as running it.
  private readonly byHash;
  private readonly db: Database;
  private readonly apiKeys: Tables["apiKeys"];

  constructor(
    private readonly store: Store,
    private readonly box: SecretBox,
    private readonly now: () => number,
  ) {
    this.db = store.db;
    const apiKeys = (this.apiKeys = store.tables.apiKeys);
    this.byHash = store.db
      .select({
        id: apiKeys.id,
        email: apiKeys.email,
        secretSealed: apiKeys.secretSealed,
        revokedAt: apiKeys.revokedAt,
      })
      .from(apiKeys)
      // Revoked keys too (same unique index): a revoked key still being tried is counted against it.
      .where(eq(apiKeys.keyHash, sql.placeholder("keyHash")))
      .limit(1)
      .prepare();
  }

  /**
   * Issues a new pair for (email, siteUrl), revoking the previous active one in the same
   * transaction, which also runs the statement `record` makes for the new key and the ids of the
   * pairs it replaced (their audit events).
   */
  async issue(email: string, siteUrl: string, record?: RecordIssued): Promise<IssuedKey> {
    const id = `key_${Buffer.from(randomBytes(8)).toString("hex")}`;
    const apiKey = API_KEY_PREFIX + toBase64Url(randomBytes(32));
    const secretKey = SECRET_KEY_PREFIX + toBase64Url(randomBytes(32));
    const keyPrefix = keyPrefixOf(apiKey);
    const row = {
      id,
      email,
      siteUrl,
      keyHash: await sha256Hex(apiKey),
      keyPrefix,
      secretSealed: await this.box.seal(secretKey, id),
      createdAt: this.now(),
    };
    const apiKeys = this.apiKeys;
    const issued = { id, apiKey, secretKey, keyPrefix };
    const sameOwnerAndSite = and(eq(apiKeys.email, email), eq(apiKeys.siteUrl, siteUrl), isNull(apiKeys.revokedAt));
    // Read before the batch, whose statements cannot pass rows to each other (an interactive
    // transaction per issuance would hold a connection each and run out of them under a burst).
    // Only a pair issued in between for the same address and site, by `keys create` racing a
    // verify-otp, would be revoked without its rotation event; every old pair is still revoked.
    const replaced = (await this.db.select({ id: apiKeys.id }).from(apiKeys).where(sameOwnerAndSite)).map((k) => k.id);
    await this.store.batch((db) => [
      db.update(apiKeys).set({ revokedAt: row.createdAt }).where(sameOwnerAndSite),
      db.insert(apiKeys).values(row),
      ...(record ? [record(db, issued, replaced)] : []),
    ]);
    return issued;
  }

  /** The active key whose api_key is `apiKey`, or null when unknown or revoked; `named` hears the id of any key found. */
  async findActive(apiKey: string, named?: (id: string) => void): Promise<ActiveKey | null> {
    if (!apiKey.startsWith(API_KEY_PREFIX) || apiKey.length > 200) return null;
    // Read on every request (no cache), so a key revoked by any instance is refused on its next request.
    const [row] = await this.store.bounded(this.byHash.execute({ keyHash: await sha256Hex(apiKey) }));
    if (!row) return null;
    named?.(row.id);
    if (row.revokedAt !== null) return null;
    return { id: row.id, email: row.email, secret: () => this.box.open(row.secretSealed, row.id) };
  }

  /** Whether the current master key opens the stored secrets (checked on the newest key; true when none is stored). */
  async opensStoredSecrets(): Promise<boolean> {
    const apiKeys = this.apiKeys;
    const [row] = await this.db
      .select({ id: apiKeys.id, sealed: apiKeys.secretSealed })
      .from(apiKeys)
      .orderBy(desc(apiKeys.createdAt))
      .limit(1);
    if (!row) return true;
    try {
      await this.box.open(row.sealed, row.id);
      return true;
    } catch {
      return false;
    }
  }

  /** All keys, newest first, optionally only active ones or one owner's. */
  async list(filter: { activeOnly?: boolean; email?: string } = {}): Promise<KeyRow[]> {
    const apiKeys = this.apiKeys;
    const conditions = [
      filter.activeOnly ? isNull(apiKeys.revokedAt) : undefined,
      filter.email ? eq(apiKeys.email, filter.email) : undefined,
    ];
    const { keyHash: _hash, secretSealed: _sealed, ...columns } = getTableColumns(apiKeys);
    return this.db
      .select(columns)
      .from(apiKeys)
      .where(and(...conditions))
      .orderBy(desc(apiKeys.createdAt));
  }

  /** The address key `id` belongs to (active or revoked); null when there is no such key. */
  async ownerOf(id: string): Promise<string | null> {
    const apiKeys = this.apiKeys;
    const [row] = await this.db.select({ email: apiKeys.email }).from(apiKeys).where(eq(apiKeys.id, id)).limit(1);
    return row?.email ?? null;
  }

  /**
   * Revokes one key by id; returns false when no active key has that id. `record` runs in the same
   * transaction when the key was revoked (its audit event).
   */
  async revoke(id: string, record?: RecordRevoked): Promise<boolean> {
    return (await this.revokeWhere(eq(this.apiKeys.id, id), record)).length > 0;
  }

  /** Revokes every active key of an address; returns their ids. `record` as for `revoke`. */
  revokeAllOf(email: string, record?: RecordRevoked): Promise<string[]> {
    return this.revokeWhere(eq(this.apiKeys.email, email), record);
  }

  private revokeWhere(which: SQL, record?: RecordRevoked): Promise<string[]> {
    const apiKeys = this.apiKeys;
    return this.db.transaction(async (tx) => {
      const revoked = await tx
        .update(apiKeys)
        .set({ revokedAt: this.now() })
        .where(and(which, isNull(apiKeys.revokedAt)))
        .returning({ id: apiKeys.id });
      const ids = revoked.map((k) => k.id);
      if (ids.length > 0 && record) await record(tx as unknown as Database, ids);
      return ids;
    });
  }
}
