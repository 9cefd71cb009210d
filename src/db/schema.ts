import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Times are Unix milliseconds in integer columns: one clock everywhere, easy to compare in SQL. */

// The columns every one-time-code table shares (src/otp/service.ts works on any of them).
const codeColumns = () => ({
  email: text("email").primaryKey(),
  // HMAC-SHA256(pepper, email ‖ code): the pepper lives outside the database, so a copied file cannot brute-force codes offline.
  codeHash: text("code_hash").notNull(),
  attempts: integer("attempts").notNull().default(0),
  createdAt: integer("created_at").notNull(),
  expiresAt: integer("expires_at").notNull(),
});

/** The pending key-issuance code of an address; a new request replaces it, so the address is the key. */
export const otpCodes = sqliteTable("otp_codes", { ...codeColumns(), siteUrl: text("site_url") });

/**
 * The pending staff sign-in code of an address. A table of its own (and a pepper of its own) so a
 * staff code can never be exchanged for API keys, nor an issuance code open a staff session.
 */
export const staffCodes = sqliteTable("staff_codes", codeColumns());

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


/** Staff added with `imgpress staff add` (IMGPRESS_STAFF_EMAILS adds more without touching this table). */
export const staffMembers = sqliteTable("staff_members", {
  email: text("email").primaryKey(),
  addedAt: integer("added_at").notNull(),
  // "cli" or the staff address that added this one.
  addedBy: text("added_by").notNull(),
});

/** Signed-in staff browsers; only the SHA-256 of the cookie token is kept, so a copied file opens no session. */
export const staffSessions = sqliteTable(
  "staff_sessions",
  {
    // A public handle for listing sessions; unrelated to the token.
    id: text("id").primaryKey(),
    tokenHash: text("token_hash").notNull().unique(),
    email: text("email").notNull(),
    clientAddress: text("client_address").notNull(),
    userAgent: text("user_agent").notNull(),
    createdAt: integer("created_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
  },
  (table) => [index("staff_sessions_email").on(table.email)],
);

/** What staff and the public flow did; the application only ever inserts into it. */
export const auditEvents = sqliteTable(
  "audit_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    at: integer("at").notNull(),
    // e.g. staff.sign_in, key.revoked (the list is in src/audit/service.ts).
    type: text("type").notNull(),
    // Who acted: a staff address, "cli", or the key owner's address for key.issued.
    actor: text("actor").notNull(),
    // What it was done to: a key id, a staff address; '' when nothing.
    subject: text("subject").notNull().default(""),
    clientAddress: text("client_address").notNull().default(""),
    // Small JSON object of non-secret facts (never a code, token or key).
    detail: text("detail").notNull().default("{}"),
  },
  (table) => [index("audit_events_at").on(table.at), index("audit_events_type_at").on(table.type, table.at)],
);
