// The keys table's query: filter, search, sort by a column or a range figure, one page.
import { type SQL, sql } from "drizzle-orm";
import { DAY_MS, HOUR_MS } from "../../core/durations.ts";
import { storedSpelling } from "../../core/email.ts";
import type { Store } from "../db/index.ts";
import { checkRange, invalid } from "./checks.ts";
import { figuresOf, type HourRange, type RawFigures, rangeFigures } from "./key-ranges.ts";
import {
  KEY_SORTS,
  type KeyListRow,
  type KeysPage,
  type KeysQuery,
  MAX_PAGE,
  MAX_PAGE_SIZE,
  MAX_RANGE_DAYS,
  MAX_SEARCH_CHARS,
} from "./model.ts";

type KeySort = (typeof KEY_SORTS)[number];

/** The ORDER BY expression of each sort on a key's own columns: user input only ever picks one of these. */
const COLUMN_SORTS: Partial<Record<KeySort, string>> = {
  created: "k.created_at",
  lastUsed: "k.last_used_at",
  email: "k.email",
  site: "k.site_url",
};

/** The ORDER BY expression of each range figure, over the subquery `f` (a key without rows in the range counts 0). */
const RANGE_SORTS: Partial<Record<KeySort, string>> = {
  conversions: "coalesce(f.conversions, 0)",
  bytesSaved: "coalesce(f.bytes_in - f.bytes_out, 0)",
  errors: "coalesce(f.errors, 0)",
  refused: "coalesce(f.refused, 0)",
};

/** All time: conversions and bytes saved are the keys' cumulative counters, read without the subquery. */
const ALL_TIME_SORTS: Partial<Record<KeySort, string>> = {
  conversions: "k.conversions",
  bytesSaved: "k.bytes_in - k.bytes_out",
};

/** A key's columns as stored. */
export interface RawKey {
  id: string;
  key_prefix: string;
  email: string;
  site_url: string;
  created_at: number;
  last_used_at: number | null;
  last_address: string | null;
  revoked_at: number | null;
  conversions: number;
  bytes_in: number;
  bytes_out: number;
  guard_encodes: number;
}

/** The columns of `RawKey`, from api_keys as `k`. */
export const KEY_COLUMNS = sql.raw(
  "k.id, k.key_prefix, k.email, k.site_url, k.created_at, k.last_used_at, k.last_address, k.revoked_at, k.conversions, k.bytes_in, k.bytes_out, k.guard_encodes",
);

/** A stored key as the keys table and a key's page show it. */
export function keyRow(r: RawKey): KeyListRow {
  return {
    id: r.id,
    prefix: r.key_prefix,
    email: r.email,
    siteUrl: r.site_url,
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
    lastAddress: r.last_address,
    revokedAt: r.revoked_at,
    status: r.revoked_at === null ? "active" : "revoked",
    conversions: r.conversions,
    bytesIn: r.bytes_in,
    bytesOut: r.bytes_out,
    bytesSaved: r.bytes_in - r.bytes_out,
    guardEncodes: r.guard_encodes,
  };
}

/**
 * One page of the keys table and the match count. Sorting by a range figure ranks every matching
 * key over the range (usage_daily keeps that to a row per busy key and day); any other sort reads
 * the figures of the page's keys only.
 */
export async function keysPage(store: Store, query: KeysQuery, now: number): Promise<KeysPage> {
  const { sort, order, where } = checkedQuery(query);
  const allTime = query.range === undefined;
  // All time: errors and refused requests over everything kept (the retention period).
  const retentionTo = Math.ceil(now / HOUR_MS) * HOUR_MS;
  const range: HourRange = query.range
    ? checkRange(query.range.from, query.range.to, HOUR_MS, 0)
    : { from: retentionTo - MAX_RANGE_DAYS * DAY_MS, to: retentionTo };
  const counterSort = allTime ? ALL_TIME_SORTS[sort] : undefined;
  const figureSort = counterSort ? undefined : RANGE_SORTS[sort];
  const [counted] = await store.all<{ total: number }>(sql`SELECT count(*) AS total FROM api_keys k ${where}`);
  const join = figureSort ? sql`LEFT JOIN ${figuresOf(range)} ON f.key_id = k.id` : sql``;
  const orderBy = sql.raw(counterSort ?? figureSort ?? COLUMN_SORTS[sort] ?? "k.created_at");
  // NULLS FIRST/LAST: a never-used key sorts as the oldest on both engines (PostgreSQL's default is the opposite).
  const rows = await store.all<RawKey>(
    sql`SELECT ${KEY_COLUMNS} FROM api_keys k ${join} ${where} ORDER BY ${orderBy} ${sql.raw(order === "asc" ? "ASC NULLS FIRST" : "DESC NULLS LAST")}, k.id ${sql.raw(order)} LIMIT ${query.pageSize} OFFSET ${(query.page - 1) * query.pageSize}`,
  );
  const figures = await pageFigures(store, range, rows);
  return {
    rows: rows.map((r) => {
      const row = keyRow(r);
      const inRange = rangeFigures(figures.get(r.id));
      // All time counts conversions and bytes by the keys' counters, which outlive the buckets.
      if (allTime)
        Object.assign(inRange, {
          conversions: row.conversions,
          bytesIn: row.bytesIn,
          bytesOut: row.bytesOut,
          bytesSaved: row.bytesSaved,
        });
      return { ...row, inRange };
    }),
    total: counted?.total ?? 0,
    page: query.page,
    pageSize: query.pageSize,
  };
}

// The range figures of a page's keys, by key id.
async function pageFigures(store: Store, range: HourRange, rows: RawKey[]): Promise<Map<string, RawFigures>> {
  if (rows.length === 0) return new Map();
  const figures = await store.all<RawFigures & { key_id: string }>(
    sql`SELECT * FROM ${figuresOf(
      range,
      rows.map((r) => r.id),
    )}`,
  );
  return new Map(figures.map((f) => [f.key_id, f]));
}

// The query's sort, order and WHERE clause, every bound checked (user input never becomes SQL).
function checkedQuery(query: KeysQuery): { sort: KeySort; order: "asc" | "desc"; where: SQL } {
  const sort = query.sort ?? "created";
  if (!KEY_SORTS.includes(sort)) throw invalid(`sort must be one of ${KEY_SORTS.join(", ")}`);
  const order = query.order ?? "desc";
  if (order !== "asc" && order !== "desc") throw invalid("order must be asc or desc");
  const status = query.status ?? "all";
  if (!["active", "revoked", "all"].includes(status)) throw invalid("status must be active, revoked or all");
  if (!Number.isInteger(query.page) || query.page < 1 || query.page > MAX_PAGE)
    throw invalid(`the page must be a whole number from 1 to ${MAX_PAGE}`);
  if (!Number.isInteger(query.pageSize) || query.pageSize < 1 || query.pageSize > MAX_PAGE_SIZE)
    throw invalid(`the page size must be a whole number from 1 to ${MAX_PAGE_SIZE}`);
  const search = (query.search ?? "").trim();
  if (search.length > MAX_SEARCH_CHARS) throw invalid(`the search may be at most ${MAX_SEARCH_CHARS} characters`);
  const conditions: SQL[] = [];
  if (status === "active") conditions.push(sql`k.revoked_at IS NULL`);
  if (status === "revoked") conditions.push(sql`k.revoked_at IS NOT NULL`);
  if (search) conditions.push(searchCondition(search));
  return { sort, order, where: conditions.length ? sql`WHERE ${sql.join(conditions, sql` AND `)}` : sql`` };
}

// Part of the e-mail, site or prefix; also as addresses are stored (a domain typed in Unicode is kept in its ASCII form).
function searchCondition(search: string): SQL {
  const patterns = [...new Set([search, storedSpelling(search)])].map(
    (text) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`,
  );
  const matches = patterns.map(
    (p) =>
      sql`lower(k.email) LIKE ${p} ESCAPE '\\' OR lower(k.site_url) LIKE ${p} ESCAPE '\\' OR lower(k.key_prefix) LIKE ${p} ESCAPE '\\'`,
  );
  return sql`(${sql.join(matches, sql` OR `)})`;
}
