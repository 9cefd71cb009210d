/**
 * Operations end to end, on the real service over HTTPS (Bun, or Deno with E2E_RUNTIME=deno):
 * /internal/metrics after real conversions checked by `promtool check metrics` and counted exactly,
 * /health/ready, the `imgpress health` command, and routing with a one-character Host header.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { connect } from "node:tls";
import { type Body, convertForm, type Keys, readResponse } from "../support/convert-helpers.ts";
import * as img from "../support/images.ts";
import { delta, parseMetrics, promtool } from "../support/metrics.ts";
import { until } from "../support/ops.ts";
import { e2eRuntime, runCli, startServer, useServer } from "../support/server.ts";
import { extractOtp } from "../support/smtp.ts";

const { server, sink } = useServer();
let keys: Keys;
const EMAIL = "ops-e2e@example.com";

beforeAll(async () => {
  expect((await server.json("POST", "/v1/plugin/auth/request-otp", { email: EMAIL })).status).toBe(200);
  const mail = await sink.waitFor((m) => m.envelopeTo.includes(EMAIL));
  const verified = await server.json("POST", "/v1/plugin/auth/verify-otp", { email: EMAIL, otp: extractOtp(mail) });
  expect(verified.status).toBe(200);
  keys = verified.body;
  // The key notice is mailed after the answer, and counted once the mail server has taken it: the
  // sink holds it a moment before the service's count says so.
  await until(
    async () => parseMetrics(await scrape()).get('imgpress_mail_total{outcome="sent"}') === 2,
    10_000,
    "the key notice to be counted",
  );
}, 60_000);

async function scrape(): Promise<string> {
  const res = await server.fetch("/internal/metrics");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain");
  return res.text();
}

const convert = (body: Body, apiKey: string) =>
  server
    .fetch("/v1/plugin/convert", {
      method: "POST",
      body: body.bytes as Uint8Array<ArrayBuffer>,
      headers: { "content-type": body.contentType, authorization: `Bearer ${apiKey}` },
    })
    .then(readResponse);

describe("/internal/metrics", () => {
  test("after real conversions it passes promtool and every counter moved by exactly what happened", async () => {
    const before = parseMetrics(await scrape());
    const image = await img.photo(320, 240);
    const body = await convertForm(image, { format: "webp", quality: "lossy" });
    const N = 3;
    let bytesOut = 0;
    for (let i = 0; i < N; i++) {
      const res = await convert(body, keys.api_key);
      expect(res.status).toBe(200);
      bytesOut += res.bytes.length;
    }
    expect((await convert(body, "imp_not-a-key")).status).toBe(401);
    expect((await server.fetch("/no/such/path-with-a-secret")).status).toBe(404);
    const text = await scrape();
    const checked = await promtool(["metrics"], text);
    expect(checked).toEqual({ code: 0, output: "" });

    const after = parseMetrics(text);
    const grew = (key: string) => delta(before, after, key);
    expect(grew('imgpress_conversions_total{format="webp",quality="lossy",outcome="ok"}')).toBe(N);
    expect(grew('imgpress_http_requests_total{method="POST",route="/v1/plugin/convert",status="200"}')).toBe(N);
    expect(grew('imgpress_http_requests_total{method="POST",route="/v1/plugin/convert",status="401"}')).toBe(1);
    expect(grew('imgpress_http_requests_total{method="GET",route="unmatched",status="404"}')).toBe(1);
    expect(grew('imgpress_auth_failures_total{reason="INVALID_API_KEY"}')).toBe(1);
    expect(grew('imgpress_conversion_duration_seconds_count{format="webp",quality="lossy"}')).toBe(N);
    expect(grew("imgpress_queue_wait_seconds_count")).toBe(N);
    expect(grew("imgpress_conversion_bytes_in_total")).toBe(N * image.length);
    expect(grew("imgpress_conversion_bytes_out_total")).toBe(bytesOut);
    // The OTP of beforeAll: one request answered, one key issued, two mails (code, key notice) accepted.
    expect(after.get('imgpress_otp_requests_total{outcome="sent"}')).toBe(1);
    expect(after.get('imgpress_otp_verifications_total{outcome="issued"}')).toBe(1);
    expect(after.get('imgpress_mail_total{outcome="sent"}')).toBe(sink.messages.length);
    expect(sink.messages.length).toBe(2);
    expect(after.get("imgpress_conversions_in_progress")).toBe(0);
    expect(after.get("imgpress_conversion_slots_busy")).toBe(0);
    expect(after.get("process_resident_memory_bytes")).toBeGreaterThan(10_000_000);
    expect(after.get("process_start_time_seconds")).toBeGreaterThan(Date.now() / 1000 - 600);
    // The served certificate's end, to the second, so an alert can fire before clients refuse it.
    expect(after.get("imgpress_tls_certificate_expiry_timestamp_seconds")).toBe(
      Date.parse(new X509Certificate(server.ca).validTo) / 1000,
    );
    const info = [...after.keys()].find((k) => k.startsWith("imgpress_build_info"));
    expect(info).toMatch(/runtime="(bun|deno) [\d.]+",sharp="[\d.]+",libvips="[\d.]+"/);
    // Bounded labels: no raw path, address, key or e-mail ever becomes a label value.
    for (const secret of ["path-with-a-secret", EMAIL, keys.api_key, "imp_not-a-key", "127.0.0.1"])
      expect(text).not.toContain(secret);
  }, 60_000);
});

describe("health", () => {
  test("/health/ready answers 200 with every check ok", async () => {
    const res = await server.json("GET", "/health/ready");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: "ready",
      checks: { database: "ok", storage: "ok", libvips: "ok", draining: "ok" },
    });
  });

  test("imgpress health exits 0 against the running instance and 1 where nothing answers", async () => {
    const ok = await runCli(["health", "--url", `https://127.0.0.1:${server.port}/health/ready`]);
    expect({ code: ok.code, out: ok.stdout }).toMatchObject({
      code: 0,
      out: expect.stringContaining('"status":"ready"'),
    });
    // Without --url it probes the configured port on this host.
    expect((await runCli(["health"], { ...server.env, IMGPRESS_PORT: String(server.port) })).code).toBe(0);
    const closed = await runCli(["health", "--url", "https://127.0.0.1:1/health/ready"]);
    expect(closed.code).toBe(1);
    expect(closed.stderr).toContain("unreachable");
  }, 60_000);

  test("imgpress health works behind a TLS proxy (plain HTTP) and exits 1 once the instance is gone", async () => {
    // At the quietest level, with a misspelt variable: the start-up lines are written all the same.
    const proxied = await startServer({
      env: {
        IMGPRESS_BEHIND_PROXY: "true",
        IMGPRESS_LOG_LEVEL: "error",
        IMGPRESS_PROT: "9443",
        IMGPRESS_CONVERT_TIMEOUT_S: "300",
      },
    });
    try {
      // Behind a proxy the service answers plain HTTP only to requests marked as forwarded HTTPS.
      expect((await proxied.fetch("/health/ready")).status).toBe(403);
      // Started without IMGPRESS_SMTP_URL: the server says, once, where e-mails go instead.
      expect(
        proxied.logs.filter(
          (l) => l.json?.level === "warn" && String(l.json?.msg).startsWith("IMGPRESS_SMTP_URL is not set"),
        ),
      ).toHaveLength(1);
      expect(
        proxied.logs.filter(
          (l) =>
            l.json?.level === "warn" &&
            l.json?.msg === "ignored: IMGPRESS_PROT is not an imgpress setting (see imgpress --help)",
        ),
      ).toHaveLength(1);
      expect(proxied.logs.filter((l) => l.json?.msg === "request")).toEqual([]);
      // 30 s of queue and 300 s of conversion: Bun cuts a connection silent for 255 s; Deno has no such cap.
      const silent = proxied.logs.filter(
        (l) =>
          l.json?.level === "warn" &&
          String(l.json?.msg).startsWith(
            "IMGPRESS_QUEUE_TIMEOUT_S + IMGPRESS_CONVERT_TIMEOUT_S is 330 s, but bun closes a connection silent for 255 s",
          ),
      );
      expect(silent).toHaveLength(e2eRuntime() === "bun" ? 1 : 0);
      expect((await runCli(["health"], { ...proxied.env, IMGPRESS_PORT: String(proxied.port) })).code).toBe(0);
    } finally {
      await proxied.stop();
    }
    // Nothing listens there any more: the command must say 1, not hang.
    expect((await runCli(["health", "--url", `http://127.0.0.1:${proxied.port}/health/ready`])).code).toBe(1);
  }, 60_000);
});

/** Sends one raw HTTP/1.1 request over TLS with exactly the given Host header; returns the status line. */
async function rawGet(path: string, host: string): Promise<string> {
  return (await rawExchange(path, host)).split("\r\n")[0]!;
}

/** Sends one raw HTTP/1.1 request over TLS with exactly the given Host header; returns the whole answer. */
function rawExchange(path: string, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(
      { host: "127.0.0.1", port: server.port, ca: server.ca, servername: "localhost", ALPNProtocols: ["http/1.1"] },
      () => {
        socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      },
    );
    let received = "";
    const timer = setTimeout(() => socket.destroy(new Error("no answer within 10 s")), 10_000);
    socket.on("data", (chunk) => (received += chunk.toString("latin1")));
    socket.on("end", () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

describe("Host header of any length", () => {
  test.each(["x", "ab", "abc", "localhost", "x:1"])("Host: %s routes by the real path", async (host) => {
    expect(await rawGet("/health", host)).toBe("HTTP/1.1 200 OK");
    expect(await rawGet("/health/ready", host)).toBe("HTTP/1.1 200 OK");
    expect(await rawGet("/no-such-route", host)).toBe("HTTP/1.1 404 Not Found");
  });

  // Bun passes such a request on with a relative URL; it used to escape the app and get Bun's
  // development error page (500, HTML with source lines).
  test.each(["", "a b", "abcdefgh?", "x#", "a/b", "a@b"])(
    "Host: %j is refused with the JSON 400, on any path",
    async (host) => {
      for (const path of ["/health", "/internal/status", "/v1/plugin/convert"]) {
        const answer = await rawExchange(path, host);
        expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 400 Bad Request");
        expect(answer).toContain('"code":"INVALID_HOST"');
        expect(answer).not.toContain("<html");
      }
      expect((await server.fetch("/health")).status).toBe(200);
    },
  );

  test("every JSON answer, success or error, spells its Content-Type one way under either runtime", async () => {
    const answers = [
      await server.fetch("/health"),
      await server.fetch("/nowhere"),
      (await server.json("POST", "/v1/plugin/auth/request-otp", {})) as { headers: Headers },
    ];
    expect(answers.map((a) => a.headers.get("content-type"))).toEqual(Array(3).fill("application/json;charset=utf-8"));
  });
});
