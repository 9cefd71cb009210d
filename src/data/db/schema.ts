import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Times are Unix milliseconds in integer columns: one clock everywhere, easy to compare in SQL. */

// The columns every one-time-code table shares (src/data/otp/service.ts works on any of them).
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
    // The client address of the conversion that set last_used_at (IPv4 as is, IPv6 as its /64):
    // personal data, shown to staff only and never logged.
    lastAddress: text("last_address"),
    revokedAt: integer("revoked_at"),
    conversions: integer("conversions").notNull().default(0),
    bytesIn: integer("bytes_in").notNull().default(0),
    bytesOut: integer("bytes_out").notNull().default(0),
    // Encoder runs the quality guard added to this key's successful conversions (docs/usage.md).
    guardEncodes: integer("guard_encodes").notNull().default(0),
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
  (table) => [
    primaryKey({ columns: [table.keyId, table.signature] }),
    index("seen_signatures_expires").on(table.expiresAt),
  ],
);

/**
 * Upper bounds (ms, exclusive) of the conversion-latency histogram bins; the last bin is open.
 * Powers of two from 2 ms to 32 s: sixteen integer columns are cheap to add up in SQL, and a
 * factor-two bin with interpolation places p50/p95 within about ±20 % (docs/usage.md).
 */
export const LATENCY_BOUNDS_MS = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768] as const;

// lat_0 … lat_15: conversions whose pipeline time fell in bin i (see LATENCY_BOUNDS_MS).
const latencyColumns = () => ({
  lat0: integer("lat_0").notNull().default(0),
  lat1: integer("lat_1").notNull().default(0),
  lat2: integer("lat_2").notNull().default(0),
  lat3: integer("lat_3").notNull().default(0),
  lat4: integer("lat_4").notNull().default(0),
  lat5: integer("lat_5").notNull().default(0),
  lat6: integer("lat_6").notNull().default(0),
  lat7: integer("lat_7").notNull().default(0),
  lat8: integer("lat_8").notNull().default(0),
  lat9: integer("lat_9").notNull().default(0),
  lat10: integer("lat_10").notNull().default(0),
  lat11: integer("lat_11").notNull().default(0),
  lat12: integer("lat_12").notNull().default(0),
  lat13: integer("lat_13").notNull().default(0),
  lat14: integer("lat_14").notNull().default(0),
  lat15: integer("lat_15").notNull().default(0),
});

// What every usage bucket adds up; '' stands for "unknown" in format/quality (request failed before its form was read).
const usageColumns = () => ({
  format: text("format").notNull(),
  quality: text("quality").notNull(),
  // 'ok' or the error code the client received.
  outcome: text("outcome").notNull(),
  count: integer("count").notNull(),
  bytesIn: integer("bytes_in").notNull(),
  bytesOut: integer("bytes_out").notNull(),
  // Sum of pipeline milliseconds (rounded per flush), for averages.
  convertMs: integer("convert_ms").notNull(),
  ...latencyColumns(),
  // Encoder runs the quality guard added beyond the preset's one encode (0 on failed attempts:
  // only a finished conversion reports them). Default 0: buckets written before the guard had none.
  guardEncodes: integer("guard_encodes").notNull().default(0),
});

/**
 * Conversion attempts per hour (Unix ms of the hour's start) and key, written by the usage
 * recorder's flush. The primary key leads with the hour so pruning and range scans use it.
 */
export const usageHourly = sqliteTable(
  "usage_hourly",
  { hour: integer("hour").notNull(), keyId: text("key_id").notNull(), ...usageColumns() },
  (table) => [
    primaryKey({ columns: [table.hour, table.keyId, table.format, table.quality, table.outcome] }),
    index("usage_hourly_key_hour").on(table.keyId, table.hour),
  ],
);

/**
 * The same buckets summed over keys, written in the same transaction: charts of all keys read
 * ~10 rows per hour here instead of one per key in usage_hourly.
 */
export const usageHourlyTotal = sqliteTable(
  "usage_hourly_total",
  { hour: integer("hour").notNull(), ...usageColumns() },
  (table) => [primaryKey({ columns: [table.hour, table.format, table.quality, table.outcome] })],
);

/**
 * The totals again per UTC day (Unix ms of 00:00 UTC), same transaction: a year's overview or
 * daily series reads ~400 days × a few outcomes instead of ~9,600 hours × a few outcomes.
 */
export const usageDailyTotal = sqliteTable(
  "usage_daily_total",
  { day: integer("day").notNull(), ...usageColumns() },
  (table) => [primaryKey({ columns: [table.day, table.format, table.quality, table.outcome] })],
);
/**
 * Each key's attempts per UTC day (Unix ms of 00:00 UTC), same transaction: a key's figures over a
 * range read whole days here and only the edge hours from usage_hourly, so ranking every key over a
 * year reads ~one row per busy key and day instead of every hourly bucket. Volumes count
 * successful conversions only, `errors` the failed attempts, as the other bucket tables do.
 */
export const usageDaily = sqliteTable(
  "usage_daily",
  {
    day: integer("day").notNull(),
    keyId: text("key_id").notNull(),
    conversions: integer("conversions").notNull(),
    errors: integer("errors").notNull(),
    bytesIn: integer("bytes_in").notNull(),
    bytesOut: integer("bytes_out").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.day, table.keyId] }),
    // Covering: a range's per-key sums read the index alone, in key order (no sort for the GROUP BY).
    index("usage_daily_key_day").on(
      table.keyId,
      table.day,
      table.conversions,
      table.errors,
      table.bytesIn,
      table.bytesOut,
    ),
  ],
);

/**
 * Refused requests on the public routes (401, 403, 413, 415, 429) per UTC hour, client and code:
 * `kind` 'key' (client = the key id the request named), 'address' (client = the IPv4 address or
 * IPv6 /64) or 'other' (client '': every client past the hour's top N, folded together so a spray
 * of addresses adds a bounded number of rows; see usage/refusals.ts).
 */
export const refusedHourly = sqliteTable(
  "refused_hourly",
  {
    hour: integer("hour").notNull(),
    kind: text("kind").notNull(),
    client: text("client").notNull(),
    code: text("code").notNull(),
    count: integer("count").notNull(),
    // When the latest refusal of the row was answered (Unix ms): "last seen".
    lastAt: integer("last_at").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.hour, table.kind, table.client, table.code] }),
    index("refused_hourly_client_hour").on(table.kind, table.client, table.hour),
  ],
);

/**
 * The refused requests again per UTC day and code only, same transaction: a year's chart and
 * totals read ~400 days × a few codes instead of every client's hours (bench/RESULTS.md).
 */
export const refusedDailyTotal = sqliteTable(
  "refused_daily_total",
  { day: integer("day").notNull(), code: text("code").notNull(), count: integer("count").notNull() },
  (table) => [primaryKey({ columns: [table.day, table.code] })],
);

/** One row rewritten by the readiness probe: a real committed write proves the database file still accepts them. */
export const heartbeat = sqliteTable("heartbeat", {
  id: integer("id").primaryKey(),
  at: integer("at").notNull(),
});
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
    // e.g. staff.sign_in, key.revoked (the list is in src/data/audit/service.ts).
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

/**
 * Wrong staff codes typed for addresses that are not staff: counted per address and UTC hour, not
 * one audit event per guess (anyone may type any address, so those rows would grow without bound).
 * Pruned by age (src/data/audit/service.ts); wrong codes for staff addresses stay audit events.
 */
export const failedSignIns = sqliteTable(
  "failed_sign_ins",
  {
    email: text("email").notNull(),
    // Unix ms at the start of the UTC hour.
    hour: integer("hour").notNull(),
    attempts: integer("attempts").notNull(),
    // The address of the latest attempt in that hour (the audit events keep each one for staff).
    lastClientAddress: text("last_client_address").notNull().default(""),
  },
  (table) => [primaryKey({ columns: [table.email, table.hour] }), index("failed_sign_ins_hour").on(table.hour)],
);

/**
 * Facts about the database itself. `master_key_check` holds a value derived one-way from the master
 * key the database was first used with, so a process holding another key refuses to start instead of
 * failing every signed request and every code check.
 */
export const databaseFacts = sqliteTable("database_facts", {
  name: text("name").primaryKey(),
  value: text("value").notNull(),
});
