import { Elysia } from "elysia";
import type { ConversionGate } from "../../conversion/gate.ts";
import type { Config } from "../../core/config.ts";
import { notFound } from "../../core/errors.ts";
import { clientContext } from "../../core/http/client.ts";
import type { RequestCounter } from "../../core/http/counter.ts";
import { parseJsonBody } from "../../core/http/json.ts";
import { INTERNAL_PREFIX } from "../../core/http/paths.ts";
import type { AuditLog } from "../../data/audit/service.ts";
import type { KeyRevocation } from "../../data/keys/revoke.ts";
import type { UsageQueries } from "../../data/usage/service.ts";
import { staffApi as api, hidden, type staffAuth } from "../auth.ts";
import type { StaffDirectory } from "../directory.ts";
import type { SessionService } from "../sessions.ts";
import { describeSettings } from "../settings-view.ts";
import type { StaffSignIn } from "../signin.ts";
import { AddStaffBody, AuditQuery, KeyQuery, KeysQueryParams, OverviewQuery, SeriesQueryParams } from "./model.ts";
import { auditFilter, liveState, notFoundUnless, usageRange } from "./service.ts";

/** What the internal JSON API reads and changes. */
export interface InternalDeps {
  /** The shared `staffAuth` plugin (one instance for the whole app). */
  auth: ReturnType<typeof staffAuth>;
  gate: ConversionGate;
  requests: RequestCounter;
  staff: StaffDirectory;
  sessions: SessionService;
  signIn: StaffSignIn;
  audit: AuditLog;
  revocation: KeyRevocation;
  usage: UsageQueries;
  config: Config;
  now: () => number;
}

/** The JSON API under /internal/ (allowlisted; /internal/api/… also needs a staff session, see docs/internal.md). */
export function internalRoutes(deps: InternalDeps) {
  return (
    new Elysia({ name: "internal", prefix: INTERNAL_PREFIX })
      .use(peopleRoutes(deps))
      .use(usageRoutes(deps))
      // Unknown API paths answer in JSON, as any unknown route does, not with the dashboard's 404 page.
      .get(
        "/api/*",
        () => {
          throw notFound();
        },
        hidden(),
      )
  );
}

// Who is signed in, the staff list, sessions, the audit trail, settings and the live state.
function peopleRoutes(deps: InternalDeps) {
  const live = () => liveState(deps.gate, deps.requests);
  return new Elysia({ name: "internal-people" })
    .use(deps.auth)
    .use(clientContext)
    .get("/status", live, hidden())
    .get("/api/me", ({ staff }) => ({ email: staff.email, session_id: staff.id, csrf_token: staff.csrf }), api())
    .get("/api/live", live, api())
    .get("/api/settings", () => ({ settings: describeSettings(deps.config, { reveal: false }) }), api())
    .get("/api/staff", async () => ({ staff: await deps.staff.list() }), api())
    .post("/api/staff", async ({ body, staff, clientIp }) => deps.staff.add(body.email, staff.email, clientIp), {
      ...api(),
      parse: parseJsonBody,
      body: AddStaffBody,
    })
    .delete(
      "/api/staff/:email",
      async ({ params, staff, clientIp }) => deps.staff.remove(params.email, staff.email, clientIp),
      api(),
    )
    .get(
      "/api/sessions",
      async ({ staff }) => ({ current: staff.id, sessions: await deps.sessions.list(staff.email) }),
      api(),
    )
    .post(
      "/api/sessions/sign-out-everywhere",
      async ({ staff, clientIp }) => ({ ended: await deps.signIn.signOutEverywhere(staff.email, clientIp) }),
      api(),
    )
    .get(
      "/api/audit",
      async ({ query }) => {
        const { events, nextBefore } = await deps.audit.page(auditFilter(query, deps.now()));
        return { events, next_before: nextBefore };
      },
      { ...api(), query: AuditQuery },
    );
}

// Usage over a period, the keys and one key, and revoking it.
function usageRoutes(deps: InternalDeps) {
  return new Elysia({ name: "internal-usage" })
    .use(deps.auth)
    .use(clientContext)
    .get(
      "/api/overview",
      ({ query }) => deps.usage.overview({ ...usageRange(query, deps.now()), keyId: query.key_id }),
      {
        ...api(),
        query: OverviewQuery,
      },
    )
    .get(
      "/api/usage/series",
      ({ query }) =>
        deps.usage.series({
          ...usageRange(query, deps.now()),
          keyId: query.key_id,
          step: query.step ?? "hour",
          utcOffsetMinutes: query.utc_offset_minutes,
        }),
      { ...api(), query: SeriesQueryParams },
    )
    .get("/api/keys", ({ query }) => deps.usage.keys(keysPage(query, deps.now())), { ...api(), query: KeysQueryParams })
    .get(
      "/api/keys/:id",
      async ({ params, query }) => {
        const range = query.from === undefined && query.to === undefined ? undefined : usageRange(query, deps.now());
        const detail = await deps.usage.key(params.id, range);
        notFoundUnless(detail !== null, "KEY_NOT_FOUND", `No key with id ${params.id}.`);
        return detail;
      },
      { ...api(), query: KeyQuery },
    )
    .post(
      "/api/keys/:id/revoke",
      async ({ params, staff, clientIp }) => {
        const revoked = await deps.revocation.revoke(params.id, staff.email, clientIp);
        notFoundUnless(revoked, "KEY_NOT_FOUND", `No active key with id ${params.id}.`);
        return { revoked: params.id };
      },
      api(),
    );
}

// The keys list's query in the service's terms (page 1 of 50 unless asked).
function keysPage(query: typeof KeysQueryParams.static, now: number) {
  const { search, sort, order, status } = query;
  const range = query.from === undefined && query.to === undefined ? undefined : usageRange(query, now);
  return { search, sort, order, status, page: query.page ?? 1, pageSize: query.page_size ?? 50, range };
}
