/**
 * Staff sign-in for unit tests over `app.handle`: posts the two forms as a browser on the same
 * origin would, reads the code from the sink and returns the session cookie and its CSRF token.
 *
 *   const s = await staffSignIn(h, "boss@example.com");
 *   await h.request("POST", "/internal/api/keys/x/revoke", staffJson(s));
 */
import type { Harness, RequestOptions, TestResponse } from "./harness.ts";
import type { RunningServer } from "./server.ts";
import { extractOtp, type SmtpSink } from "./smtp.ts";

/** The origin of `h.request` URLs (http://localhost). */
export const OWN_ORIGIN = "http://localhost";
/** The allowlisted client address the helpers use. */
export const LOOPBACK = "127.0.0.1";

/** A signed-in staff browser. */
export interface StaffLogin {
  email: string;
  /** `__Host-imgpress_session=…`, ready for a Cookie header. */
  cookie: string;
  csrf: string;
}

/** Request options for a same-origin form post. */
export function form(
  fields: Record<string, string>,
  extra: Partial<RequestOptions> & { headers?: Record<string, string> } = {},
): RequestOptions {
  return {
    ip: LOOPBACK,
    ...extra,
    body: new URLSearchParams(fields).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded", origin: OWN_ORIGIN, ...extra.headers },
  };
}

/** Request options for a signed-in same-origin API call (JSON body optional). */
export function staffJson(s: StaffLogin, json?: unknown, headers: Record<string, string> = {}): RequestOptions {
  return { ip: LOOPBACK, json, headers: { cookie: s.cookie, origin: OWN_ORIGIN, "x-csrf-token": s.csrf, ...headers } };
}

/** Waits for the next code mail to `email` after `before` messages and returns the code. */
export async function nextCode(h: Harness, email: string, before: number): Promise<string> {
  const mail = await h.smtp.waitFor((m) => h.smtp.messages.indexOf(m) >= before && m.envelopeTo.includes(email));
  return extractOtp(mail);
}

/** Posts the e-mail form, waits for the mail, posts the code; returns the code answer (303 on success). */
export async function staffCodeFlow(
  h: Harness,
  email: string,
  next?: string,
): Promise<{ res: TestResponse; code: string }> {
  const before = h.smtp.messages.length;
  const asked = await h.request("POST", "/internal/login", form({ email, ...(next ? { next } : {}) }));
  if (asked.status !== 200) throw new Error(`POST /internal/login answered ${asked.status}: ${asked.text}`);
  const code = await nextCode(h, email, before);
  return {
    res: await h.request("POST", "/internal/login/code", form({ email, code, ...(next ? { next } : {}) })),
    code,
  };
}

/** The whole sign-in; returns the cookie and the CSRF token (read from GET /internal/api/me). */
export async function staffSignIn(h: Harness, email: string): Promise<StaffLogin> {
  const { res } = await staffCodeFlow(h, email);
  const cookie = res.headers.get("set-cookie")?.split(";")[0];
  if (res.status !== 303 || !cookie) throw new Error(`sign-in of ${email} answered ${res.status}: ${res.text}`);
  const me = await h.request("GET", "/internal/api/me", { ip: LOOPBACK, headers: { cookie } });
  return { email, cookie, csrf: me.body.csrf_token };
}

/** The same sign-in against a running server over HTTPS (e2e tests, the dashboard bench): the two forms, then GET /internal/api/me for the CSRF token. */
export async function staffSignInOverHttps(
  server: Pick<RunningServer, "url" | "fetch">,
  sink: SmtpSink,
  email: string,
): Promise<StaffLogin> {
  const origin = new URL(server.url).origin;
  const post = (path: string, fields: Record<string, string>) =>
    server.fetch(path, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin },
      body: new URLSearchParams(fields).toString(),
    });
  const before = sink.messages.length;
  const asked = await post("/internal/login", { email });
  await asked.arrayBuffer();
  if (asked.status !== 200) throw new Error(`POST /internal/login answered ${asked.status}`);
  const mail = await sink.waitFor((m) => sink.messages.indexOf(m) >= before && m.envelopeTo.includes(email));
  const res = await post("/internal/login/code", { email, code: extractOtp(mail) });
  await res.arrayBuffer();
  const cookie = res.headers.get("set-cookie")?.split(";")[0];
  if (res.status !== 303 || !cookie) throw new Error(`sign-in of ${email} answered ${res.status}`);
  const me = await server.fetch("/internal/api/me", { headers: { cookie } });
  return { email, cookie, csrf: ((await me.json()) as { csrf_token: string }).csrf_token };
}
