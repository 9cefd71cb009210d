import { t } from "elysia";
import {
  KEY_SORTS,
  MAX_PAGE,
  MAX_PAGE_SIZE,
  MAX_SEARCH_CHARS,
  MAX_UTC_OFFSET_MINUTES,
} from "../../data/usage/model.ts";

/** Body of POST /internal/api/staff. */
export const AddStaffBody = t.Object({ email: t.String({ maxLength: 320 }) });

/** Query of GET /internal/api/audit: filters and the paging cursor. */
export const AuditQuery = t.Object({
  type: t.Optional(t.String({ maxLength: 64 })),
  staff: t.Optional(t.String({ maxLength: 320, description: "actor address (or cli)" })),
  since: t.Optional(t.String({ description: "ISO date or duration back from now (24h, 7d)" })),
  until: t.Optional(t.String({ description: "ISO date" })),
  before: t.Optional(t.Integer({ minimum: 1, description: "id of the last event of the previous page" })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 500 })),
});

const range = {
  from: t.Optional(
    t.String({ description: "ISO date, Unix ms, or a duration back from now (7d); default 7 days ago" }),
  ),
  to: t.Optional(t.String({ description: "ISO date or Unix ms; default now" })),
};

/** Query of GET /internal/api/overview. */
export const OverviewQuery = t.Object({ ...range, key_id: t.Optional(t.String({ maxLength: 100 })) });

/** Query of GET /internal/api/usage/series. */
export const SeriesQueryParams = t.Object({
  ...range,
  key_id: t.Optional(t.String({ maxLength: 100 })),
  step: t.Optional(t.Union([t.Literal("hour"), t.Literal("day")])),
  utc_offset_minutes: t.Optional(t.Integer({ minimum: -MAX_UTC_OFFSET_MINUTES, maximum: MAX_UTC_OFFSET_MINUTES })),
});

/** Query of GET /internal/api/keys. */
export const KeysQueryParams = t.Object({
  search: t.Optional(t.String({ maxLength: MAX_SEARCH_CHARS })),
  sort: t.Optional(t.Union(KEY_SORTS.map((s) => t.Literal(s)))),
  order: t.Optional(t.Union([t.Literal("asc"), t.Literal("desc")])),
  status: t.Optional(t.Union([t.Literal("active"), t.Literal("revoked"), t.Literal("all")])),
  page: t.Optional(t.Integer({ minimum: 1, maximum: MAX_PAGE })),
  page_size: t.Optional(t.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE })),
  // The range of each row's `inRange` figures and of their sorts; neither given: all time.
  ...range,
});

/** Query of GET /internal/api/keys/:id. */
export const KeyQuery = t.Object(range);
