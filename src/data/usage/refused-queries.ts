import { type SQL, sql } from "drizzle-orm";
import { DAY_MS, stepMs as stepWidth } from "../../core/durations.ts";
import type { Store } from "../db/index.ts";
import type { RefusedKind } from "./refusals.ts";

/** Refused requests of a range, by code, most first. */
export interface RefusedCodes {
  total: number;
  byCode: { code: string; count: number }[];
}

/** One step of a refused-requests series: its start (Unix ms) and counts by code. */
export interface RefusedPoint {
  t: number;
  total: number;
  byCode: Record<string, number>;
}

/** A client among the most refused of a range. */
export interface RefusedClient {
  kind: RefusedKind;
  /** The key id, the address (IPv6 as its /64), or "" for "other". */
  client: string;
  count: number;
  lastAt: number;
  /** The code it was refused with most often. */
  mainCode: string;
  /** For a key: its prefix and owner, when the key still exists. */
  key?: { prefix: string; email: string };
}

/** A range [from, to) of whole hours, optionally one key's refusals only. */
interface RefusedRange {
  from: number;
  to: number;
  keyId?: string;
}

/** Reads the refused-request counts (usage/refusals.ts) for the dashboard; ranges are checked by its caller's usage query. */
export class RefusalQueries {
  constructor(private readonly store: Store) {}

  /** Totals by code over a range. */
  async codes(range: RefusedRange): Promise<RefusedCodes> {
    const rows = await this.store.all<{ code: string; n: number }>(
      sql`SELECT code, sum(n) AS n FROM ${perCode(range, "whole days")} GROUP BY code`,
    );
    const byCode = rows
      .map((r) => ({ code: r.code, count: r.n }))
      .sort((a, b) => b.count - a.count || a.code.localeCompare(b.code));
    return { total: byCode.reduce((s, c) => s + c.count, 0), byCode };
  }

  /** The range cut into UTC hours or days, empty steps as zeros. */
  async series(range: RefusedRange & { step: "hour" | "day" }): Promise<RefusedPoint[]> {
    const stepMs = stepWidth(range.step);
    const rows = await this.store.all<{ t: number; code: string; n: number }>(
      sql`SELECT ${sql.raw(`(at / ${stepMs}) * ${stepMs}`)} AS t, code, sum(n) AS n FROM ${perCode(range, range.step === "day" ? "whole days" : "hours")} GROUP BY t, code`,
    );
    const points = new Map<number, RefusedPoint>();
    for (let t = Math.floor(range.from / stepMs) * stepMs; t < range.to; t += stepMs)
      points.set(t, { t, total: 0, byCode: {} });
    for (const r of rows) {
      const point = points.get(r.t);
      if (!point) continue;
      point.total += r.n;
      point.byCode[r.code] = (point.byCode[r.code] ?? 0) + r.n;
    }
    return [...points.values()];
  }

  /** The `limit` clients refused most often in the range ("other" included when it is among them). */
  async top(range: RefusedRange, limit: number): Promise<RefusedClient[]> {
    const rows = await this.store.all<{ kind: RefusedKind; client: string; n: number; last_at: number }>(
      sql`SELECT kind, client, sum(count) AS n, max(last_at) AS last_at FROM refused_hourly WHERE ${where(range)} GROUP BY kind, client ORDER BY n DESC, client LIMIT ${limit}`,
    );
    if (rows.length === 0) return [];
    const clients = sql.join(
      [...new Set(rows.map((r) => r.client))].map((c) => sql`${c}`),
      sql`, `,
    );
    const [codes, keys] = await Promise.all([
      this.store.all<{ kind: string; client: string; code: string; n: number }>(
        sql`SELECT kind, client, code, sum(count) AS n FROM refused_hourly WHERE ${where(range)} AND client IN (${clients}) GROUP BY kind, client, code`,
      ),
      this.store.all<{ id: string; key_prefix: string; email: string }>(
        sql`SELECT id, key_prefix, email FROM api_keys WHERE id IN (${clients})`,
      ),
    ]);
    return rows.map((r) => {
      const own = codes
        .filter((c) => c.kind === r.kind && c.client === r.client)
        .sort((a, b) => b.n - a.n || a.code.localeCompare(b.code));
      const key = r.kind === "key" ? keys.find((k) => k.id === r.client) : undefined;
      return {
        kind: r.kind,
        client: r.client,
        count: r.n,
        lastAt: r.last_at,
        mainCode: own[0]?.code ?? "",
        ...(key ? { key: { prefix: key.key_prefix, email: key.email } } : {}),
      };
    });
  }
}

/**
 * Counts per (time, code) of a range as a subquery (`at`, `code`, `n`): one key's from its hourly
 * rows; everyone's whole UTC days from refused_daily_total and the hours at the edges from the
 * hourly rows (a year of hourly rows at the bound is ~400,000; bench/RESULTS.md).
 */
function perCode(range: RefusedRange, days: "whole days" | "hours"): SQL {
  if (range.keyId !== undefined || days === "hours")
    return sql`(SELECT hour AS at, code, count AS n FROM refused_hourly WHERE ${where(range)}) AS c`;
  const dayFrom = Math.ceil(range.from / DAY_MS) * DAY_MS;
  const dayTo = Math.floor(range.to / DAY_MS) * DAY_MS;
  if (dayTo <= dayFrom)
    return sql`(SELECT hour AS at, code, count AS n FROM refused_hourly WHERE ${where(range)}) AS c`;
  return sql`(SELECT day AS at, code, count AS n FROM refused_daily_total WHERE day >= ${dayFrom} AND day < ${dayTo}
    UNION ALL SELECT hour AS at, code, count AS n FROM refused_hourly WHERE (hour >= ${range.from} AND hour < ${dayFrom}) OR (hour >= ${dayTo} AND hour < ${range.to})) AS c`;
}

/** The WHERE clause of a range (one key's rows through the (kind, client, hour) index). */
function where(range: RefusedRange): SQL {
  const hours = sql`hour >= ${range.from} AND hour < ${range.to}`;
  return range.keyId === undefined ? hours : sql`kind = 'key' AND client = ${range.keyId} AND ${hours}`;
}
