import { t } from "elysia";
import { CsrfForm } from "../model.ts";

const text = (max = 320) => t.Optional(t.String({ maxLength: max }));

/**
 * The query of every dashboard page. Every value is optional text: the service falls back on
 * anything it does not know, so a mistyped bookmark still opens a page; only absurd lengths are refused.
 */
export const PageQuery = t.Object({
  range: text(40),
  /** The keys table's range (the key page's own is `range`, so both survive a round trip). */
  period: text(40),
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
  /** How many keys "revoke all keys of this address" revoked (a number only: the page names the address itself). */
  revoked: text(40),
});

/** The add- and remove-staff forms: one address and the CSRF token. */
export const EmailForm = t.Object({ email: t.String({ maxLength: 320 }), csrf: text(200) });

/** The value the "revoke all keys of this address" checkbox sends when ticked. */
export const CONFIRM_REVOKE_ALL = "yes";

/** The revoke-all form: the CSRF token and the confirmation checkbox (absent when not ticked). */
export const RevokeAllForm = t.Object({ ...CsrfForm.properties, confirm: t.Optional(t.String({ maxLength: 10 })) });
