import { bigint, bigserial, index, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";

/**
 * The PostgreSQL twin of src/data/db/schema.ts: the same tables, columns and keys, so every service runs
 * unchanged on either (test/data/db/store.test.ts compares the two). Times and byte counts are Unix ms and
 * sums beyond 2³¹, hence `bigint` read as JS numbers; the comments of schema.ts say what each holds.
 */
const big = (name: string) => bigint(name, { mode: "number" });

const codeColumns = () => ({
  email: text("email").primaryKey(),
  codeHash: text("code_hash").notNull(),
  attempts: integer("attempts").notNull().default(0),
  createdAt: big("created_at").notNull(),
  expiresAt: big("expires_at").notNull(),
});

/** See schema.ts `otpCodes`. */
export const otpCodes = pgTable("otp_codes", { ...codeColumns(), siteUrl: text("site_url") });

/** See schema.ts `staffCodes`. */
export const staffCodes = pgTable("staff_codes", codeColumns());

/** See schema.ts `apiKeys`. */
export const apiKeys = pgTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    email: text("email").notNull(),
    siteUrl: text("site_url").notNull().default(""),
    keyHash: text("key_hash").notNull().unique(),
    keyPrefix: text("key_prefix").notNull(),
    secretSealed: text("secret_sealed").notNull(),
    createdAt: big("created_at").notNull(),
    lastUsedAt: big("last_used_at"),
    lastAddress: text("last_address"),
    revokedAt: big("revoked_at"),
    conversions: big("conversions").notNull().default(0),
    bytesIn: big("bytes_in").notNull().default(0),
    bytesOut: big("bytes_out").notNull().default(0),
    guardEncodes: big("guard_encodes").notNull().default(0),
  },
  (table) => [index("api_keys_owner").on(table.email, table.siteUrl)],
);

/** See schema.ts `rateEvents`. */
export const rateEvents = pgTable(
  "rate_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    bucket: text("bucket").notNull(),
    at: big("at").notNull(),
  },
  (table) => [index("rate_events_bucket_at").on(table.bucket, table.at)],
);

/** See schema.ts `seenSignatures`. */
export const seenSignatures = pgTable(
  "seen_signatures",
  {
    keyId: text("key_id").notNull(),
    signature: text("signature").notNull(),
    expiresAt: big("expires_at").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.keyId, table.signature] }),
    index("seen_signatures_expires").on(table.expiresAt),
  ],
);

const latencyColumns = () => ({
  lat0: big("lat_0").notNull().default(0),
  lat1: big("lat_1").notNull().default(0),
  lat2: big("lat_2").notNull().default(0),
  lat3: big("lat_3").notNull().default(0),
  lat4: big("lat_4").notNull().default(0),
  lat5: big("lat_5").notNull().default(0),
  lat6: big("lat_6").notNull().default(0),
  lat7: big("lat_7").notNull().default(0),
  lat8: big("lat_8").notNull().default(0),
  lat9: big("lat_9").notNull().default(0),
  lat10: big("lat_10").notNull().default(0),
  lat11: big("lat_11").notNull().default(0),
  lat12: big("lat_12").notNull().default(0),
  lat13: big("lat_13").notNull().default(0),
  lat14: big("lat_14").notNull().default(0),
  lat15: big("lat_15").notNull().default(0),
});

const usageColumns = () => ({
  format: text("format").notNull(),
  quality: text("quality").notNull(),
  outcome: text("outcome").notNull(),
  count: big("count").notNull(),
  bytesIn: big("bytes_in").notNull(),
  bytesOut: big("bytes_out").notNull(),
  convertMs: big("convert_ms").notNull(),
  ...latencyColumns(),
  guardEncodes: big("guard_encodes").notNull().default(0),
});

/** See schema.ts `usageHourly`. */
export const usageHourly = pgTable(
  "usage_hourly",
  { hour: big("hour").notNull(), keyId: text("key_id").notNull(), ...usageColumns() },
  (table) => [
    primaryKey({ columns: [table.hour, table.keyId, table.format, table.quality, table.outcome] }),
    index("usage_hourly_key_hour").on(table.keyId, table.hour),
  ],
);

/** See schema.ts `usageHourlyTotal`. */
export const usageHourlyTotal = pgTable(
  "usage_hourly_total",
  { hour: big("hour").notNull(), ...usageColumns() },
  (table) => [primaryKey({ columns: [table.hour, table.format, table.quality, table.outcome] })],
);

/** See schema.ts `usageDailyTotal`. */
export const usageDailyTotal = pgTable(
  "usage_daily_total",
  { day: big("day").notNull(), ...usageColumns() },
  (table) => [primaryKey({ columns: [table.day, table.format, table.quality, table.outcome] })],
);

/** See schema.ts `usageDaily`. */
export const usageDaily = pgTable(
  "usage_daily",
  {
    day: big("day").notNull(),
    keyId: text("key_id").notNull(),
    conversions: big("conversions").notNull(),
    errors: big("errors").notNull(),
    bytesIn: big("bytes_in").notNull(),
    bytesOut: big("bytes_out").notNull(),
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

/** See schema.ts `refusedHourly`. */
export const refusedHourly = pgTable(
  "refused_hourly",
  {
    hour: big("hour").notNull(),
    kind: text("kind").notNull(),
    client: text("client").notNull(),
    code: text("code").notNull(),
    count: integer("count").notNull(),
    lastAt: big("last_at").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.hour, table.kind, table.client, table.code] }),
    index("refused_hourly_client_hour").on(table.kind, table.client, table.hour),
  ],
);

/** See schema.ts `refusedDailyTotal`. */
export const refusedDailyTotal = pgTable(
  "refused_daily_total",
  { day: big("day").notNull(), code: text("code").notNull(), count: integer("count").notNull() },
  (table) => [primaryKey({ columns: [table.day, table.code] })],
);

/** See schema.ts `heartbeat`. */
export const heartbeat = pgTable("heartbeat", {
  id: integer("id").primaryKey(),
  at: big("at").notNull(),
});

/** See schema.ts `staffMembers`. */
export const staffMembers = pgTable("staff_members", {
  email: text("email").primaryKey(),
  addedAt: big("added_at").notNull(),
  addedBy: text("added_by").notNull(),
});

/** See schema.ts `staffSessions`. */
export const staffSessions = pgTable(
  "staff_sessions",
  {
    id: text("id").primaryKey(),
    tokenHash: text("token_hash").notNull().unique(),
    email: text("email").notNull(),
    clientAddress: text("client_address").notNull(),
    userAgent: text("user_agent").notNull(),
    createdAt: big("created_at").notNull(),
    lastSeenAt: big("last_seen_at").notNull(),
  },
  (table) => [index("staff_sessions_email").on(table.email)],
);

/** See schema.ts `auditEvents`. */
export const auditEvents = pgTable(
  "audit_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    at: big("at").notNull(),
    type: text("type").notNull(),
    actor: text("actor").notNull(),
    subject: text("subject").notNull().default(""),
    clientAddress: text("client_address").notNull().default(""),
    detail: text("detail").notNull().default("{}"),
  },
  (table) => [index("audit_events_at").on(table.at), index("audit_events_type_at").on(table.type, table.at)],
);

/** See schema.ts `failedSignIns`. */
export const failedSignIns = pgTable(
  "failed_sign_ins",
  {
    email: text("email").notNull(),
    hour: big("hour").notNull(),
    attempts: integer("attempts").notNull(),
    lastClientAddress: text("last_client_address").notNull().default(""),
  },
  (table) => [primaryKey({ columns: [table.email, table.hour] }), index("failed_sign_ins_hour").on(table.hour)],
);

/** See schema.ts `databaseFacts`. */
export const databaseFacts = pgTable("database_facts", {
  name: text("name").primaryKey(),
  value: text("value").notNull(),
});
