import { Elysia } from "elysia";
import { clientContext } from "../../core/http/client.ts";
import type { KeyRevocation } from "../../data/keys/revoke.ts";
import { staffPage as page, type staffAuth } from "../auth.ts";
import { parseFormBody } from "../form.ts";
import { CsrfForm } from "../model.ts";
import { seeOther } from "../pages.ts";
import { keyPageHref, query } from "./components.ts";
import { keysFilter, keysFilterParams } from "./keys-filter.ts";
import { CONFIRM_REVOKE_ALL, PageQuery, RevokeAllForm } from "./model.ts";
import { rangeName } from "./ranges.ts";

/** The key page a key form returns to: the range and the keys list's filter it was sent from, and `done`. */
function backToKey(id: string, q: Record<string, string | undefined>, done: Record<string, string | number | null>) {
  const range = rangeName(q.range);
  const back = query({ range: range === "24h" ? null : range, ...keysFilterParams(keysFilter(q)), ...done });
  return seeOther(`${keyPageHref(id)}${back}`);
}

/** The forms of a key's page: revoke the key, revoke every key of its address. */
export function keyActionRoutes(deps: { auth: ReturnType<typeof staffAuth>; revocation: KeyRevocation }) {
  return (
    new Elysia({ name: "dashboard-key-actions" })
      .use(deps.auth)
      .use(clientContext)
      .post(
        "/keys/:id/revoke",
        async ({ staff, params, query, clientIp }) => {
          const revoked = await deps.revocation.revoke(params.id, staff.email, clientIp);
          // A key already revoked (or unknown) changes nothing: its page then says what it is.
          return backToKey(params.id, query, { done: revoked ? "revoked" : null });
        },
        { ...page(), parse: parseFormBody, body: CsrfForm, query: PageQuery },
      )
      // The same revocation as `imgpress keys revoke-email`, one key.revoked event per key, by this staff member.
      .post(
        "/keys/:id/revoke-all",
        async ({ staff, params, query, body, clientIp }) => {
          const owner = await deps.revocation.ownerOf(params.id);
          // No such key: its page says so.
          if (owner === null) return backToKey(params.id, query, {});
          if (body.confirm !== CONFIRM_REVOKE_ALL)
            return backToKey(params.id, query, { done: "revoke-all-unconfirmed" });
          const ids = await deps.revocation.revokeAllOf(owner, staff.email, clientIp);
          // The count travels as a number only; the page names the address from the key itself.
          return backToKey(params.id, query, { done: "revoked-all", revoked: ids.length });
        },
        { ...page(), parse: parseFormBody, body: RevokeAllForm, query: PageQuery },
      )
  );
}
