/**
 * End to end: the real service as a child process (runtime from E2E_RUNTIME, default bun), a real
 * libSQL file in a temporary data folder, the self-signed certificate it generates (trusted as the
 * only CA, with real verification) and a real SMTP sink that the service's nodemailer talks to.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { type RunningServer, runCli, startServer, useServer } from "../support/server.ts";
import { extractOtp, type SinkMessage, sixDigitRuns } from "../support/smtp.ts";

const { server, sink } = useServer();
/** Every code and key the tests saw, for the "nothing secret in the logs" check. */
const secretsSeen: string[] = [];

const mailTo = (email: string, kind: "code" | "notice") => (m: SinkMessage) =>
  m.to === email && (kind === "code" ? /code/i.test(m.subject) : !/code/i.test(m.subject));

/** Request a code over HTTPS, read it from the mail, exchange it; records every secret it sees. */
async function obtainKeys(email: string, siteUrl?: string) {
  const site = siteUrl === undefined ? {} : { site_url: siteUrl };
  const requested = await server.json("POST", "/v1/plugin/auth/request-otp", { email, ...site });
  expect(requested.status).toBe(200);
  const mail = await sink.waitFor(mailTo(email, "code"));
  const code = extractOtp(mail);
  secretsSeen.push(code);
  const verified = await server.json("POST", "/v1/plugin/auth/verify-otp", { email, otp: code, ...site });
  expect(verified.status).toBe(200);
  secretsSeen.push(verified.body.api_key, verified.body.secret_key);
  return { mail, code, requested, verified };
}

/** The text a reader sees in an HTML body: tags removed, entities decoded. */
function visibleText(html: string): string {
  return html
    .replace(/<[^>]*>/g, "")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}

const occurrences = (haystack: string, needle: string) => haystack.split(needle).length - 1;

function expectErrorBody(body: unknown, code: string) {
  expect(Object.keys(body as object).sort()).toEqual(["code", "error", "message"]);
  expect((body as { code: string }).code).toBe(code);
}

describe("HTTPS", () => {
  test("GET /health → 200 {status: ok} over verified TLS", async () => {
    expect(server.url).toStartWith("https://127.0.0.1:");
    const res = await server.json("GET", "/health");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "ok" });
    expect(res.headers.get("strict-transport-security")).toContain("max-age=");
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
  });

  test("a client that does not trust the generated certificate is refused", async () => {
    await expect(fetch(`${server.url}/health`)).rejects.toThrow();
  });

  test("plain HTTP to the HTTPS port fails", async () => {
    const plain = server.url.replace(/^https:/, "http:");
    const outcome = await fetch(`${plain}/health`).then(
      (res) => `answered ${res.status}`,
      () => "failed",
    );
    expect(outcome).toBe("failed");
  });

  test("an unknown route → 404 JSON {error, message, code: NOT_FOUND}", async () => {
    const res = await server.json("GET", "/v1/no-such-route");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toContain("application/json");
    expectErrorBody(res.body, "NOT_FOUND");
  });
});

describe("request-otp → mail → verify-otp", () => {
  const siteUrl = "https://blog.example.com/landing";

  test("issues an imp_/imps_ key pair for the code read from the mail", async () => {
    const { requested, verified } = await obtainKeys("flow@example.com", siteUrl);
    expect(requested.body).toEqual({ status: "success", message: expect.any(String), expires_in: 900 });
    expect(verified.body).toEqual({
      status: "success",
      api_key: expect.stringMatching(/^imp_/),
      secret_key: expect.stringMatching(/^imps_/),
      message: expect.any(String),
    });
    expect(verified.body.api_key.length).toBeGreaterThanOrEqual(40);
    expect(verified.body.secret_key.length).toBeGreaterThanOrEqual(40);
  });

  test("the code mail: the code appears once as six digits in both bodies; site_url is plain text, never a link", async () => {
    const { mail, code } = await obtainKeys("mail@example.com", siteUrl);
    expect(mail.contentType).toStartWith("multipart/alternative");
    expect(mail.text.length).toBeGreaterThan(0);
    expect(mail.html.length).toBeGreaterThan(0);
    for (const body of [mail.text, mail.html]) {
      expect(sixDigitRuns(body)).toEqual([code]);
      expect(occurrences(body, code)).toBe(1);
    }
    // The reader sees the site…
    expect(mail.text).toContain("blog.example.com/landing");
    expect(visibleText(mail.html)).toContain("blog.example.com/landing");
    // …but nothing a mail client would turn into a link to it.
    expect(mail.html).not.toMatch(/<a[\s>]/i);
    expect(mail.html).not.toMatch(/href\s*=/i);
    for (const body of [mail.text, mail.html, visibleText(mail.html)])
      expect(body).not.toContain("https://blog.example.com");
  });

  test("the owner receives a key-issued notice without the keys in it", async () => {
    const { verified } = await obtainKeys("notice@example.com");
    const notice = await sink.waitFor(mailTo("notice@example.com", "notice"));
    expect(notice.text).toContain(verified.body.api_key.slice(0, 8));
    for (const body of [notice.raw, notice.text, notice.html]) {
      expect(body).not.toContain(verified.body.api_key);
      expect(body).not.toContain(verified.body.secret_key);
    }
  });

  test("nothing secret reaches the log: no code, api_key or secret_key", async () => {
    // A wrong guess and a failed verification, so error paths are logged too.
    const requested = await server.json("POST", "/v1/plugin/auth/request-otp", { email: "logs@example.com" });
    expect(requested.status).toBe(200);
    const code = extractOtp(await sink.waitFor(mailTo("logs@example.com", "code")));
    secretsSeen.push(code);
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, "0");
    expect(
      (await server.json("POST", "/v1/plugin/auth/verify-otp", { email: "logs@example.com", otp: wrong })).status,
    ).toBe(401);
    const verified = await server.json("POST", "/v1/plugin/auth/verify-otp", { email: "logs@example.com", otp: code });
    expect(verified.status).toBe(200);
    secretsSeen.push(verified.body.api_key, verified.body.secret_key);

    // One structured line per request, with the request id and no body. Waited for by that id: the
    // line may still be on its way through the pipe when the answer has arrived.
    const requestId = verified.headers.get("x-request-id");
    expect(requestId).toMatch(/^req_/);
    const requestLine = await server.waitForLog((l) => l.json?.msg === "request" && l.json?.requestId === requestId);
    expect(requestLine.json).toMatchObject({
      method: "POST",
      path: "/v1/plugin/auth/verify-otp",
      status: 200,
      ms: expect.any(Number),
    });
    expect(requestLine.json?.code).toBeUndefined();
    // A refusal's line carries its error code.
    const refusedLine = server.logs.find(
      (l) => l.json?.msg === "request" && l.json?.path === "/v1/plugin/auth/verify-otp" && l.json?.status === 401,
    );
    expect(refusedLine?.json).toMatchObject({ status: 401, code: "INVALID_OTP" });

    const log = server.logs.map((l) => l.raw).join("\n");
    expect(secretsSeen.length).toBeGreaterThanOrEqual(3);
    for (const secret of secretsSeen) {
      // Codes are six digits: match them as a whole token, not inside a longer hex id.
      const pattern = /^\d{6}$/.test(secret) ? new RegExp(`(?<![0-9A-Za-z])${secret}(?![0-9A-Za-z])`) : null;
      if (pattern) expect(log).not.toMatch(pattern);
      else expect(log).not.toContain(secret);
    }
  });
});

describe("API docs", () => {
  test("/v1/docs is an HTML page whose scripts are served by the service itself", async () => {
    const res = await server.fetch("/v1/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    const html = await res.text();
    // No CDN: no absolute or protocol-relative URL anywhere on the page.
    expect(html).not.toMatch(/(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}/i);
    const sources = [...html.matchAll(/<script[^>]*\ssrc="([^"]+)"/g)].map((m) => m[1]!);
    expect(sources.length).toBeGreaterThan(0);
    for (const src of sources) {
      const url = new URL(src, `${server.url}/v1/docs`);
      expect(url.origin).toBe(new URL(server.url).origin);
      const script = await server.fetch(url.pathname);
      expect(script.status).toBe(200);
      expect(script.headers.get("content-type")).toContain("javascript");
      expect((await script.arrayBuffer()).byteLength).toBeGreaterThan(100_000); // the real Scalar bundle, not a stub
    }
  });

  test("the page points the UI at the OpenAPI document it can actually load", async () => {
    const html = await (await server.fetch("/v1/docs")).text();
    const dataUrl = /data-url="([^"]+)"/.exec(html)?.[1];
    expect(dataUrl).toBeDefined();
    // A browser resolves it against the page's own address.
    const resolved = new URL(dataUrl!, `${server.url}/v1/docs`);
    const res = await server.fetch(resolved.pathname);
    expect({ path: resolved.pathname, status: res.status }).toEqual({ path: "/v1/docs/json", status: 200 });
  });

  test("/v1/docs/json lists the public credential routes with schemas, and nothing under /internal", async () => {
    const res = await server.json("GET", "/v1/docs/json");
    expect(res.status).toBe(200);
    const paths = Object.keys(res.body.paths);
    expect(paths).toContain("/v1/plugin/auth/request-otp");
    expect(paths).toContain("/v1/plugin/auth/verify-otp");
    expect(paths.filter((p) => p.startsWith("/internal"))).toEqual([]);
    expect(paths.filter((p) => p.includes("/assets/"))).toEqual([]);
    for (const path of ["/v1/plugin/auth/request-otp", "/v1/plugin/auth/verify-otp"]) {
      const post = res.body.paths[path].post;
      expect(post.requestBody).toBeDefined();
      expect(JSON.stringify(post.responses["200"])).toContain("status");
      expect(JSON.stringify(post.responses["400"])).toContain('"code"');
    }
  });
});

describe("restart on the same data folder", () => {
  test("keeps the database, the certificate and the issued keys", async () => {
    const { verified } = await obtainKeys("restart@example.com");
    const certBefore = await readFile(join(server.dataDir, "tls", "cert.pem"), "utf8");
    await server.restart();
    expect((await server.json("GET", "/health")).status).toBe(200);
    expect(await readFile(join(server.dataDir, "tls", "cert.pem"), "utf8")).toBe(certBefore);

    const listed = await runCli(["keys", "list", "--email", "restart@example.com"], server.env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain("restart@example.com");
    expect(listed.stdout).toContain(verified.body.api_key.slice(0, 12));
    expect(listed.stdout + listed.stderr).not.toContain(verified.body.api_key);
    expect(listed.stdout + listed.stderr).not.toContain(verified.body.secret_key);
  });
});

describe("IMGPRESS_BEHIND_PROXY=true", () => {
  let proxied: RunningServer;
  beforeAll(async () => {
    proxied = await startServer({ env: { IMGPRESS_SMTP_URL: sink.url, IMGPRESS_BEHIND_PROXY: "true" } });
  });
  afterAll(async () => {
    await proxied?.stop();
  });

  test("serves plain HTTP", () => {
    expect(proxied.url).toStartWith("http://127.0.0.1:");
  });

  test.each([
    { name: "no X-Forwarded-Proto", headers: {} as Record<string, string> },
    { name: "X-Forwarded-Proto: http", headers: { "x-forwarded-proto": "http" } as Record<string, string> },
  ])("$name → 403 HTTPS_REQUIRED", async ({ headers }) => {
    for (const [method, path, body] of [
      ["GET", "/health", undefined],
      ["POST", "/v1/plugin/auth/request-otp", { email: "proxy@example.com" }],
    ] as const) {
      const res = await proxied.json(method, path, body, headers);
      expect(res.status).toBe(403);
      expectErrorBody(res.body, "HTTPS_REQUIRED");
    }
  });

  test("X-Forwarded-Proto: https → the service answers", async () => {
    const forwarded = { "x-forwarded-proto": "https" };
    expect((await proxied.json("GET", "/health", undefined, forwarded)).body).toEqual({ status: "ok" });
    const requested = await proxied.json(
      "POST",
      "/v1/plugin/auth/request-otp",
      { email: "proxied@example.com" },
      forwarded,
    );
    expect(requested.status).toBe(200);
    const code = extractOtp(await sink.waitFor(mailTo("proxied@example.com", "code")));
    const verified = await proxied.json(
      "POST",
      "/v1/plugin/auth/verify-otp",
      { email: "proxied@example.com", otp: code },
      forwarded,
    );
    expect(verified.status).toBe(200);
    expect(verified.body.api_key).toStartWith("imp_");
  });
});
