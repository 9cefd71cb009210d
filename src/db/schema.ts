import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Times are Unix milliseconds in integer columns: one clock everywhere, easy to compare in SQL. */

/** The pending one-time code of an address; a new request replaces it, so the address is the key. */
export const otpCodes = sqliteTable("otp_codes", {
  email: text("email").primaryKey(),
  // HMAC-SHA256(pepper, email ‖ code): the pepper lives outside the database, so a copied file cannot brute-force codes offline.
  codeHash: text("code_hash").notNull(),
  siteUrl: text("site_url"),
  attempts: integer("attempts").notNull().default(0),
  createdAt: integer("created_at").notNull(),
  expiresAt: integer("expires_at").notNull(),
});

/** Issued credential pairs; revoked rows stay for the audit trail. */
export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    email: text("email").notNull(),
    // '' rather than NULL so (email, site_url) compares plainly in SQL.
    siteUrl: text("site_url").notNull().default(""),
    // SHA-256 of the api_key: enough to look a key up, useless to present one.
    keyHash: text("key_hash").notNull().unique(),
    // First characters of the api_key, so an operator can tell keys apart in `keys list`.
    keyPrefix: text("key_prefix").notNull(),
    // The secret must be recoverable for HMAC checks, so it is AES-256-GCM sealed under the master key.
    secretSealed: text("secret_sealed").notNull(),
    createdAt: integer("created_at").notNull(),
    lastUsedAt: integer("last_used_at"),
    revokedAt: integer("revoked_at"),
    conversions: integer("conversions").notNull().default(0),
    bytesIn: integer("bytes_in").notNull().default(0),
    bytesOut: integer("bytes_out").notNull().default(0),
  },
  (table) => [index("api_keys_owner").on(table.email, table.siteUrl)],
);

/** Sliding-window log of rate-limited events; shared by every instance on the same database. */
export const rateEvents = sqliteTable(
  "rate_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    bucket: text("bucket").notNull(),
    at: integer("at").notNull(),
  },
  (table) => [index("rate_events_bucket_at").on(table.bucket, table.at)],
);

/** Signatures already accepted, kept until their timestamp can no longer pass the window. */
export const seenSignatures = sqliteTable(
  "seen_signatures",
  {
    keyId: text("key_id").notNull(),
    signature: text("signature").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.keyId, table.signature] }), index("seen_signatures_expires").on(table.expiresAt)],
);


/** One row rewritten by the readiness probe: a real committed write proves the database file still accepts them. */
export const heartbeat = sqliteTable("heartbeat", {
  id: integer("id").primaryKey(),
  at: integer("at").notNull(),
});
