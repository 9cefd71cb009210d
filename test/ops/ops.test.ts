/**
 * Operations in process: the metrics route's guards and token, exact conversion/mail/OTP counts,
 * readiness (draining, a database that refuses writes, recovery), the offline docs configuration,
 * the alert rules (promtool) and the Host-length fix. The real server is in test/e2e/ops.e2e.test.ts.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { appendFile, copyFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import { ConfigError, loadConfig } from "../../src/core/config.ts";
import { AppError } from "../../src/core/errors.ts";
import { createFetchHandler, withRoutableUrl } from "../../src/core/http/serve.ts";
import { createLogger } from "../../src/core/log.ts";
import { storageFaultCode } from "../../src/data/db/faults.ts";
import { Readiness } from "../../src/ops/health/service.ts";
import { convertForm, postBearer } from "../support/convert-helpers.ts";
import { createHarness, expectError, type Harness } from "../support/harness.ts";
import * as img from "../support/images.ts";
import { delta, parseMetrics, promtool } from "../support/metrics.ts";
import { canMount, mountTmpfs } from "../support/mounts.ts";
import { ROOT } from "../support/server.ts";
import { startSmtpSink } from "../support/smtp.ts";

const TOKEN = "metrics-token-0123456789";
let h: Harness;
afterEach(async () => {
  await h?.close();
});

const scrape = async (harness: Harness) =>
  parseMetrics((await harness.request("GET", "/internal/metrics", { ip: "127.0.0.1" })).text);

describe("GET /internal/metrics", () => {
  test("without a token: the allowlist alone decides", async () => {
    h = await createHarness();
    const res = await h.request("GET", "/internal/metrics", { ip: "127.0.0.1" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(res.text).toContain("# TYPE imgpress_http_requests_total counter");
    expectError(await h.request("GET", "/internal/metrics", { ip: "203.0.113.9" }), 404, "NOT_FOUND");
  });

  test.each([
    ["no header → 401", {}, 401],
    ["a wrong token → 401", { authorization: "Bearer metrics-token-0123456788" }, 401],
    ["a prefix of the token → 401", { authorization: `Bearer ${TOKEN.slice(0, -1)}` }, 401],
    ["another scheme → 401", { authorization: `Basic ${TOKEN}` }, 401],
    ["the token → 200", { authorization: `Bearer ${TOKEN}` }, 200],
  ] as const)("with IMGPRESS_METRICS_TOKEN set, %s", async (_name, headers, status) => {
    h = await createHarness({ env: { IMGPRESS_METRICS_TOKEN: TOKEN } });
    const res = await h.request("GET", "/internal/metrics", { ip: "127.0.0.1", headers });
    if (status === 401) expectError(res, 401, "INVALID_METRICS_TOKEN");
    else expect(res.status).toBe(200);
  });

  test("the token does not open the route outside the allowlist", async () => {
    h = await createHarness({ env: { IMGPRESS_METRICS_TOKEN: TOKEN } });
    expectError(
      await h.request("GET", "/internal/metrics", { ip: "203.0.113.9", headers: { authorization: `Bearer ${TOKEN}` } }),
      404,
      "NOT_FOUND",
    );
  });

  test("imgpress_database_file_bytes is the database file and its write-ahead log as they are now", async () => {
    h = await createHarness();
    const onDisk = () =>
      [h.dbPath, `${h.dbPath}-wal`].reduce((sum, path) => sum + (existsSync(path) ? statSync(path).size : 0), 0);
    const first = (await scrape(h)).get("imgpress_database_file_bytes");
    expect(first).toBe(onDisk());
    expect(first).toBeGreaterThan(0);
    // Follows what is written: 1,000 rows of 1 KB.
    await h.sqlite.client.execute("CREATE TABLE filler (x TEXT)");
    await h.sqlite.client.execute(
      "INSERT INTO filler SELECT hex(randomblob(512)) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) SELECT i FROM n)",
    );
    const grown = (await scrape(h)).get("imgpress_database_file_bytes")!;
    expect(grown).toBe(onDisk());
    expect(grown).toBeGreaterThan(first! + 1_000_000);
  });

  test("a short token is refused at start-up", () => {
    expect(() => loadConfig({ IMGPRESS_METRICS_TOKEN: "short" })).toThrow(ConfigError);
    expect(() => loadConfig({ IMGPRESS_METRICS_TOKEN: "short" })).toThrow(/IMGPRESS_METRICS_TOKEN/);
  });
});

describe("exact counts", () => {
  test("N conversions add N, failures count under their error code, bytes add up", async () => {
    h = await createHarness();
    const keys = await h.issueKey("count@example.com");
    const before = await scrape(h);
    const image = await img.photo(200, 150);
    let out = 0;
    for (const quality of ["lossy", "lossy", "lossless"]) {
      const res = await postBearer(h, keys, await convertForm(image, { format: "avif", quality }));
      expect(res.status).toBe(200);
      out += res.bytes.length;
    }
    const broken = await postBearer(h, keys, await convertForm(new Uint8Array(64).fill(7), { format: "webp" }));
    expect(broken.status).toBeGreaterThanOrEqual(400);
    const code = JSON.parse(new TextDecoder().decode(broken.bytes)).code as string;
    const after = await scrape(h);
    const grew = (key: string) => delta(before, after, key);
    expect(grew('imgpress_conversions_total{format="avif",quality="lossy",outcome="ok"}')).toBe(2);
    expect(grew('imgpress_conversions_total{format="avif",quality="lossless",outcome="ok"}')).toBe(1);
    expect(grew(`imgpress_conversions_total{format="webp",quality="lossy",outcome="${code}"}`)).toBe(1);
    expect(grew('imgpress_conversion_duration_seconds_count{format="avif",quality="lossy"}')).toBe(2);
    expect(grew("imgpress_conversion_bytes_in_total")).toBe(3 * image.length + 64);
    expect(grew("imgpress_conversion_bytes_out_total")).toBe(out);
  });

  test("quality-guard encodes add up by format; an attempt without extra encodes adds nothing", async () => {
    h = await createHarness();
    const before = await scrape(h);
    const attempt = {
      keyId: "key_x",
      quality: "lossy" as const,
      outcome: "ok",
      bytesIn: 10,
      bytesOut: 5,
      queueWaitMs: 0,
      convertMs: 3,
      at: 0,
    };
    h.services.metrics.observeConversion({ ...attempt, format: "avif", guardEncodes: 3 });
    h.services.metrics.observeConversion({ ...attempt, format: "avif", guardEncodes: 2 });
    h.services.metrics.observeConversion({ ...attempt, format: "webp", guardEncodes: 0 });
    const after = await scrape(h);
    expect(delta(before, after, 'imgpress_quality_guard_encodes_total{format="avif"}')).toBe(5);
    expect(after.get('imgpress_quality_guard_encodes_total{format="webp"}')).toBeUndefined();
  });

  test("a refused mail counts as failed and request-otp's answer code is the OTP outcome", async () => {
    const sink = await startSmtpSink({ reject: "rcpt" });
    try {
      h = await createHarness({ smtp: sink });
      const fetch = createFetchHandler(
        (r) => h.app.handle(r),
        createLogger("error", () => {}),
        { hsts: false, observe: h.services.metrics.observeResponse },
      );
      const ask = (email: string) =>
        fetch(
          new Request("http://localhost/v1/plugin/auth/request-otp", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ email }),
          }),
          "127.0.0.1",
        );
      expect((await ask("refused@example.com")).status).toBe(502);
      expect((await ask("not-an-address")).status).toBe(400);
      const m = await scrape(h);
      expect(m.get('imgpress_mail_total{outcome="failed"}')).toBe(1);
      expect(m.get('imgpress_mail_total{outcome="sent"}')).toBeUndefined();
      expect(m.get('imgpress_otp_requests_total{outcome="MAIL_DELIVERY_FAILED"}')).toBe(1);
      expect(m.get('imgpress_otp_requests_total{outcome="INVALID_EMAIL"}')).toBe(1);
      expect(
        m.get('imgpress_http_requests_total{method="POST",route="/v1/plugin/auth/request-otp",status="502"}'),
      ).toBe(1);
    } finally {
      await sink.close();
    }
  });
});

describe("a hung conversion", () => {
  test("after 5 × IMGPRESS_CONVERT_TIMEOUT_S its slot is given back: logged at error, counted in metrics and /internal/status", async () => {
    h = await createHarness({ env: { IMGPRESS_CONVERT_TIMEOUT_S: "0.02", IMGPRESS_CONCURRENCY: "1" } });
    const gate = h.services.gate;
    // What withDeadline hands the gate when the encoder outlives its limit; this one never stops.
    const hung = Object.assign(new AppError(504, "CONVERSION_TIMEOUT", "over the limit"), {
      stillRunning: new Promise(() => {}),
    });
    await expect(gate.run("normal", () => Promise.reject(hung))).rejects.toBe(hung);
    expect(gate.stats()).toMatchObject({ running: 1, slotsBusy: 1, abandoned: 0 });
    for (let i = 0; i < 500 && gate.stats().running > 0; i++) await Bun.sleep(10);
    expect(gate.stats()).toMatchObject({ running: 0, slotsBusy: 0, abandoned: 1 });
    const line = h.logs.map((l) => JSON.parse(l)).find((l) => /had still not stopped/.test(l.msg));
    expect(line).toMatchObject({ level: "error", weight: "normal", abandoned: 1 });
    expect((await scrape(h)).get("imgpress_conversions_abandoned_total")).toBe(1);
    const live = await h.request("GET", "/internal/status", { ip: "127.0.0.1" });
    expect(live.body.conversions).toMatchObject({ running: 0, abandoned: 1 });
    // The slot really is free: a conversion runs.
    expect(await gate.run("normal", async () => "converted")).toBe("converted");
  });
});

describe("the request log line", () => {
  test("masks a key a client put in the path, as it leaves the query string out", async () => {
    h = await createHarness();
    const { api_key, secret_key } = await h.issueKey("path@example.com");
    const lines: string[] = [];
    const fetch = createFetchHandler(
      (r) => h.app.handle(r),
      createLogger("info", (l) => lines.push(l)),
      { hsts: false },
    );
    // Also percent-encoded, as a client's URL library may write it.
    const random = secret_key.slice(5);
    const paths = [
      `/v1/plugin/convert/${api_key}`,
      `/${secret_key}`,
      `/v1/x?api_key=${api_key}`,
      `/v1/%69mps%5F${random}`,
      `/v1/imps%5F${random}/100%`,
      `/v1/%2569mps_${random}/%E0%A4%A`,
      "/bad%E0%A4%A",
    ];
    for (const path of paths)
      expect((await fetch(new Request(`http://localhost${path}`), "127.0.0.1")).status).toBe(404);
    const logged = lines.map((l) => JSON.parse(l).path);
    expect(logged).toEqual([
      "/v1/plugin/convert/imp_******",
      "/imps_******",
      "/v1/x",
      "/v1/imps_******",
      "/v1/imps_******/100%",
      "/v1/imps_******/%E0%A4%A",
      "/bad%E0%A4%A",
    ]);
    expect(lines.join("\n")).not.toContain(api_key.slice(4));
    expect(lines.join("\n")).not.toContain(secret_key.slice(5));
  });
});

describe("the OpenAPI document (/v1/docs/json)", () => {
  test("is valid OpenAPI 3.0.3 by an OpenAPI schema validator, and its bodies and answers have the types the routes use", async () => {
    h = await createHarness();
    const doc = (await h.request("GET", "/v1/docs/json")).body;
    const checked = await new Validator().validate(doc);
    expect(checked.errors ?? []).toEqual([]);
    expect(checked.valid).toBe(true);
    for (const route of ["/v1/plugin/auth/request-otp", "/v1/plugin/auth/verify-otp"]) {
      const operation = doc.paths[route].post;
      // JSON only: a multipart or text body is answered 415 (so a client generated from the document must not send one).
      expect(Object.keys(operation.requestBody.content)).toEqual(["application/json"]);
      for (const answer of Object.values(operation.responses) as { description: string; content: object }[]) {
        expect(answer.description).toBeString();
        expect(Object.keys(answer.content)).toEqual(["application/json"]);
      }
    }
    const form = await h.request("POST", "/v1/plugin/auth/request-otp", {
      body: "email=owner%40example.com",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(form.status).toBe(415);
    expect(
      doc.paths["/v1/plugin/auth/request-otp"].post.responses["200"].content["application/json"].schema.properties
        .expires_in,
    ).toMatchObject({ type: "integer", example: 900 });
    expect(Object.keys(doc.paths["/v1/plugin/convert"].post.responses["200"].content).sort()).toEqual([
      "image/avif",
      "image/webp",
    ]);
    // Unknown fields are ignored (docs/api.md): the document says so before and after the routes first validated a body.
    expect(JSON.stringify(doc)).not.toContain('"additionalProperties":false');
    expect((await h.requestOtp({ email: "owner@example.com", plugin_version: "1.2" } as never)).status).toBe(200);
    expect(
      (await h.verifyOtp({ email: "owner@example.com", otp: "000000", plugin_version: "1.2" } as never)).status,
    ).toBe(401);
    expect((await h.request("GET", "/v1/docs/json")).body).toEqual(doc);
  });

  test("names the answers every route can give, the headers the service sends with them, and only the schemes it accepts", async () => {
    h = await createHarness();
    const doc = (await h.request("GET", "/v1/docs/json")).body;
    const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.values(ops as object).map((op) => ({ path, responses: op.responses })),
    );
    expect(operations.length).toBeGreaterThanOrEqual(5);
    for (const { responses } of operations) {
      expect(responses["400"].description).toContain("INVALID_HOST");
      expect(responses["403"].description).toContain("HTTPS_REQUIRED");
      expect(responses["500"].description).toContain("INTERNAL_ERROR");
    }
    const convert = doc.paths["/v1/plugin/convert"].post;
    expect(convert.responses["429"].description).toContain("client address");
    expect(Object.keys(convert.responses["429"].headers)).toContain("Retry-After");
    expect(Object.keys(convert.responses["401"].headers)).toEqual(["WWW-Authenticate"]);
    expect(Object.keys(convert.responses["200"].headers)).toEqual(
      expect.arrayContaining(["Content-Disposition", "Cache-Control", "Access-Control-Expose-Headers"]),
    );
    const { max_width } = convert.requestBody.content["multipart/form-data"].schema.properties;
    expect(max_width.maximum).toBe(999999999);
    const verify = doc.paths["/v1/plugin/auth/verify-otp"].post;
    expect(verify.responses["429"].description).toContain("TOO_MANY_ATTEMPTS");
    expect(verify.responses["408"].description).toContain("10 s");
    expect(doc.paths["/health"].get.responses["503"].headers).toBeUndefined();
    expect(convert.security).toHaveLength(2);
    await h.close();

    // A server that takes bearer keys only offers only them.
    h = await createHarness({ env: { IMGPRESS_AUTH_SCHEMES: "bearer" } });
    const bearerOnly = (await h.request("GET", "/v1/docs/json")).body;
    expect(bearerOnly.paths["/v1/plugin/convert"].post.security).toEqual([{ bearer: [] }]);
    expect(Object.keys(bearerOnly.components.securitySchemes)).toEqual(["bearer"]);
    const checked = await new Validator().validate(bearerOnly);
    expect(checked.errors ?? []).toEqual([]);
  });
});

describe("HTTP labels", () => {
  test("unusual methods are one label value, unmatched paths one route value; /health/ready is in the OpenAPI document", async () => {
    h = await createHarness();
    const fetch = createFetchHandler(
      (r) => h.app.handle(r),
      createLogger("error", () => {}),
      { hsts: false, observe: h.services.metrics.observeResponse },
    );
    await fetch(new Request("http://localhost/health", { method: "PROPFIND" }), "127.0.0.1");
    await fetch(new Request("http://localhost/v1/users/alice@example.com"), "127.0.0.1");
    const text = (await h.request("GET", "/internal/metrics", { ip: "127.0.0.1" })).text;
    expect(text).toMatch(/^imgpress_http_requests_total\{method="other",route="unmatched",status="405"\} 1$/m);
    expect(text).toMatch(/^imgpress_http_requests_total\{method="GET",route="unmatched",status="404"\} 1$/m);
    expect(text).not.toContain("alice");
    const spec = (await h.request("GET", "/v1/docs/json")).body;
    expect(spec.paths["/health/ready"].get.tags).toEqual(["operations"]);
    expect(Object.keys(spec.paths["/health/ready"].get.responses).sort()).toEqual(["200", "400", "403", "500", "503"]);
    // Every status the routes answer is in the document (the busy and storage refusals included).
    expect(Object.keys(spec.paths["/health"].get.responses).sort()).toEqual(["200", "400", "403", "500", "503"]);
    expect(Object.keys(spec.paths["/v1/plugin/convert"].post.responses)).toEqual(
      expect.arrayContaining(["408", "429", "503"]),
    );
    for (const route of ["/v1/plugin/auth/request-otp", "/v1/plugin/auth/verify-otp"]) {
      expect(Object.keys(spec.paths[route].post.responses)).toEqual(expect.arrayContaining(["408", "429", "503"]));
    }
  });
});

describe("/health/ready", () => {
  test("200 with every check ok; 503 NOT_READY naming the cause once draining; /health stays 200", async () => {
    h = await createHarness();
    const ready = await h.request("GET", "/health/ready");
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({
      status: "ready",
      checks: { database: "ok", storage: "ok", libvips: "ok", draining: "ok" },
    });
    h.services.lifecycle.beginDrain();
    const draining = await h.request("GET", "/health/ready");
    expect(draining.status).toBe(503);
    expect(draining.body).toMatchObject({
      error: "Service Unavailable",
      code: "NOT_READY",
      checks: { draining: "shutting down", database: "ok" },
    });
    expect(draining.body.message).toContain("draining: shutting down");
    expect((await h.request("GET", "/health")).status).toBe(200);
  });

  test("a database that refuses writes is not ready, and readiness returns with the next probe once it accepts them", async () => {
    h = await createHarness();
    let now = 0;
    const lines: string[] = [];
    const readiness = new Readiness(
      h.store,
      h.dir,
      () => false,
      createLogger("info", (l) => lines.push(l)),
      () => now,
    );
    expect((await readiness.check()).ready).toBe(true);
    await h.sqlite.client.execute("PRAGMA query_only = ON");
    now += 1500; // past the one-second reuse of a good database result
    const refused = await readiness.check();
    expect(refused.ready).toBe(false);
    // The public answer names the check; the driver's message (paths, hosts, users) is only logged, once.
    expect(refused.checks.database).toBe("write failed");
    expect(refused.checks.libvips).toBe("ok");
    expect((await readiness.check()).checks.database).toBe("write failed");
    const logged = lines.map((l) => JSON.parse(l));
    expect(logged.map((l) => [l.level, l.msg, l.check])).toEqual([["warn", "readiness check failing", "database"]]);
    expect(logged[0].fault).toMatch(/readonly|query_only/i);
    await h.sqlite.client.execute("PRAGMA query_only = OFF");
    expect((await readiness.check()).ready).toBe(true);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({
      level: "info",
      msg: "readiness check ok again",
      check: "database",
    });
  });

  test("a database file removed or replaced under the server is not ready, and takes no write until it is back", async () => {
    h = await createHarness();
    const lines: string[] = [];
    let now = 0;
    const readiness = new Readiness(
      h.store,
      h.dir,
      () => false,
      createLogger("info", (l) => lines.push(l)),
      () => now,
    );
    expect((await readiness.check()).ready).toBe(true);
    const aside = `${h.dbPath}.aside`;
    await rename(h.dbPath, aside);
    now += 1500;
    const removed = await readiness.check();
    expect(removed.ready).toBe(false);
    expect(removed.checks.database).toBe("database file removed or replaced");
    // A write would go into the file the server still holds, lost at the next start: refused instead, as a storage fault.
    const write = () =>
      h.sqlite.client.execute("INSERT INTO heartbeat (id, at) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET at = 1");
    const refused = await write().then(
      () => null,
      (err: unknown) => err,
    );
    expect(storageFaultCode(refused)).toBe("DATABASE_FILE_LOST");
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({
      level: "warn",
      msg: "readiness check failing",
      check: "database",
    });
    expect(JSON.parse(lines.at(-1)!).fault).toContain("was removed while the server had it open");
    // Another file at the path (a copy put back by hand) is not the one the server writes either.
    await copyFile(aside, h.dbPath);
    expect((await readiness.check()).checks.database).toBe("database file removed or replaced");
    expect(JSON.parse(lines.at(-1)!).fault).toContain("was replaced by another file");
    await expect(write()).rejects.toMatchObject({ code: "DATABASE_FILE_LOST" });
    // The file itself put back: ready again, and written again.
    await rename(aside, h.dbPath);
    expect((await readiness.check()).ready).toBe(true);
    await write();
  });

  test("a data folder that cannot be inspected is reported as storage", async () => {
    h = await createHarness();
    const report = await new Readiness(h.store, join(h.dir, "missing")).check();
    expect(report.ready).toBe(false);
    expect(report.checks.storage).toBe("cannot inspect the data folder");
  });
});

describe("/health/ready on a full disk", () => {
  test.skipIf(!canMount)(
    "turns 503 naming storage when the data folder's disk fills, and 200 once space returns",
    async () => {
      const disk = mountTmpfs();
      if (!disk) throw new Error("the tmpfs could be mounted at load time but not now");
      try {
        h = await createHarness({ env: { IMGPRESS_DATA_DIR: disk.path } });
        expect((await h.request("GET", "/health/ready")).status).toBe(200);
        const filler = join(disk.path, "filler");
        const chunk = new Uint8Array(256 * 1024);
        for (let i = 0; i < 64; i++) {
          const full = await appendFile(filler, chunk).then(
            () => false,
            (err: NodeJS.ErrnoException) => err.code === "ENOSPC",
          );
          if (full) break;
        }
        const full = await h.request("GET", "/health/ready");
        expect(full.status).toBe(503);
        expect(full.body.code).toBe("NOT_READY");
        expect(full.body.checks.storage).toMatch(/^only \d+ bytes free in the data folder$/);
        expect((await h.request("GET", "/health")).status).toBe(200);
        // The operator's log says so once, however many probes fail, and again when it is over.
        expect((await h.request("GET", "/health/ready")).status).toBe(503);
        const said = (msg: string) =>
          h.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === msg && l.check === "storage");
        expect(said("readiness check failing")).toEqual([
          expect.objectContaining({ level: "warn", fault: `less than 1048576 bytes free in ${disk.path}` }),
        ]);
        await rm(filler);
        expect((await h.request("GET", "/health/ready")).status).toBe(200);
        expect(said("readiness check ok again")).toHaveLength(1);
      } finally {
        await h?.close();
        h = undefined as never;
        disk.unmount();
      }
    },
  );
});

describe("offline docs page", () => {
  test("the served Scalar configuration switches off every online-only control", async () => {
    h = await createHarness();
    const html = (await h.request("GET", "/v1/docs")).text;
    const attribute = /data-configuration='([^']+)'/.exec(html)?.[1];
    expect(attribute).toBeDefined();
    const config = JSON.parse(attribute!.replaceAll("&quot;", '"'));
    expect(config).toMatchObject({
      agent: { disabled: true },
      mcp: { disabled: true },
      showToolbar: "never",
      showDeveloperTools: "never",
      hideClientButton: true,
      telemetry: false,
      withDefaultFonts: false,
    });
    expect(config.customCss).toContain('a[href*="scalar.com"]');
  });
});

describe("alert rules of docs/operations.md", () => {
  test("pass promtool check rules", async () => {
    const result = await promtool(["rules", join(ROOT, "docs/prometheus/imgpress-rules.yml")]);
    expect(result.output).toContain("SUCCESS: 6 rules found");
    expect(result.code).toBe(0);
  });

  test("fire on the series they are meant for and not on healthy ones (promtool test rules)", async () => {
    const proc = Bun.spawn(["promtool", "test", "rules", "imgpress-rules.test.yml"], {
      cwd: join(ROOT, "docs/prometheus"),
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
      proc.exited,
    ]);
    expect({ code, output: out + err }).toMatchObject({ code: 0, output: expect.stringContaining("SUCCESS") });
  });
});

describe("withRoutableUrl", () => {
  test.each([
    ["https://x/health?a=1", "https://localhost/health?a=1"],
    ["http://ab/v1/docs", "http://localhost/v1/docs"],
    ["https://abc/health", "https://abc/health"],
    ["https://x:8443/health", "https://x:8443/health"],
    // A fragment is not part of the path (Bun kept it in the URL and answered 405, Deno routed without it).
    ["https://abc/health#x", "https://abc/health"],
  ])("%s → %s", (from, to) => {
    expect(withRoutableUrl(new Request(from)).url).toBe(to);
  });

  test("keeps method, headers and body", async () => {
    const moved = withRoutableUrl(
      new Request("https://x/echo", { method: "POST", headers: { host: "x", "x-a": "1" }, body: "payload" }),
    );
    expect({ method: moved.method, a: moved.headers.get("x-a"), body: await moved.text() }).toEqual({
      method: "POST",
      a: "1",
      body: "payload",
    });
  });
});
