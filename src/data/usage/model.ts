import { t } from "elysia";

/** Longest range a usage query may cover: the retention period (usage/recorder.ts keeps buckets this long). */
export const MAX_RANGE_DAYS = 400;
/** Largest page of the keys table. */
export const MAX_PAGE_SIZE = 100;
/** Highest page number of the keys table a query may ask for. */
export const MAX_PAGE = 1_000_000;
/** Longest keys-table search text, in characters. */
export const MAX_SEARCH_CHARS = 200;
/** Farthest a day's start may be from 00:00 UTC, in minutes (UTC−14 to UTC+14). */
export const MAX_UTC_OFFSET_MINUTES = 840;

/** Columns the keys table may be sorted by (anything else is refused). */
export const KEY_SORTS = [
  "created",
  "lastUsed",
  "conversions",
  "bytesSaved",
  "errors",
  "refused",
  "email",
  "site",
] as const;

// The queries' bounds are checked by the service (usage/service.ts), whichever door asked: the
// staff API's route schemas (internal/model.ts) and the dashboard's filters take them from here.

/** A time range in Unix milliseconds, `from` inclusive, `to` exclusive; both are widened to whole hours. */
export interface UsageRange {
  from: number;
  to: number;
  /** Only this key's usage (default: every key). */
  keyId?: string;
}

/** A series request: the range cut into hours or days. */
export interface SeriesQuery extends UsageRange {
  step: "hour" | "day";
  /** Minutes east of UTC where days start (e.g. 120 for UTC+2); days start at 00:00 UTC by default. */
  utcOffsetMinutes?: number;
}

/** A page of the keys table. */
export interface KeysQuery {
  /** Part of an e-mail address, site URL or key prefix (case-insensitive; % and _ match themselves). */
  search?: string;
  sort?: (typeof KEY_SORTS)[number];
  order?: "asc" | "desc";
  status?: "active" | "revoked" | "all";
  /** 1-based. */
  page: number;
  pageSize: number;
  /**
   * The range the figures (and their sorts) cover, whole hours; absent: all time, i.e. the keys'
   * cumulative counters, with errors and refused requests over the whole retention period.
   */
  range?: { from: number; to: number };
}

const Latency = {
  /** Median pipeline time of successful conversions (ms), null without any. */
  p50Ms: t.Union([t.Number(), t.Null()]),
  p95Ms: t.Union([t.Number(), t.Null()]),
};

// Volumes count successful conversions only; failed attempts are counted by `errors`.
const Volume = {
  /** Successful conversions. */
  conversions: t.Integer(),
  bytesIn: t.Integer(),
  bytesOut: t.Integer(),
  /** bytesIn − bytesOut of successful conversions (negative when outputs grew). */
  bytesSaved: t.Integer(),
  /** Encoder runs the quality guard added to those conversions beyond each preset encode (docs/api.md#quality-guard). */
  guardEncodes: t.Integer(),
};

/** Figures of a range: totals, splits by format and quality, errors by code, latency. */
export const Overview = t.Object({
  from: t.Integer(),
  to: t.Integer(),
  totals: t.Object({
    ...Volume,
    /** Failed attempts (any error code a client received after authenticating). */
    errors: t.Integer(),
    /** bytesSaved / bytesIn × 100, two decimals; null when nothing was converted. */
    savingsPercent: t.Union([t.Number(), t.Null()]),
    ...Latency,
  }),
  byFormat: t.Array(t.Object({ format: t.String(), ...Volume })),
  byQuality: t.Array(t.Object({ quality: t.String(), ...Volume })),
  /** Each (format, quality) pair used, e.g. webp lossy, avif lossless. */
  byFormatQuality: t.Array(t.Object({ format: t.String(), quality: t.String(), ...Volume })),
  errorsByCode: t.Array(t.Object({ code: t.String(), count: t.Integer() })),
});
export type Overview = typeof Overview.static;

/** One step of a series; steps without attempts are present with zeros. */
export const SeriesPoint = t.Object({
  /** Start of the step, Unix ms. */
  t: t.Integer(),
  ...Volume,
  errors: t.Integer(),
  errorsByCode: t.Record(t.String(), t.Integer()),
  ...Latency,
});
export type SeriesPoint = typeof SeriesPoint.static;

/** A series over a range. */
export const Series = t.Object({
  step: t.Union([t.Literal("hour"), t.Literal("day")]),
  from: t.Integer(),
  to: t.Integer(),
  points: t.Array(SeriesPoint),
});
export type Series = typeof Series.static;

/** A key's figures over the keys table's range (successful conversions' volumes; failed attempts; refused requests). */
export const KeyRangeFigures = t.Object({
  conversions: t.Integer(),
  bytesIn: t.Integer(),
  bytesOut: t.Integer(),
  bytesSaved: t.Integer(),
  errors: t.Integer(),
  refused: t.Integer(),
});
export type KeyRangeFigures = typeof KeyRangeFigures.static;

/** A key as the keys table shows it (cumulative counters; never a hash or secret). */
export const KeyListRow = t.Object({
  id: t.String(),
  prefix: t.String(),
  email: t.String(),
  siteUrl: t.String(),
  createdAt: t.Integer(),
  lastUsedAt: t.Union([t.Integer(), t.Null()]),
  revokedAt: t.Union([t.Integer(), t.Null()]),
  status: t.Union([t.Literal("active"), t.Literal("revoked")]),
  ...Volume,
  /** The client address of the conversion that set lastUsedAt (IPv4, or an IPv6 /64); personal data, staff only. */
  lastAddress: t.Union([t.String(), t.Null()]),
  /** The figures over the query's range (the keys table only). */
  inRange: t.Optional(KeyRangeFigures),
});
export type KeyListRow = typeof KeyListRow.static;

/** A page of keys and how many match in all. */
export const KeysPage = t.Object({
  rows: t.Array(KeyListRow),
  total: t.Integer(),
  page: t.Integer(),
  pageSize: t.Integer(),
});
export type KeysPage = typeof KeysPage.static;

/** One key with its figures over a range. */
export const KeyDetail = t.Object({ key: KeyListRow, usage: Overview });
export type KeyDetail = typeof KeyDetail.static;
