import { Elysia } from "elysia";
import { notFound as unknownRoute } from "../../core/errors.ts";
import { html, type SafeHtml } from "../../core/html.ts";
import { clientContext } from "../../core/http/client.ts";
import { INTERNAL_PREFIX } from "../../core/http/paths.ts";
import type { KeyRevocation } from "../../data/keys/revoke.ts";
import { assetAt } from "../assets/index.ts";
import { hidden, staffPage as page, type staffAuth } from "../auth.ts";
import type { StaffDirectory } from "../directory.ts";
import { parseFormBody } from "../form.ts";
import { layout, type Notice, type Viewer } from "../layout.ts";
import { CsrfForm } from "../model.ts";
import { htmlPage, orRefusal, pageResponse, seeOther } from "../pages.ts";
import type { StaffSession } from "../sessions.ts";
import { type StaffTestMail, TEST_MAIL_NOTICES } from "../test-mail.ts";
import { keyActionRoutes } from "./key-actions.ts";
import { keysFilter, keysHref, searchInsteadOfCredential } from "./keys-filter.ts";
import { EmailForm, PageQuery } from "./model.ts";
import { activityPage } from "./pages/activity.ts";
import { keyPage, keysPage } from "./pages/keys.ts";
import { overviewPage } from "./pages/overview.ts";
import { settingsPage } from "./pages/settings.ts";
import type { DashboardService } from "./service.ts";

/** What the dashboard's routes need besides the page data. */
export interface DashboardRouteDeps {
  /** The shared `staffAuth` plugin: `staffPage: true` resolves `staff` and checks Origin + CSRF on POST. */
  auth: ReturnType<typeof staffAuth>;
  dashboard: DashboardService;
  staff: StaffDirectory;
  revocation: KeyRevocation;
  testMail: StaffTestMail;
}

/** Fixed confirmations after a form (never text from the URL: a link must not be able to put words on the page). */
const DONE: Record<string, Notice> = {
  revoked: { kind: "info", text: "Key revoked: its next request is refused." },
  "secret-not-searched": {
    kind: "error",
    text: "That looked like a secret key: it was not searched for, and it is not shown.",
  },
  "api-key-by-prefix": {
    kind: "info",
    text: "That looked like a whole API key: it was searched for by its key prefix.",
  },
  "revoke-all-unconfirmed": {
    kind: "error",
    text: "Nothing was revoked: tick the box to confirm revoking every key of this address.",
  },
  "staff-added": { kind: "info", text: "Staff member added: they can sign in now." },
  "staff-exists": { kind: "info", text: "That address is already a staff member." },
  "staff-removed": { kind: "info", text: "Staff member removed and signed out everywhere." },
  ...TEST_MAIL_NOTICES,
};

/** Who is looking at a page, as the layout shows them. */
function viewer(staff: StaffSession): Viewer {
  return { email: staff.email, csrfToken: staff.csrf };
}

/** The dashboard pages under /internal/ (see docs/internal.md) and their embedded assets. */
export function dashboardRoutes(deps: DashboardRouteDeps) {
  return (
    new Elysia({ name: "dashboard", prefix: INTERNAL_PREFIX })
      .use(deps.auth)
      .use(pageRoutes(deps))
      .use(actionRoutes(deps))
      .get("/assets/:file", ({ params }) => assetResponse(params.file), hidden())
      // A mistyped address or an old bookmark: staff get a page in the dashboard's frame that leads
      // back, not the API's JSON (the JSON API's own unknown paths stay JSON, in src/staff/api/).
      .get("/*", ({ staff }) => htmlPage(pageNotFound(viewer(staff)), 404), page())
  );
}

// The pages staff read: overview, keys, one key, activity, settings, and the live panel's sparklines.
function pageRoutes(deps: DashboardRouteDeps) {
  return new Elysia({ name: "dashboard-pages" })
    .use(deps.auth)
    .get(
      "/",
      async ({ staff, query }) => htmlPage(overviewPage(await deps.dashboard.overview(viewer(staff), query.range))),
      { ...page(), query: PageQuery },
    )
    .get(
      "/live/sparklines",
      ({ set }) => {
        set.headers["cache-control"] = "no-store";
        return htmlFragment(deps.dashboard.sparklines());
      },
      page(),
    )
    .get(
      "/keys",
      async ({ staff, query }) => {
        // A pasted key goes to a URL without it before anything shows it (a page, the address bar, the history).
        const instead = searchInsteadOfCredential(query.q ?? "");
        if (instead) return seeOther(keysHref({ ...keysFilter(query), q: instead.q, page: 1 }, instead.done));
        return htmlPage(keysPage(await deps.dashboard.keys(viewer(staff), query, notice(query.done))));
      },
      { ...page(), query: PageQuery },
    )
    .get(
      "/keys/:id",
      async ({ staff, params, query }) => {
        const view = await deps.dashboard.key(viewer(staff), params.id, query, notice(query.done));
        return view
          ? htmlPage(keyPage(view))
          : notFound("No such key", "There is no key with this id. It may have been typed wrong.");
      },
      { ...page(), query: PageQuery },
    )
    .get(
      "/activity",
      async ({ staff, query }) => htmlPage(activityPage(await deps.dashboard.activity(viewer(staff), query))),
      { ...page(), query: PageQuery },
    )
    .get(
      "/settings",
      async ({ staff, query }) =>
        htmlPage(settingsPage(await deps.dashboard.settings(viewer(staff), staff.id, notice(query.done)))),
      { ...page(), query: PageQuery },
    );
}

// The forms staff send: add or remove a staff member, send themselves a test e-mail (the key forms are in key-actions.ts).
function actionRoutes(deps: DashboardRouteDeps) {
  return new Elysia({ name: "dashboard-actions" })
    .use(deps.auth)
    .use(clientContext)
    .use(keyActionRoutes(deps))
    .post(
      "/settings/staff/add",
      async ({ staff, body, request, clientIp }) => {
        const added = async () =>
          (await deps.staff.add(body.email, staff.email, clientIp)).added ? "staff-added" : "staff-exists";
        return settingsAction(deps, staff, request, added, body.email);
      },
      { ...page(), parse: parseFormBody, body: EmailForm },
    )
    .post(
      "/settings/test-mail",
      // To the session's own address only: the form carries no address.
      ({ staff, request, clientIp }) =>
        settingsAction(deps, staff, request, () => deps.testMail.send(staff.email, clientIp)),
      { ...page(), parse: parseFormBody, body: CsrfForm },
    )
    .post(
      "/settings/staff/remove",
      async ({ staff, body, request, clientIp }) => {
        const removed = async () => (await deps.staff.remove(body.email, staff.email, clientIp), "staff-removed");
        return settingsAction(deps, staff, request, removed);
      },
      { ...page(), parse: parseFormBody, body: EmailForm },
    );
}

/** The confirmation named by `done` in the URL, if it is one of DONE's. */
function notice(done: string | undefined): Notice | null {
  return done !== undefined && Object.hasOwn(DONE, done) ? DONE[done]! : null;
}

function pageNotFound(who: Viewer) {
  return layout({
    title: "Page not found",
    section: null,
    viewer: who,
    body: html`<div class="page-head"><div><h1>Page not found</h1>
<p class="lead">There is no dashboard page at this address. It may have been typed wrong; the sections above lead on.</p></div></div>`,
  });
}

/**
 * Runs a staff change; success redirects (so reloading does not repeat it), a refusal shows the
 * page with the reason and the address `typed` back in the add field, to be corrected.
 */
function settingsAction(
  deps: DashboardRouteDeps,
  staff: StaffSession,
  request: Request,
  run: () => Promise<string>,
  typed = "",
): Promise<Response> {
  return orRefusal(
    request,
    // No #staff fragment: it scrolled the notice at the top of the page out of sight.
    async () => seeOther(`${INTERNAL_PREFIX}/settings?done=${await run()}`),
    async (err) =>
      htmlPage(
        settingsPage(
          await deps.dashboard.settings(viewer(staff), staff.id, { kind: "error", text: err.message }),
          typed,
        ),
        err.status,
      ),
  );
}

/** A piece of a page the page's script puts in place (the live panel's sparklines). */
function htmlFragment(body: SafeHtml): Response {
  return new Response(body.text, {
    headers: { "content-type": "text/html;charset=utf-8", "cache-control": "no-store" },
  });
}

function notFound(title: string, detail: string): Response {
  return pageResponse(title, html`<p>${detail}</p><p><a href="${INTERNAL_PREFIX}/keys">All keys</a></p>`, 404);
}

/** A hashed asset, cacheable for a year: its name changes whenever its content does. */
function assetResponse(file: string): Response {
  const asset = assetAt(file);
  if (!asset) throw unknownRoute();
  return new Response(asset.body, {
    headers: { "content-type": asset.type, "cache-control": "public, max-age=31536000, immutable" },
  });
}
