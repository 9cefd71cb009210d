// The in-memory usage bucket and the statements that write a batch of them (UsageRecorder's flush).
import { eq, type SQL, sql } from "drizzle-orm";
import { DAY_MS } from "../../core/durations.ts";
import type { BatchStatement, Database, Store } from "../db/index.ts";
import type { usageHourly } from "../db/schema.ts";
import { LATENCY_BINS } from "./latency.ts";

// A bucket's identity: a failed flush's buckets merge with fresh ones under it, so it must be one spelling.
export function bucketId(b: { hour: number; keyId: string; format: string; quality: string; outcome: string }): string {
  return `${b.hour}|${b.keyId}|${b.format}|${b.quality}|${b.outcome}`;
}

/** One hour of one key's attempts with one (format, quality, outcome), as kept in memory until a flush. */
export interface Bucket {
  hour: number;
  keyId: string;
  format: string;
  quality: string;
  outcome: string;
  count: number;
  bytesIn: number;
  bytesOut: number;
  convertMs: number;
  /** Encoder runs the quality guard added (ConversionEvent.guardEncodes). */
  guardEncodes: number;
  lat: number[];
  /** When the latest attempt of the bucket ended: becomes the key's last_used_at. */
  lastAt: number;
  /** The client address of that latest attempt: becomes the key's last_address. */
  lastAddress: string;
}

/** The upserts of the four bucket tables and the key counters: one batch, hence one transaction. */
export function flushStatements(db: Database, tables: Store["tables"], batch: Bucket[]): BatchStatement[] {
  const { usageHourly, usageHourlyTotal, usageDailyTotal } = tables;
  const totals = sumOver(batch, (b) => b.hour);
  const days = sumOver(batch, (b) => Math.floor(b.hour / DAY_MS) * DAY_MS);
  const statements: BatchStatement[] = [];
  // 400 rows × 26 parameters stays far below SQLite's 32,766 parameters per statement.
  for (const rows of chunks(batch, 400)) {
    statements.push(
      db
        .insert(usageHourly)
        .values(rows.map((b) => ({ hour: b.hour, keyId: b.keyId, ...columnsOf(b) })))
        .onConflictDoUpdate({
          target: [usageHourly.hour, usageHourly.keyId, usageHourly.format, usageHourly.quality, usageHourly.outcome],
          set: addExcluded(usageHourly, BUCKET_SUMS),
        }),
    );
  }
  for (const rows of chunks(totals, 400)) {
    statements.push(
      db
        .insert(usageHourlyTotal)
        .values(rows.map((b) => ({ hour: b.hour, ...columnsOf(b) })))
        .onConflictDoUpdate({
          target: [usageHourlyTotal.hour, usageHourlyTotal.format, usageHourlyTotal.quality, usageHourlyTotal.outcome],
          set: addExcluded(usageHourlyTotal, BUCKET_SUMS),
        }),
    );
  }
  for (const rows of chunks(days, 400)) {
    statements.push(
      db
        .insert(usageDailyTotal)
        .values(rows.map((b) => ({ day: b.hour, ...columnsOf(b) })))
        .onConflictDoUpdate({
          target: [usageDailyTotal.day, usageDailyTotal.format, usageDailyTotal.quality, usageDailyTotal.outcome],
          set: addExcluded(usageDailyTotal, BUCKET_SUMS),
        }),
    );
  }
  return [
    ...statements,
    ...perKeyDayUpserts(db, tables.usageDaily, batch),
    ...keyCounterUpdates(db, tables.apiKeys, batch),
  ];
}

/** One key's figures of one UTC day, as usage_daily keeps them. */
interface KeyDay {
  day: number;
  keyId: string;
  conversions: number;
  errors: number;
  bytesIn: number;
  bytesOut: number;
}

// The batch summed per (UTC day, key) and added to usage_daily.
function perKeyDayUpserts(db: Database, usageDaily: Store["tables"]["usageDaily"], batch: Bucket[]): BatchStatement[] {
  const days = new Map<string, KeyDay>();
  for (const b of batch) {
    const day = Math.floor(b.hour / DAY_MS) * DAY_MS;
    const id = `${day}|${b.keyId}`;
    const sum = days.get(id) ?? { day, keyId: b.keyId, conversions: 0, errors: 0, bytesIn: 0, bytesOut: 0 };
    const ok = b.outcome === "ok";
    // Volumes of successful conversions only, as the key counters and the overview count them.
    days.set(id, {
      ...sum,
      conversions: sum.conversions + (ok ? b.count : 0),
      errors: sum.errors + (ok ? 0 : b.count),
      bytesIn: sum.bytesIn + (ok ? b.bytesIn : 0),
      bytesOut: sum.bytesOut + (ok ? b.bytesOut : 0),
    });
  }
  return chunks([...days.values()], 1000).map((rows) =>
    db
      .insert(usageDaily)
      .values(rows)
      .onConflictDoUpdate({
        target: [usageDaily.day, usageDaily.keyId],
        set: addExcluded(usageDaily, ["conversions", "errors", "bytesIn", "bytesOut"]),
      }),
  );
}

// A bucket's columns shared by the three bucket tables.
function columnsOf(b: Bucket) {
  return {
    format: b.format,
    quality: b.quality,
    outcome: b.outcome,
    count: b.count,
    bytesIn: b.bytesIn,
    bytesOut: b.bytesOut,
    convertMs: Math.round(b.convertMs),
    guardEncodes: b.guardEncodes,
    ...Object.fromEntries(b.lat.map((n, i) => [`lat${i}`, n])),
  };
}

// One UPDATE per key adding the batch's successful conversions to its cumulative counters.
function keyCounterUpdates(db: Database, apiKeys: Store["tables"]["apiKeys"], batch: Bucket[]): BatchStatement[] {
  const keys = new Map<
    string,
    { count: number; bytesIn: number; bytesOut: number; guardEncodes: number; lastAt: number; lastAddress: string }
  >();
  // The key counters count successful conversions only, as they always have.
  for (const b of batch.filter((b) => b.outcome === "ok")) {
    const key = keys.get(b.keyId) ?? { count: 0, bytesIn: 0, bytesOut: 0, guardEncodes: 0, lastAt: 0, lastAddress: "" };
    const later = b.lastAt >= key.lastAt;
    keys.set(b.keyId, {
      count: key.count + b.count,
      bytesIn: key.bytesIn + b.bytesIn,
      bytesOut: key.bytesOut + b.bytesOut,
      guardEncodes: key.guardEncodes + b.guardEncodes,
      lastAt: later ? b.lastAt : key.lastAt,
      lastAddress: later ? b.lastAddress : key.lastAddress,
    });
  }
  return [...keys].map(([id, k]) => {
    // Both CASEs compare with the row's old last_used_at: the address moves with the time it belongs to.
    const newer = sql`coalesce(${apiKeys.lastUsedAt}, 0) > ${k.lastAt}`;
    return db
      .update(apiKeys)
      .set({
        conversions: sql`${apiKeys.conversions} + ${k.count}`,
        bytesIn: sql`${apiKeys.bytesIn} + ${k.bytesIn}`,
        bytesOut: sql`${apiKeys.bytesOut} + ${k.bytesOut}`,
        guardEncodes: sql`${apiKeys.guardEncodes} + ${k.guardEncodes}`,
        // CASE rather than SQLite's two-argument max(), which PostgreSQL calls greatest().
        lastUsedAt: sql`CASE WHEN ${newer} THEN ${apiKeys.lastUsedAt} ELSE ${k.lastAt} END`,
        lastAddress: sql`CASE WHEN ${newer} THEN ${apiKeys.lastAddress} ELSE ${k.lastAddress || null} END`,
      })
      .where(eq(apiKeys.id, id));
  });
}

/** Adds `b`'s figures to `into`. */
export function addInto(into: Bucket, b: Bucket): void {
  into.count += b.count;
  into.bytesIn += b.bytesIn;
  into.bytesOut += b.bytesOut;
  into.convertMs += b.convertMs;
  into.guardEncodes += b.guardEncodes;
  into.lat = into.lat.map((n, i) => n + b.lat[i]!);
  if (b.lastAt >= into.lastAt) into.lastAddress = b.lastAddress;
  into.lastAt = Math.max(into.lastAt, b.lastAt);
}

/** The buckets summed over keys per (time, format, quality, outcome), the time being `at(bucket)`. */
function sumOver(batch: Bucket[], at: (b: Bucket) => number): Bucket[] {
  const sums = new Map<string, Bucket>();
  for (const b of batch) {
    const id = `${at(b)}|${b.format}|${b.quality}|${b.outcome}`;
    const sum = sums.get(id);
    if (sum) addInto(sum, b);
    else sums.set(id, { ...b, hour: at(b), keyId: "", lat: [...b.lat] });
  }
  return [...sums.values()];
}

function chunks<T>(items: T[], size: number): T[][] {
  return Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
}

/** The summed columns of the three bucket tables. */
const BUCKET_SUMS = [
  "count",
  "bytesIn",
  "bytesOut",
  "convertMs",
  "guardEncodes",
  ...Array.from({ length: LATENCY_BINS }, (_, i) => `lat${i}`),
];

/** `column = column + excluded.column` for each named column: the upsert adds the new row's figures to the stored ones. */
function addExcluded(table: object, names: readonly string[]): Record<string, SQL> {
  return Object.fromEntries(
    names.map((name) => {
      const column = table[name as keyof typeof table] as typeof usageHourly.count;
      return [name, sql`${column} + excluded.${sql.identifier(column.name)}`];
    }),
  );
}
