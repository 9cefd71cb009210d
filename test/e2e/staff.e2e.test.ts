/**
 * End to end: the staff door of the real service over HTTPS (real certificate verification), with
 * the real SMTP sink and the real database file, driven by the real CLI: staff added on the command
 * line signs in with an e-mailed code, revokes a key through the JSON API, and the audit trail
 * records it all. The allowlist is checked against a second server that does not trust loopback.
 */
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { convertForm } from "../support/convert-helpers.ts";
import { photo } from "../support/images.ts";
import { runCli, startServer, useServer } from "../support/server.ts";
import { extractOtp } from "../support/smtp.ts";
import { staffSignInOverHttps } from "../support/staff.ts";

const { server, sink } = useServer();
const STAFF = "ops@example.com";

/** The session of the sign-in test, reused: the per-address limit allows one code a minute. */
let session: { cookie: string; csrf: string };

/** A same-origin form post, as the login page's browser would send it. */
const post = (path: string, fields: Record<string, string>, cookie = "") =>
  server.fetch(path, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: server.url, ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(fields).toString(),
  });

const signIn = (email: string) => staffSignInOverHttps(server, sink, email);

async function obtainKey(email: string): Promise<string> {
  const before = sink.messages.length;
  expect((await server.json("POST", "/v1/plugin/auth/request-otp", { email })).status).toBe(200);
  const code = extractOtp(
    await sink.waitFor(
      (m) => sink.messages.indexOf(m) >= before && m.envelopeTo.includes(email) && /code/i.test(m.subject),
    ),
  );
  return (await server.json("POST", "/v1/plugin/auth/verify-otp", { email, otp: code })).body.api_key;
}

async function convert(apiKey: string): Promise<number> {
  const body = await convertForm(await photo(32, 24));
  const res = await server.fetch("/v1/plugin/convert", {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": body.contentType },
    body: body.bytes as Uint8Array<ArrayBuffer>,
  });
  await res.arrayBuffer();
  return res.status;
}

describe("staff over HTTPS", () => {
  test("with no staff the door explains how to add one; the CLI adds one", async () => {
    const page = await (await server.fetch("/internal/login")).text();
    expect(page).toContain("imgpress staff add");
    const added = await runCli(["staff", "add", STAFF], server.env);
    expect(added.code).toBe(0);
    const listed = await runCli(["staff", "list"], server.env);
    expect(listed.stdout).toContain(STAFF);
    expect(await (await server.fetch("/internal/login")).text()).toContain('type="email" autocomplete="email"');
  });

  test("sign in, revoke a key through the API → 401 on its next conversion, all audited", async () => {
    const s = (session = await signIn(STAFF));
    const home = await server.fetch("/internal/", { headers: { cookie: s.cookie }, redirect: "manual" });
    expect(home.status).toBe(200);
    expect(home.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(home.headers.get("referrer-policy")).toBe("same-origin");
    expect(home.headers.get("strict-transport-security")).toBeTruthy();

    const apiKey = await obtainKey("owner@example.com");
    expect(await convert(apiKey)).toBe(200);
    const keys = JSON.parse((await runCli(["keys", "list", "--json"], server.env)).stdout) as { id: string }[];
    const revoke = (headers: Record<string, string>) =>
      server.fetch(`/internal/api/keys/${keys[0]!.id}/revoke`, {
        method: "POST",
        headers: { cookie: s.cookie, ...headers },
      });
    expect((await revoke({ origin: "https://evil.example", "x-csrf-token": s.csrf })).status).toBe(403);
    expect((await revoke({ origin: server.url })).status).toBe(403);
    expect(await convert(apiKey)).toBe(200);
    expect((await revoke({ origin: server.url, "x-csrf-token": s.csrf })).status).toBe(200);
    expect(await convert(apiKey)).toBe(401);

    const audit = await runCli(["audit", "--since", "1h", "--json"], server.env);
    const events = JSON.parse(audit.stdout) as { type: string; actor: string }[];
    expect(events.map((e) => `${e.type} ${e.actor}`).reverse()).toEqual([
      "staff.added cli",
      `staff.sign_in ${STAFF}`,
      "key.issued owner@example.com",
      `key.revoked ${STAFF}`,
    ]);
  });

  test("removing a staff member on the CLI ends their sessions at once", async () => {
    const added = await server.fetch("/internal/api/staff", {
      method: "POST",
      headers: {
        cookie: session.cookie,
        origin: server.url,
        "x-csrf-token": session.csrf,
        "content-type": "application/json",
      },
      body: JSON.stringify({ email: "colleague@example.com" }),
    });
    expect(await added.json()).toEqual({ email: "colleague@example.com", added: true });
    const colleague = await signIn("colleague@example.com");
    expect((await server.fetch("/internal/api/me", { headers: { cookie: colleague.cookie } })).status).toBe(200);
    expect((await runCli(["staff", "remove", "colleague@example.com"], server.env)).code).toBe(0);
    expect((await server.fetch("/internal/api/me", { headers: { cookie: colleague.cookie } })).status).toBe(401);
  });

  test("a cookie replayed after sign-out opens nothing", async () => {
    const out = await post("/internal/logout", { csrf: session.csrf }, session.cookie);
    expect(out.status).toBe(303);
    expect(out.headers.get("set-cookie")).toContain("Max-Age=0");
    expect((await server.fetch("/internal/api/me", { headers: { cookie: session.cookie } })).status).toBe(401);
    const audit = JSON.parse((await runCli(["audit", "--type", "staff.sign_out", "--json"], server.env)).stdout) as {
      actor: string;
    }[];
    expect(audit.map((e) => e.actor)).toEqual([STAFF]);
  });

  test("a bad CIDR entry stops start-up naming it", async () => {
    const res = await runCli(["migrate"], { ...server.env, IMGPRESS_INTERNAL_ALLOW: "127.0.0.1, 10.0.0.0/33" });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain("IMGPRESS_INTERNAL_ALLOW");
    expect(res.stderr).toContain("10.0.0.0/33");
  });
});

describe("outside the allowlist", () => {
  test("every /internal/ spelling answers what an unknown route answers", async () => {
    const other = await startServer({ env: { IMGPRESS_INTERNAL_ALLOW: "10.9.9.9, fd00::/8" } });
    try {
      const answer = async (path: string, method = "GET") => {
        const res = await other.fetch(path, { method, redirect: "manual" });
        const headers = [...res.headers].filter(([k]) => k !== "x-request-id" && k !== "date");
        return { status: res.status, headers, body: await res.text() };
      };
      const unknown = await answer("/no/such/route");
      expect(unknown.status).toBe(404);
      for (const path of [
        "/internal/login",
        "/INTERNAL/login",
        "/%69nternal/login",
        "//internal//login",
        "/internal/status",
        "/internal/api/me",
        "/internal/status%2f..%2f..",
        "/internal/keys/x%2f..%2f..%2f..",
      ]) {
        for (const method of ["GET", "POST", "DELETE"])
          expect({ path, method, ...(await answer(path, method)) }).toEqual({
            path,
            method,
            ...(await answer("/no/such/route", method)),
          });
      }
      // Sent as written (fetch would resolve the dots first): Deno hands such a target over unresolved.
      const caFile = join(other.dataDir, "ca.pem");
      writeFileSync(caFile, other.ca);
      const raw = (path: string) => {
        const r = spawnSync(
          "curl",
          ["-sS", "--path-as-is", "--cacert", caFile, "-w", "\n%{http_code}", `${other.url}${path}`],
          { encoding: "utf8" },
        );
        return r.stdout.replace(/"requestId":"[^"]*"/, "");
      };
      // Each answers what the path it resolves to answers (Bun resolves before routing), never an /internal/ route.
      for (const path of [
        "/internal/..",
        "/internal/x/../..",
        "/internal/%2e%2e",
        "/internal/x/%2e%2e/%2e%2e",
        "/internal/api/x/../..",
        "/internal/../no/such/route",
      ]) {
        const resolved = new URL(path, "https://imgpress.invalid").pathname;
        expect({ path, answer: raw(path) }).toEqual({ path, answer: raw(resolved) });
        expect(raw(path)).not.toContain("SIGN_IN_REQUIRED");
      }
    } finally {
      await other.stop();
    }
  });
});
