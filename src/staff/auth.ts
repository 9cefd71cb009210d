import { Elysia } from "elysia";
import { timingSafeEqual } from "../core/crypto.ts";
import { AppError } from "../core/errors.ts";
import { reachesInternal } from "../core/http/guards.ts";
import { INTERNAL_PREFIX } from "../core/http/paths.ts";
import { CSRF_FIELD } from "./model.ts";
import type { SessionService, StaffSession } from "./sessions.ts";

/** The session cookie; the `__Host-` prefix makes browsers insist on Secure, Path=/ and no Domain. */
const SESSION_COOKIE = "__Host-imgpress_session";

/** Headers of every /internal/ answer to an allowlisted client (pages and JSON alike). */
const internalHeaders: Record<string, string> = {
  "cache-control": "no-store",
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
  // Not no-referrer: under it browsers send `Origin: null` on form POSTs, and assertSameOrigin
  // would refuse every sign-in and sign-out. same-origin still sends nothing to other sites.
  "referrer-policy": "same-origin",
};

/** Adds `internalHeaders` to every /internal/ response, errors and redirects included. */
export function internalResponseHeaders() {
  return new Elysia({ name: "internal-headers" }).onRequest(({ request, set }) => {
    if (reachesInternal(request)) Object.assign(set.headers, internalHeaders);
  });
}

/**
 * The Set-Cookie value that stores `token` for `maxAgeS` seconds (an empty token clears it). Lax,
 * not Strict: a link to a page from a mail or a chat must open it signed in, and a cross-site
 * write is refused by the Origin check and the session-bound token whatever the cookie does.
 */
export function sessionCookie(token: string, maxAgeS: number): string {
  return `${SESSION_COOKIE}=${token}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=${token ? maxAgeS : 0}`;
}

/** The value of cookie `name` in a Cookie header, or null. */
function readCookie(header: string | null, name: string): string | null {
  for (const part of header?.split(";") ?? []) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/**
 * Refuses a state-changing request that does not come from the service's own pages: its Origin
 * must be this service's origin (or, without Origin, Sec-Fetch-Site must say same-origin).
 */
export function assertSameOrigin(request: Request, behindProxy: boolean): void {
  const url = new URL(request.url);
  // The Host header, not the URL: the runtime wrapper may rewrite a very short host in the URL.
  const own = `${behindProxy ? "https:" : url.protocol}//${request.headers.get("host") ?? url.host}`;
  const origin = request.headers.get("origin");
  const ok = origin !== null ? origin === own : request.headers.get("sec-fetch-site") === "same-origin";
  if (!ok)
    throw new AppError(
      403,
      "FOREIGN_ORIGIN",
      "Refused: this request did not come from this service's own pages (Origin check).",
    );
}

/** True for the methods that may change state. */
function isStateChanging(method: string): boolean {
  return !["GET", "HEAD", "OPTIONS"].includes(method.toUpperCase());
}

/**
 * Route options `staffPage: true` (no session → 303 to /internal/login) and `staffApi: true`
 * (no session → 401 JSON). Both resolve `staff`; on POST/PUT/PATCH/DELETE they also check the
 * Origin and the session's CSRF token (`X-CSRF-Token` header or `csrf` form field) → 403.
 */
export function staffAuth(sessions: SessionService, behindProxy: boolean) {
  const check = async (request: Request, body: unknown, { api }: { api: boolean }): Promise<StaffSession> => {
    if (isStateChanging(request.method)) assertSameOrigin(request, behindProxy);
    const token = readCookie(request.headers.get("cookie"), SESSION_COOKIE) ?? "";
    const session = token ? await sessions.authenticate(token) : null;
    if (!session)
      throw api
        ? new AppError(401, "SIGN_IN_REQUIRED", "No valid staff session: sign in at /internal/login.")
        : signInRedirect(request);
    if (isStateChanging(request.method)) {
      const given = request.headers.get("x-csrf-token") ?? formField(body, CSRF_FIELD) ?? "";
      // session.csrf is the HMAC of this cookie's token, computed once by authenticate.
      if (!timingSafeEqual(session.csrf, given))
        throw new AppError(
          403,
          "CSRF_TOKEN_INVALID",
          "Refused: the CSRF token is missing or does not belong to this session.",
        );
    }
    return session;
  };
  // No plugin name: Elysia would share a named plugin between apps, and its closure with them.
  return new Elysia().macro({
    staffPage: {
      async resolve({ request, body }) {
        return { staff: await check(request, body, { api: false }) };
      },
    },
    staffApi: {
      async resolve({ request, body }) {
        return { staff: await check(request, body, { api: true }) };
      },
    },
  });
}

// Fresh objects per call: Elysia writes the resolved macro hooks into the options it is given.
// `hide` keeps /internal/ routes out of the OpenAPI document even if the docs' exclude list changed.
/** Route options of an /internal/ route outside the public docs. */
export const hidden = () => ({ detail: { hide: true } }) as const;
/** Route options of a staff page (session required, see `staffAuth`). */
export const staffPage = () => ({ staffPage: true, detail: { hide: true } }) as const;
/** Route options of a staff JSON route (session required, see `staffAuth`). */
export const staffApi = () => ({ staffApi: true, detail: { hide: true } }) as const;

/**
 * Where a signed-out visitor goes: the login page, remembering the page to return to. That is the
 * page asked for, or for a form sent after the session ended, the page the form was on (its
 * Referer): the form's own address has no page to show.
 */
function signInRedirect(request: Request): AppError {
  const url = new URL(request.url);
  const next = isStateChanging(request.method) ? formPage(request) : url.pathname + url.search;
  return new AppError(303, "SIGN_IN_REQUIRED", "Sign in first.", {
    location: `${INTERNAL_PREFIX}/login?next=${encodeURIComponent(next)}`,
  });
}

// The Referer's path when it is one under /internal/, else the overview. Only the path is kept (the
// form's Origin was checked already; Referrer-Policy: same-origin sends it along), so it can name
// no other site.
function formPage(request: Request): string {
  try {
    const referer = new URL(request.headers.get("referer") ?? "");
    return safeNext(referer.pathname + referer.search);
  } catch {
    return `${INTERNAL_PREFIX}/`;
  }
}

function formField(body: unknown, name: string): string | undefined {
  const value = typeof body === "object" && body !== null ? (body as Record<string, unknown>)[name] : undefined;
  return typeof value === "string" ? value : undefined;
}

/**
 * The page to land on after sign-in: a same-origin path under /internal/, else 400 INVALID_REDIRECT
 * (never a scheme, host, `//` or backslash that a browser could read as another site).
 */
export function safeNext(next: string | undefined): string {
  if (next === undefined || next === "") return `${INTERNAL_PREFIX}/`;
  const base = "https://imgpress.invalid";
  let url: URL | null = null;
  try {
    url = new URL(next, base);
  } catch {
    url = null;
  }
  const plain = next.startsWith("/") && !next.startsWith("//") && !/[\\\s\p{Cc}]/u.test(next);
  if (
    !plain ||
    url?.origin !== base ||
    !(url.pathname === INTERNAL_PREFIX || url.pathname.startsWith(`${INTERNAL_PREFIX}/`))
  ) {
    throw new AppError(
      400,
      "INVALID_REDIRECT",
      `The page to return to must be a path on this service under ${INTERNAL_PREFIX}/.`,
    );
  }
  return url.pathname + url.search;
}
