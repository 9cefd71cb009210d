import { type SQL, sql } from "drizzle-orm";
import { DAY_MS, HOUR_MS, stepMs as stepWidth } from "../../core/durations.ts";
import type { Store } from "../db/index.ts";
import { checkRange, invalid } from "./checks.ts";
import { type TopKey, topKeys } from "./key-ranges.ts";
import { KEY_COLUMNS, keyRow, keysPage, type RawKey } from "./keys-query.ts";
import { LATENCY_BINS, latencyQuantile } from "./latency.ts";
import {
  type KeyDetail,
  type KeysPage,
  type KeysQuery,
  MAX_RANGE_DAYS,
  MAX_UTC_OFFSET_MINUTES,
  type Overview,
  type Series,
  type SeriesQuery,
  type UsageRange,
} from "./model.ts";

/** Summed columns of a bucket query, shared by every read; `l0…l15` are the latency bins. */
const SUMS = sql.raw(
  [
    "sum(count) AS n",
    "sum(bytes_in) AS bytes_in",
    "sum(bytes_out) AS bytes_out",
    "sum(guard_encodes) AS guard_encodes",
    ...Array.from({ length: LATENCY_BINS }, (_, i) => `sum(lat_${i}) AS l${i}`),
  ].join(", "),
);

interface SumRow {
  n: number;
  bytes_in: number;
  bytes_out: number;
  guard_encodes: number;
  [bin: `l${number}`]: number;
}

/** Read-only figures for the dashboard and /internal/api: from the usage buckets and the key counters. */
export class UsageQueries {
  constructor(
    private readonly store: Store,
    private readonly now: () => number = Date.now,
  ) {}

  /** Totals, splits by format and quality, errors by code and latency of a range (one key or all). */
  async overview(range: UsageRange): Promise<Overview> {
    const { from, to } = checkRange(range.from, range.to, HOUR_MS, 0);
    const rows = await this.store.all<SumRow & { format: string; quality: string; outcome: string }>(
      sql`SELECT format, quality, outcome, ${SUMS} FROM ${buckets(from, to, range.keyId, { daily: true })} GROUP BY format, quality, outcome`,
    );
    const ok = rows.filter((r) => r.outcome === "ok");
    const errors = new Map<string, number>();
    for (const r of rows) if (r.outcome !== "ok") errors.set(r.outcome, (errors.get(r.outcome) ?? 0) + r.n);
    const volumes = volume(ok);
    const totals = {
      ...volumes,
      errors: sum([...errors.values()]),
      savingsPercent: savedPercent(volumes.bytesSaved, volumes.bytesIn, 2),
      ...latency(ok),
    };
    return {
      from,
      to,
      totals,
      byFormat: groupBy(ok, (r) => r.format).map(([format, rs]) => ({ format, ...volume(rs) })),
      byQuality: groupBy(ok, (r) => r.quality).map(([quality, rs]) => ({ quality, ...volume(rs) })),
      byFormatQuality: groupBy(ok, (r) => `${r.format} ${r.quality}`).map(([, rs]) => ({
        format: rs[0]!.format,
        quality: rs[0]!.quality,
        ...volume(rs),
      })),
      errorsByCode: [...errors]
        .map(([code, count]) => ({ code, count }))
        .sort((a, b) => b.count - a.count || a.code.localeCompare(b.code)),
    };
  }

  /** The range cut into hours or days (days start at `utcOffsetMinutes` past 00:00 UTC), empty steps as zeros. */
  async series(query: SeriesQuery): Promise<Series> {
    const stepMs = stepWidth(query.step);
    const offsetMinutes = query.step === "day" ? (query.utcOffsetMinutes ?? 0) : 0;
    if (!Number.isInteger(offsetMinutes) || Math.abs(offsetMinutes) > MAX_UTC_OFFSET_MINUTES) {
      throw invalid(
        `the UTC offset must be a whole number of minutes from -${MAX_UTC_OFFSET_MINUTES} to ${MAX_UTC_OFFSET_MINUTES}`,
      );
    }
    const offset = offsetMinutes * 60_000;
    const { from, to } = checkRange(query.from, query.to, stepMs, offset);
    // UTC days may come from the daily table; days of another offset straddle two of its rows.
    // Integers written into the SQL (checked above): bound numbers may arrive as REAL and break the integer division.
    // Whole UTC days of all keys are rows of usage_daily_total already: grouped by their own indexed
    // column they need no temporary B-tree (a computed step key made a year's series ~4× slower).
    const wholeDays = query.step === "day" && offset === 0 && query.keyId === undefined;
    const rows = await this.store.all<SumRow & { t: number; outcome: string }>(
      wholeDays
        ? sql`SELECT day AS t, outcome, ${SUMS} FROM usage_daily_total WHERE day >= ${from} AND day < ${to} GROUP BY day, outcome`
        : // Hours only: a whole day's row would land on its 00:00 hour, and days of another offset straddle two.
          sql`SELECT ${sql.raw(`((at + ${offset}) / ${stepMs}) * ${stepMs} - ${offset}`)} AS t, outcome, ${SUMS} FROM ${buckets(from, to, query.keyId, { daily: false })} GROUP BY t, outcome`,
    );
    const byStep = new Map<number, typeof rows>();
    for (const r of rows) byStep.set(r.t, [...(byStep.get(r.t) ?? []), r]);
    const points: Series["points"] = [];
    for (let t = from; t < to; t += stepMs) {
      const step = byStep.get(t) ?? [];
      const ok = step.filter((r) => r.outcome === "ok");
      const failed = step.filter((r) => r.outcome !== "ok");
      points.push({
        t,
        ...volume(ok),
        errors: sum(failed.map((r) => r.n)),
        errorsByCode: Object.fromEntries(failed.map((r) => [r.outcome, r.n])),
        ...latency(ok),
      });
    }
    return { step: query.step, from, to, points };
  }

  /** A page of keys with their figures (over `query.range`, else all time), filtered, searched and sorted; plus the match count. */
  keys(query: KeysQuery): Promise<KeysPage> {
    return keysPage(this.store, query, this.now());
  }

  /** The `limit` keys most used over a range (conversions plus refused requests), with their figures there. */
  topKeys(range: { from: number; to: number }, limit: number): Promise<TopKey[]> {
    return topKeys(this.store, checkRange(range.from, range.to, HOUR_MS, 0), limit);
  }

  /** One key's row and its figures over `range` (default: the whole retention period); null when unknown. */
  async key(id: string, range?: { from: number; to: number }): Promise<KeyDetail | null> {
    const [row] = await this.store.all<RawKey>(sql`SELECT ${KEY_COLUMNS} FROM api_keys k WHERE id = ${id}`);
    if (!row) return null;
    const to = range?.to ?? Math.ceil(this.now() / HOUR_MS) * HOUR_MS;
    const from = range?.from ?? to - MAX_RANGE_DAYS * DAY_MS;
    return { key: keyRow(row), usage: await this.overview({ from, to, keyId: id }) };
  }
}

/** The share of `bytesIn` saved, in percent rounded to `decimals`; null when nothing came in. */
export function savedPercent(bytesSaved: number, bytesIn: number, decimals: number): number | null {
  const scale = 10 ** decimals;
  return bytesIn > 0 ? Math.round((bytesSaved / bytesIn) * (100 * scale)) / scale : null;
}

const BUCKET_COLUMNS = sql.raw(
  [
    "format",
    "quality",
    "outcome",
    "count",
    "bytes_in",
    "bytes_out",
    "guard_encodes",
    ...Array.from({ length: LATENCY_BINS }, (_, i) => `lat_${i}`),
  ].join(", "),
);

/**
 * The bucket rows of [from, to) (whole hours) as a subquery with their start time `at`: one key's
 * from usage_hourly; all keys' from the totals tables (a year of usage_hourly is millions of
 * rows), with whole UTC days from usage_daily_total when `daily` allows and the edges by hour.
 */
function buckets(from: number, to: number, keyId: string | undefined, { daily }: { daily: boolean }): SQL {
  if (keyId !== undefined)
    return sql`(SELECT hour AS at, ${BUCKET_COLUMNS} FROM usage_hourly WHERE key_id = ${keyId} AND hour >= ${from} AND hour < ${to}) AS b`;
  const dayFrom = Math.ceil(from / DAY_MS) * DAY_MS;
  const dayTo = Math.floor(to / DAY_MS) * DAY_MS;
  if (!daily || dayTo <= dayFrom)
    return sql`(SELECT hour AS at, ${BUCKET_COLUMNS} FROM usage_hourly_total WHERE hour >= ${from} AND hour < ${to}) AS b`;
  return sql`(SELECT day AS at, ${BUCKET_COLUMNS} FROM usage_daily_total WHERE day >= ${dayFrom} AND day < ${dayTo}
    UNION ALL SELECT hour AS at, ${BUCKET_COLUMNS} FROM usage_hourly_total WHERE (hour >= ${from} AND hour < ${dayFrom}) OR (hour >= ${dayTo} AND hour < ${to})) AS b`;
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function volume(rows: SumRow[]) {
  const bytesIn = sum(rows.map((r) => r.bytes_in));
  const bytesOut = sum(rows.map((r) => r.bytes_out));
  return {
    conversions: sum(rows.map((r) => r.n)),
    bytesIn,
    bytesOut,
    bytesSaved: bytesIn - bytesOut,
    guardEncodes: sum(rows.map((r) => r.guard_encodes)),
  };
}

function latency(rows: SumRow[]) {
  const bins = Array.from({ length: LATENCY_BINS }, (_, i) => sum(rows.map((r) => r[`l${i}`] ?? 0)));
  return { p50Ms: latencyQuantile(bins, 0.5), p95Ms: latencyQuantile(bins, 0.95) };
}

function groupBy<T>(rows: T[], key: (row: T) => string): [string, T[]][] {
  const groups = new Map<string, T[]>();
  for (const r of rows) groups.set(key(r), [...(groups.get(key(r)) ?? []), r]);
  return [...groups];
}
