import { t } from "elysia";

/** Longest range a usage query may cover: the retention period. */
export const MAX_RANGE_DAYS = 400;
/** Largest page of the keys table. */
export const MAX_PAGE_SIZE = 100;

/** Columns the keys table may be sorted by (anything else is refused). */
export const KEY_SORTS = ["created", "lastUsed", "conversions", "bytesSaved", "email", "site"] as const;

/** A time range in Unix milliseconds, `from` inclusive, `to` exclusive; both are widened to whole hours. */
export const UsageRange = t.Object({
  from: t.Integer(),
  to: t.Integer(),
  /** Only this key's usage (default: every key). */
  keyId: t.Optional(t.String({ maxLength: 100 })),
});
export type UsageRange = typeof UsageRange.static;

/** A series request: the range cut into hours or days. */
export const SeriesQuery = t.Composite([
  UsageRange,
  t.Object({
    step: t.Union([t.Literal("hour"), t.Literal("day")]),
    /** Minutes east of UTC where days start (e.g. 120 for UTC+2); days start at 00:00 UTC by default. */
    utcOffsetMinutes: t.Optional(t.Integer({ minimum: -840, maximum: 840 })),
  }),
]);
export type SeriesQuery = typeof SeriesQuery.static;

/** A page of the keys table. */
export const KeysQuery = t.Object({
  /** Part of an e-mail address, site URL or key prefix (case-insensitive; % and _ match themselves). */
  search: t.Optional(t.String({ maxLength: 200 })),
  sort: t.Optional(t.Union(KEY_SORTS.map((s) => t.Literal(s)))),
  order: t.Optional(t.Union([t.Literal("asc"), t.Literal("desc")])),
  status: t.Optional(t.Union([t.Literal("active"), t.Literal("revoked"), t.Literal("all")])),
  /** 1-based. */
  page: t.Integer({ minimum: 1, maximum: 1_000_000 }),
  pageSize: t.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE }),
});
export type KeysQuery = typeof KeysQuery.static;

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
export const Series = t.Object({ step: t.Union([t.Literal("hour"), t.Literal("day")]), from: t.Integer(), to: t.Integer(), points: t.Array(SeriesPoint) });
export type Series = typeof Series.static;

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
});
export type KeyListRow = typeof KeyListRow.static;

/** A page of keys and how many match in all. */
export const KeysPage = t.Object({ rows: t.Array(KeyListRow), total: t.Integer(), page: t.Integer(), pageSize: t.Integer() });
export type KeysPage = typeof KeysPage.static;

/** One key with its figures over a range. */
export const KeyDetail = t.Object({ key: KeyListRow, usage: Overview });
export type KeyDetail = typeof KeyDetail.static;
