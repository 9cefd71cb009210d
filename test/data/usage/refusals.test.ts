/**
 * Refused requests of the public routes: counted per key (active or revoked) or per address through
 * the runtime wrapper's observer, written on a real libSQL file, read back by RefusalQueries; and
 * bounded: one address's 100,000 refusals and 10,000 rotating IPv6 addresses add a fixed number of rows.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { attachMeta, clientAddress } from "../../../src/core/http/meta.ts";
import { createFetchHandler } from "../../../src/core/http/serve.ts";
import { createLogger } from "../../../src/core/log.ts";
import { RefusalRecorder, TOP_CLIENTS_PER_HOUR } from "../../../src/data/usage/refusals.ts";
import { createHarness, type Harness, T0 } from "../../support/harness.ts";

const HOUR = 60 * 60 * 1000;
let h: Harness;
let handle: (request: Request, peer: string) => Promise<Response>;
beforeEach(async () => {
  h = await createHarness();
  // The runtime's wrapper, as server.ts builds it: the observer sees every final status.
  handle = createFetchHandler(
    (r) => h.app.handle(r),
    createLogger("error", () => {}),
    { hsts: false, observe: h.services.refusals.observer },
  );
});
afterEach(async () => {
  await h.close();
});

interface Row {
  hour: number;
  kind: string;
  client: string;
  code: string;
  count: number;
  last_at: number;
}
const rows = () =>
  h.store.all<Row>(
    sql`SELECT hour, kind, client, code, count, last_at FROM refused_hourly ORDER BY kind, client, code`,
  );

function convert(headers: Record<string, string>): Request {
  return new Request("http://localhost/v1/plugin/convert", {
    method: "POST",
    headers: { "content-type": "multipart/form-data; boundary=x", ...headers },
    body: "--x--",
  });
}

test("refusals are counted per key the request named (even revoked) or else per address; other answers are not", async () => {
  const key = await h.issueKey("site@example.com", "https://a.example");
  const stale = await h.issueKey("old@example.com", "https://b.example");
  await h.services.revocation.revoke((await h.services.keys.findActive(stale.api_key))!.id, "cli", "cli");
  const ids = await h.store.all<{ id: string; email: string }>(sql`SELECT id, email FROM api_keys`);
  const idOf = (email: string) => ids.find((k) => k.email === email)!.id;

  expect((await handle(convert({ authorization: "Bearer imp_nonsense" }), "203.0.113.9")).status).toBe(401);
  expect((await handle(convert({}), "2001:db8:5:6:7::1")).status).toBe(401);
  for (let i = 0; i < 3; i++)
    expect((await handle(convert({ authorization: `Bearer ${stale.api_key}` }), "198.51.100.4")).status).toBe(401);
  const ts = String(Math.floor(h.clock.now() / 1000));
  expect(
    (
      await handle(
        convert({ "x-api-key": key.api_key, "x-timestamp": ts, "x-signature": "00".repeat(32) }),
        "198.51.100.5",
      )
    ).status,
  ).toBe(401);
  // Not refusals of a public route: a 404, a health check, a staff page.
  expect((await handle(new Request("http://localhost/v1/nothing"), "203.0.113.9")).status).toBe(404);
  expect((await handle(new Request("http://localhost/health"), "203.0.113.9")).status).toBe(200);
  await handle(new Request("http://localhost/internal/"), "203.0.113.9");
  await h.services.refusals.flush();

  const hour = Math.floor(h.clock.now() / HOUR) * HOUR;
  expect((await rows()).map((r) => [r.hour, r.kind, r.client, r.code, r.count])).toEqual(
    [
      [hour, "address", "2001:db8:5:6::/64", "UNAUTHORIZED", 1],
      [hour, "address", "203.0.113.9", "INVALID_API_KEY", 1],
      [hour, "key", idOf("old@example.com"), "INVALID_API_KEY", 3],
      [hour, "key", idOf("site@example.com"), "INVALID_SIGNATURE", 1],
    ].sort((a, b) => `${a[1]}|${a[2]}|${a[3]}`.localeCompare(`${b[1]}|${b[2]}|${b[3]}`)),
  );

  const range = { from: hour, to: hour + HOUR };
  const top = await h.services.refusalQueries.top(range, 10);
  expect(top[0]).toMatchObject({
    kind: "key",
    client: idOf("old@example.com"),
    count: 3,
    mainCode: "INVALID_API_KEY",
    key: { email: "old@example.com" },
  });
  expect(await h.services.refusalQueries.codes({ ...range, keyId: idOf("old@example.com") })).toEqual({
    total: 3,
    byCode: [{ code: "INVALID_API_KEY", count: 3 }],
  });
  const series = await h.services.refusalQueries.series({ from: hour - 2 * HOUR, to: hour + HOUR, step: "hour" });
  expect(series.map((p) => p.total)).toEqual([0, 0, 6]);
});

test("a 429 of the code checks is counted against the address", async () => {
  let last = 0;
  // 30 checks per address in 5 minutes (otpLimits.verifyPerIp); the 31st is refused.
  for (let i = 0; i < 40 && last !== 429; i++) {
    const req = new Request("http://localhost/v1/plugin/auth/verify-otp", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: `a${i}@example.com`, otp: "123456" }),
    });
    last = (await handle(req, "192.0.2.77")).status;
  }
  expect(last).toBe(429);
  await h.services.refusals.flush();
  // The wrong codes before it are refusals (401) too.
  const codes = (await rows()).filter((r) => r.client === "192.0.2.77").map((r) => [r.code, r.count]);
  expect(codes).toContainEqual(["RATE_LIMITED", 1]);
  expect(codes.reduce((s, c) => s + (c[1] as number), 0)).toBe(31);
});

/** The observer fed directly with answered requests, as fast as a flood would come. */
function flood(recorder: RefusalRecorder, peers: Iterable<string>): void {
  const refused = new Response(null, { status: 401 });
  for (const peer of peers) {
    const request = new Request("http://localhost/v1/plugin/convert", { method: "POST" });
    const meta = attachMeta(request, peer);
    meta.errorCode = "INVALID_SIGNATURE";
    recorder.observer(request, refused, meta);
  }
}

test("one address spraying 100,000 refusals over an hour adds one row; 10,000 rotating IPv6 addresses add at most N + 1", async () => {
  const recorder = new RefusalRecorder(
    h.store,
    createLogger("error", () => {}),
    (r) => clientAddress(r, false),
    h.clock.now,
  );
  const start = Math.floor(T0 / HOUR) * HOUR;
  h.clock.set(start);
  for (let round = 0; round < 10; round++) {
    flood(
      recorder,
      Array.from({ length: 10_000 }, () => "203.0.113.66"),
    );
    h.clock.advance(HOUR / 20);
    await recorder.flush();
  }
  expect((await rows()).map((r) => [r.client, r.count])).toEqual([["203.0.113.66", 100_000]]);

  // Next hour: 10,000 addresses of one /48, each its own /64, flushed in ten rounds.
  h.clock.set(start + HOUR);
  const random = () => Math.floor(Math.random() * 65536).toString(16);
  for (let round = 0; round < 10; round++) {
    flood(
      recorder,
      Array.from({ length: 1_000 }, () => `2001:db8:77:${random()}:${random()}::${random()}`),
    );
    await recorder.flush();
  }
  // A restarted process (a fresh recorder) starts from the names the hour already has.
  const restarted = new RefusalRecorder(
    h.store,
    createLogger("error", () => {}),
    (r) => clientAddress(r, false),
    h.clock.now,
  );
  flood(
    restarted,
    Array.from({ length: 1_000 }, () => `2001:db8:77:${random()}::1`),
  );
  await restarted.flush();

  const second = (await rows()).filter((r) => r.hour === start + HOUR);
  expect(second.length).toBeLessThanOrEqual(TOP_CLIENTS_PER_HOUR + 1);
  expect(second.filter((r) => r.kind === "other")).toHaveLength(1);
  expect(second.reduce((s, r) => s + r.count, 0)).toBe(11_000);
});

test("a failed flush keeps the counts for the next one", async () => {
  const recorder = new RefusalRecorder(
    h.store,
    createLogger("error", () => {}),
    (r) => clientAddress(r, false),
    h.clock.now,
  );
  flood(recorder, ["192.0.2.1", "192.0.2.1"]);
  await h.store.all(sql`ALTER TABLE refused_hourly RENAME TO refused_away`);
  await expect(recorder.flush()).rejects.toThrow();
  flood(recorder, ["192.0.2.1"]);
  await h.store.all(sql`ALTER TABLE refused_away RENAME TO refused_hourly`);
  await recorder.flush();
  expect((await rows()).map((r) => r.count)).toEqual([3]);
});

test("prune drops hours past the retention", async () => {
  const recorder = h.services.refusals;
  recorder.record("address", "192.0.2.1", "UNAUTHORIZED", T0 - 500 * 24 * HOUR);
  recorder.record("address", "192.0.2.1", "UNAUTHORIZED", T0);
  await recorder.flush();
  expect(await recorder.prune()).toBe(1);
  expect(await rows()).toHaveLength(1);
});
