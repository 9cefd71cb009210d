import { t } from "elysia";

const text = (max = 320) => t.Optional(t.String({ maxLength: max }));

/**
 * The query of every dashboard page. Every value is optional text: the service falls back on
 * anything it does not know, so a mistyped bookmark still opens a page; only absurd lengths are refused.
 */
export const PageQuery = t.Object({
  range: text(40),
  q: text(200),
  status: text(40),
  sort: text(40),
  order: text(40),
  page: text(40),
  type: text(64),
  staff: text(),
  from: text(40),
  to: text(40),
  before: text(40),
  done: text(40),
});

/** The add- and remove-staff forms: one address and the CSRF token. */
export const EmailForm = t.Object({ email: t.String({ maxLength: 320 }), csrf: text(200) });
