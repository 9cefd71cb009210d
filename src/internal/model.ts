import { t } from "elysia";

/** Body of POST /internal/api/staff. */
export const AddStaffBody = t.Object({ email: t.String({ maxLength: 320 }) });

/** Query of GET /internal/api/audit: filters and the paging cursor. */
export const AuditQuery = t.Object({
  type: t.Optional(t.String({ maxLength: 64 })),
  staff: t.Optional(t.String({ maxLength: 320, description: "actor address (or cli)" })),
  since: t.Optional(t.String({ description: "ISO date or duration back from now (24h, 7d)" })),
  until: t.Optional(t.String({ description: "ISO date" })),
  before: t.Optional(t.Numeric({ minimum: 1, description: "id of the last event of the previous page" })),
  limit: t.Optional(t.Numeric({ minimum: 1, maximum: 500 })),
});
