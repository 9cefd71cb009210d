/**
 * Usage over time: the recorder's buckets after real conversions through the app, their agreement
 * with the key counters and the totals table, flush failure and retry on a real libSQL file,
 * the bounded buffer, pruning; and UsageQueries on a seeded database.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createClient } from "@libsql/client";
import { Value } from "@sinclair/typebox/value";
import { sql } from "drizzle-orm";
import type { ConversionEvent } from "../../../src/conversion/service.ts";
import { AppError } from "../../../src/core/errors.ts";
import { createLogger } from "../../../src/core/log.ts";
import { latencyBin, latencyQuantile } from "../../../src/data/usage/latency.ts";
import { KeyDetail, KeysPage, Overview, Series } from "../../../src/data/usage/model.ts";
import { UsageRecorder } from "../../../src/data/usage/recorder.ts";
import { GUARD_HELP } from "../../../src/staff/dashboard/format.ts";
import { convertForm, postBearer, postSigned } from "../../support/convert-helpers.ts";
import { seedDemoData } from "../../support/demo-usage.ts";
import { createHarness, type Harness, T0 } from "../../support/harness.ts";
import * as img from "../../support/images.ts";
import { LOOPBACK, staffJson, staffSignIn } from "../../support/staff.ts";

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

interface BucketRow {
  hour: number;
  key_id: string;
  format: string;
  quality: string;
  outcome: string;
  count: number;
  bytes_in: number;
  bytes_out: number;
  lat: number;
}

/** Every usage_hourly row, with the latency bins summed into `lat`. */
async function buckets(): Promise<BucketRow[]> {
  const bins = Array.from({ length: 16 }, (_, i) => `lat_${i}`).join(" + ");
  return h.store.all<BucketRow>(
    sql.raw(
      `SELECT hour, key_id, format, quality, outcome, count, bytes_in, bytes_out, ${bins} AS lat FROM usage_hourly ORDER BY hour, key_id, format, quality, outcome`,
    ),
  );
}

/** The four stores of the same figures agree: key counters = ok buckets, totals = buckets summed over keys (and days). */
async function expectConsistent(): Promise<void> {
  const perKey = await h.store.all<{
    id: string;
    conversions: number;
    bytes_in: number;
    bytes_out: number;
    guard_encodes: number;
    n: number;
    bi: number;
    bo: number;
    ge: number;
  }>(sql`
    SELECT k.id, k.conversions, k.bytes_in, k.bytes_out, k.guard_encodes, coalesce(sum(u.count), 0) AS n, coalesce(sum(u.bytes_in), 0) AS bi, coalesce(sum(u.bytes_out), 0) AS bo, coalesce(sum(u.guard_encodes), 0) AS ge
    FROM api_keys k LEFT JOIN usage_hourly u ON u.key_id = k.id AND u.outcome = 'ok' GROUP BY k.id`);
  for (const k of perKey)
    expect({ id: k.id, n: k.conversions, bi: k.bytes_in, bo: k.bytes_out, ge: k.guard_encodes }).toEqual({
      id: k.id,
      n: k.n,
      bi: k.bi,
      bo: k.bo,
      ge: k.ge,
    });
  const sums = (table: string, time = "hour", ms = "sum(convert_ms)") =>
    h.store.all(
      sql.raw(
        `SELECT ${time} AS t, format, quality, outcome, sum(count) AS n, sum(bytes_in) AS bi, sum(bytes_out) AS bo, ${ms} AS ms, sum(lat_3) AS l3, sum(guard_encodes) AS ge FROM ${table} GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
      ),
    );
  expect(await sums("usage_hourly_total")).toEqual(await sums("usage_hourly"));
  // convert_ms is rounded per row written: a day's row may differ by a millisecond from its hours' rounded sum.
  expect(await sums("usage_daily_total", "day", "0")).toEqual(
    await sums("usage_hourly", `hour / ${DAY} * ${DAY}`, "0"),
  );
  // usage_daily: the buckets per key and UTC day, volumes of successful conversions only.
  const perKeyDay = (from: string, day: string, ok: string, bad: string) =>
    h.store.all(
      sql.raw(
        `SELECT ${day} AS d, key_id, sum(${ok}) AS ok, sum(${bad}) AS bad, sum(CASE WHEN ${ok} > 0 THEN bytes_in ELSE 0 END) AS bi FROM ${from} GROUP BY 1, 2 HAVING sum(${ok}) + sum(${bad}) > 0 ORDER BY 1, 2`,
      ),
    );
  expect(await perKeyDay("usage_daily", "day", "conversions", "errors")).toEqual(
    await perKeyDay(
      "usage_hourly",
      `hour / ${DAY} * ${DAY}`,
      "CASE WHEN outcome = 'ok' THEN count ELSE 0 END",
      "CASE WHEN outcome = 'ok' THEN 0 ELSE count END",
    ),
  );
}

/** Sum of guard_encodes per table, and of the key counters. */
async function guardSums(): Promise<Record<string, number>> {
  const [row] = await h.store.all<Record<string, number>>(sql`SELECT
    (SELECT coalesce(sum(guard_encodes), 0) FROM usage_hourly) AS hourly,
    (SELECT coalesce(sum(guard_encodes), 0) FROM usage_hourly_total) AS hourlyTotal,
    (SELECT coalesce(sum(guard_encodes), 0) FROM usage_daily_total) AS dailyTotal,
    (SELECT coalesce(sum(guard_encodes), 0) FROM api_keys) AS keys`);
  return row!;
}

/** A conversion attempt as the conversion path reports it. */
function attempt(keyId: string, over: Partial<ConversionEvent> = {}): ConversionEvent {
  return {
    keyId,
    format: "webp",
    quality: "lossy",
    outcome: "ok",
    bytesIn: 1_000,
    bytesOut: 300,
    queueWaitMs: 0,
    convertMs: 20,
    guardEncodes: 0,
    at: h.clock.now(),
    ...over,
  };
}

function logger(lines: string[]) {
  return createLogger("debug", (line) => lines.push(line));
}

describe("recording real conversions", () => {
  test("buckets equal the conversions made, once flushed; nothing is written before the flush", async () => {
    const a = await h.issueKey("a@example.com");
    const b = await h.issueKey("b@example.com");
    const [rowA] = await h.services.keys.list({ email: "a@example.com" });
    const [rowB] = await h.services.keys.list({ email: "b@example.com" });
    const photo = await img.photo(64, 48);
    const png = await img.pngWithAlpha(32, 32);
    h.clock.set(T0 + 10 * 60_000);
    const sizes = { aWebp: [] as [number, number][], aAvif: [] as [number, number][], b: [] as [number, number][] };
    for (let i = 0; i < 2; i++) {
      const res = await postBearer(h, a, await convertForm(photo));
      expect(res.status).toBe(200);
      sizes.aWebp.push([Number(res.headers.get("x-original-size")), res.bytes.length]);
    }
    const avif = await postSigned(
      h,
      a,
      await convertForm(png, { format: "avif", quality: "lossless" }, "a.png", "image/png"),
    );
    expect(avif.status).toBe(200);
    sizes.aAvif.push([png.length, avif.bytes.length]);
    const broken = await postBearer(h, a, await convertForm(img.truncated(photo, 0.5)));
    expect(broken.status).toBe(422);
    const badFormat = await postBearer(h, a, await convertForm(photo, { format: "gif" }));
    expect(badFormat.status).toBe(400);
    const unauthenticated = await postBearer(h, `imp_${"x".repeat(43)}`, await convertForm(photo));
    expect(unauthenticated.status).toBe(401);
    h.clock.set(T0 + HOUR + 5 * 60_000);
    const later = await postBearer(h, b, await convertForm(photo));
    expect(later.status).toBe(200);
    sizes.b.push([photo.length, later.bytes.length]);

    // The conversion path wrote nothing yet.
    expect(await buckets()).toEqual([]);
    expect((await h.services.keys.list()).map((k) => k.conversions)).toEqual([0, 0]);
    await h.services.usage.flush();

    const total = (pairs: [number, number][]) => pairs.reduce(([i, o], [a2, b2]) => [i + a2, o + b2], [0, 0]);
    const [aWebpIn, aWebpOut] = total(sizes.aWebp);
    const rows = await buckets();
    expect(rows).toEqual(
      [
        {
          hour: T0,
          key_id: rowA!.id,
          format: "webp",
          quality: "lossy",
          outcome: "ok",
          count: 2,
          bytes_in: aWebpIn,
          bytes_out: aWebpOut,
          lat: 2,
        },
        {
          hour: T0,
          key_id: rowA!.id,
          format: "avif",
          quality: "lossless",
          outcome: "ok",
          count: 1,
          bytes_in: png.length,
          bytes_out: avif.bytes.length,
          lat: 1,
        },
        {
          hour: T0,
          key_id: rowA!.id,
          format: "webp",
          quality: "lossy",
          outcome: broken.body.code,
          count: 1,
          bytes_in: img.truncated(photo, 0.5).length,
          bytes_out: 0,
          lat: 1,
        },
        // The form was refused before its fields were known: format and quality are ''.
        {
          hour: T0,
          key_id: rowA!.id,
          format: "",
          quality: "",
          outcome: badFormat.body.code,
          count: 1,
          bytes_in: 0,
          bytes_out: 0,
          lat: 1,
        },
        {
          hour: T0 + HOUR,
          key_id: rowB!.id,
          format: "webp",
          quality: "lossy",
          outcome: "ok",
          count: 1,
          bytes_in: photo.length,
          bytes_out: later.bytes.length,
          lat: 1,
        },
      ].sort(
        (x, y) =>
          x.hour - y.hour ||
          x.key_id.localeCompare(y.key_id) ||
          x.format.localeCompare(y.format) ||
          x.quality.localeCompare(y.quality) ||
          x.outcome.localeCompare(y.outcome),
      ),
    );
    expect(broken.body.code).toBe("INVALID_IMAGE");
    await expectConsistent();
    const [afterA] = await h.services.keys.list({ email: "a@example.com" });
    expect(afterA).toMatchObject({
      conversions: 3,
      bytesIn: aWebpIn + png.length,
      bytesOut: aWebpOut + avif.bytes.length,
      lastUsedAt: T0 + 10 * 60_000,
    });
    const [afterB] = await h.services.keys.list({ email: "b@example.com" });
    expect(afterB).toMatchObject({ conversions: 1, lastUsedAt: T0 + HOUR + 5 * 60_000 });

    // A second flush has nothing to add: nothing is counted twice.
    expect(h.services.usage.pendingBuckets).toBe(0);
    await h.services.usage.flush();
    expect(await buckets()).toEqual(rows);
  });

  test("later flushes add to the same buckets and counters, which keep agreeing", async () => {
    const k1 = await h.services.keys.issue("one@example.com", "");
    const k2 = await h.services.keys.issue("two@example.com", "");
    for (let round = 0; round < 3; round++) {
      // Both keys' lossy AVIFs share a totals bucket: their guard encodes add up there.
      h.services.usage.record(
        attempt(k1.id, { format: "avif", bytesIn: 100 * (round + 1), bytesOut: 10, guardEncodes: 1 }),
      );
      h.services.usage.record(attempt(k2.id, { format: "avif", convertMs: 700, guardEncodes: round + 2 }));
      h.services.usage.record(
        attempt(k2.id, { outcome: "SERVER_BUSY", format: null, quality: null, bytesIn: 0, bytesOut: 0, convertMs: 0 }),
      );
      h.clock.advance(25 * 60_000);
      await h.services.usage.flush();
      await expectConsistent();
    }
    const rows = await buckets();
    expect(rows.filter((r) => r.key_id === k1.id).reduce((n, r) => n + r.count, 0)).toBe(3);
    expect(rows.filter((r) => r.outcome === "SERVER_BUSY").reduce((n, r) => n + r.count, 0)).toBe(3);
    const [one] = await h.services.keys.list({ email: "one@example.com" });
    expect(one).toMatchObject({ conversions: 3, bytesIn: 600, bytesOut: 30 });
    // 1 + 1 + 1 of k1 and 2 + 3 + 4 of k2, in every table and each key's own counter.
    expect(await guardSums()).toEqual({ hourly: 12, hourlyTotal: 12, dailyTotal: 12, keys: 12 });
    expect(
      (await h.services.usageQueries.keys({ page: 1, pageSize: 10, sort: "email", order: "asc" })).rows.map((r) => [
        r.email,
        r.guardEncodes,
      ]),
    ).toEqual([
      ["one@example.com", 3],
      ["two@example.com", 9],
    ]);
  });

  test("a lossy AVIF's quality guard re-encodes reach every table, the key counter, /internal/api and the dashboard", async () => {
    const g = await createHarness({ env: { IMGPRESS_STAFF_EMAILS: "boss@example.com" } });
    try {
      const staff = await staffSignIn(g, "boss@example.com");
      const key = await g.issueKey("guard@example.com");
      const events: ConversionEvent[] = [];
      g.services.convert.observe((e) => events.push(e));
      g.clock.set(T0 + 10 * 60_000);
      const uploads = [
        await convertForm(await img.pngWithAlpha(160, 120), { format: "avif" }, "logo.png", "image/png"),
        await convertForm(await img.photo(96, 64), { format: "avif" }),
        await convertForm(await img.photo(96, 64), { format: "webp" }),
        await convertForm(await img.photo(96, 64), { format: "avif", quality: "lossless" }),
      ];
      for (const body of uploads) expect((await postBearer(g, key, body)).status).toBe(200);
      // The default guard leaves WebP and lossless alone.
      expect(events.slice(2).map((e) => e.guardEncodes)).toEqual([0, 0]);
      // A lossy AVIF encodes the WebP reference when its time bound allows; a stall on a loaded
      // machine can stop it before that, so convert more until one did (the tables must carry it).
      for (let i = 0; i < 5 && events.every((e) => e.guardEncodes === 0); i++) {
        expect((await postBearer(g, key, await convertForm(await img.photo(96, 64), { format: "avif" }))).status).toBe(
          200,
        );
      }
      const expected = events.reduce((n, e) => n + e.guardEncodes, 0);
      expect(expected).toBeGreaterThan(0);
      const lossy = events.filter((e) => e.quality === "lossy").length;
      await g.services.usage.flush();

      const tables = await g.store.all<{ t: string; format: string; quality: string; ge: number }>(sql`
        SELECT 'hourly' AS t, format, quality, guard_encodes AS ge FROM usage_hourly UNION ALL
        SELECT 'hourly_total', format, quality, guard_encodes FROM usage_hourly_total UNION ALL
        SELECT 'daily_total', format, quality, guard_encodes FROM usage_daily_total ORDER BY 1, 2, 3`);
      const avif = events
        .filter((e) => e.format === "avif" && e.quality === "lossy")
        .reduce((n, e) => n + e.guardEncodes, 0);
      expect(avif).toBe(expected);
      for (const t of ["daily_total", "hourly", "hourly_total"]) {
        expect(tables.filter((r) => r.t === t).map((r) => [r.format, r.quality, r.ge])).toEqual([
          ["avif", "lossless", 0],
          ["avif", "lossy", expected],
          ["webp", "lossy", 0],
        ]);
      }
      const [counter] = await g.store.all<{ ge: number }>(
        sql`SELECT guard_encodes AS ge FROM api_keys WHERE email = 'guard@example.com'`,
      );
      expect(counter!.ge).toBe(expected);

      const api = (path: string) => g.request("GET", path, staffJson(staff));
      const overview = await api("/internal/api/overview?from=1d");
      expect(overview.body.totals).toMatchObject({ conversions: events.length, guardEncodes: expected });
      expect(
        overview.body.byFormatQuality.find(
          (r: { format: string; quality: string }) => r.format === "avif" && r.quality === "lossy",
        ).guardEncodes,
      ).toBe(expected);
      const series = await api("/internal/api/usage/series?from=1d&step=hour");
      expect(series.body.points.reduce((n: number, p: { guardEncodes: number }) => n + p.guardEncodes, 0)).toBe(
        expected,
      );
      const list = await api("/internal/api/keys?search=guard");
      expect(list.body.rows[0].guardEncodes).toBe(expected);
      const detail = await api(`/internal/api/keys/${list.body.rows[0].id}?from=1d`);
      expect([detail.body.key.guardEncodes, detail.body.usage.totals.guardEncodes]).toEqual([expected, expected]);

      // The dashboard: the range's total and its share of the lossy conversions.
      const perLossy = (expected / lossy).toFixed(2);
      const page = await g.request("GET", "/internal/?range=24h", { ip: LOOPBACK, headers: { cookie: staff.cookie } });
      expect(page.text).toContain(
        `data-figure="guard-encodes">${expected}<span class="sub">${perLossy} per lossy conversion</span>`,
      );
      const keyPage = await g.request("GET", `/internal/keys/${list.body.rows[0].id}?range=24h`, {
        ip: LOOPBACK,
        headers: { cookie: staff.cookie },
      });
      expect(keyPage.text).toContain(
        `<dt title="${GUARD_HELP}">All-time extra encodes to keep quality</dt><dd class="num-left">${expected}</dd>`,
      );
      expect(keyPage.text).toContain(`data-figure="guard-encodes">${expected}<`);
    } finally {
      await g.close();
    }
  });
});

describe("flush failures", () => {
  test("a refused transaction writes nothing, keeps the counts, and the next flush writes them exactly once", async () => {
    const k = await h.services.keys.issue("a@example.com", "");
    // The key counters are updated after the bucket inserts, in the same transaction: make that step fail.
    await h.sqlite.client.execute(
      "CREATE TRIGGER refuse_counters BEFORE UPDATE ON api_keys BEGIN SELECT RAISE(ABORT, 'refused by test'); END",
    );
    h.services.usage.record(attempt(k.id, { format: "avif", guardEncodes: 3 }));
    h.services.usage.record(attempt(k.id, { format: "avif", guardEncodes: 2 }));
    await expect(h.services.usage.flush()).rejects.toThrow("refused by test");
    expect(await buckets()).toEqual([]);
    expect(await guardSums()).toEqual({ hourly: 0, hourlyTotal: 0, dailyTotal: 0, keys: 0 });
    expect(h.logs.some((l) => l.includes("usage flush failed"))).toBe(true);
    // Attempts during the outage join the kept ones.
    h.services.usage.record(attempt(k.id, { format: "avif", guardEncodes: 4 }));
    h.services.usage.record(attempt(k.id, { format: "avif", outcome: "INVALID_IMAGE", bytesOut: 0 }));
    await expect(h.services.usage.flush()).rejects.toThrow();

    // One warning per outage, not one per retry.
    expect(h.logs.filter((l) => l.includes("usage flush failed"))).toHaveLength(1);

    await h.sqlite.client.execute("DROP TRIGGER refuse_counters");
    await h.services.usage.flush();
    expect(h.logs.some((l) => l.includes("usage flush succeeded again") && l.includes('"failedFlushes":2'))).toBe(true);
    const rows = await buckets();
    expect(rows.map((r) => [r.outcome, r.count])).toEqual([
      ["INVALID_IMAGE", 1],
      ["ok", 3],
    ]);
    const [row] = await h.services.keys.list();
    expect(row).toMatchObject({ conversions: 3, bytesIn: 3_000, bytesOut: 900 });
    // 3 + 2 kept through two failed flushes, + 4 recorded during the outage: once each.
    expect(await guardSums()).toEqual({ hourly: 9, hourlyTotal: 9, dailyTotal: 9, keys: 9 });
    await expectConsistent();
  });

  test("a database locked by another connection: the flush fails after the busy timeout and succeeds once the lock is gone", async () => {
    const k = await h.services.keys.issue("a@example.com", "");
    await h.sqlite.client.execute("PRAGMA busy_timeout = 100");
    const other = createClient({ url: `file:${h.dbPath}` });
    try {
      const lock = await other.transaction("write");
      await lock.execute("UPDATE api_keys SET email = email");
      h.services.usage.record(attempt(k.id));
      await expect(h.services.usage.flush()).rejects.toThrow(/locked|busy/i);
      expect(h.services.usage.pendingBuckets).toBe(1);
      expect(await buckets()).toEqual([]);
      await lock.rollback();
      lock.close();
    } finally {
      other.close();
    }
    // @libsql/client 0.18 leaves the busy statement open, so that connection cannot commit again
    // (libsql-client-ts#352); fresh connections can (what the shutdown path does before its last try).
    await h.sqlite.client.reconnect();
    await h.services.usage.flush();
    expect((await buckets()).map((r) => r.count)).toEqual([1]);
    await expectConsistent();
  });

  test("the buffer is bounded: past its limit new buckets are dropped and logged, existing ones keep counting", async () => {
    const lines: string[] = [];
    const recorder = new UsageRecorder(h.store, logger(lines), { maxBuckets: 2 }, h.clock.now);
    const k = await h.services.keys.issue("a@example.com", "");
    recorder.record(attempt(k.id, { format: "webp" }));
    recorder.record(attempt(k.id, { format: "avif" }));
    recorder.record(attempt(k.id, { outcome: "INVALID_IMAGE" }));
    recorder.record(attempt(k.id, { outcome: "FILE_TOO_LARGE" }));
    recorder.record(attempt(k.id, { format: "webp" }));
    expect(recorder.pendingBuckets).toBe(2);
    expect(lines.filter((l) => l.includes("usage buffer full"))).toHaveLength(1);
    await recorder.flush();
    expect(lines.some((l) => l.includes("usage buffer recovered") && l.includes('"droppedAttempts":2'))).toBe(true);
    expect((await buckets()).map((r) => [r.format, r.outcome, r.count])).toEqual([
      ["avif", "ok", 1],
      ["webp", "ok", 2],
    ]);
  });

  test("a large buffer starts a flush by itself", async () => {
    const recorder = new UsageRecorder(h.store, logger([]), { flushAt: 3 }, h.clock.now);
    const k = await h.services.keys.issue("a@example.com", "");
    for (const format of ["webp", "avif", "webp"] as const)
      recorder.record(attempt(k.id, { format, quality: format === "webp" ? "lossless" : "lossy" }));
    expect(recorder.pendingBuckets).toBe(2);
    recorder.record(attempt(k.id, { outcome: "SERVER_BUSY" }));
    // No flush() call: the third bucket started one.
    for (let i = 0; i < 200 && (await buckets()).length < 3; i++) await Bun.sleep(10);
    expect((await buckets()).reduce((n, r) => n + r.count, 0)).toBe(4);
    expect(recorder.pendingBuckets).toBe(0);
  });
});

describe("retention", () => {
  test("prune deletes buckets older than 400 days from both tables and keeps the rest", async () => {
    const k = await h.services.keys.issue("a@example.com", "");
    h.services.usage.record(attempt(k.id, { at: T0 - 401 * DAY }));
    h.services.usage.record(attempt(k.id, { at: T0 - 399 * DAY }));
    h.services.usage.record(attempt(k.id, { at: T0 }));
    await h.services.usage.flush();
    expect(await h.services.usage.prune()).toBe(1);
    expect((await buckets()).map((r) => r.hour)).toEqual([T0 - 399 * DAY, T0]);
    const totals = await h.store.all<{ hour: number }>(sql`SELECT hour FROM usage_hourly_total ORDER BY hour`);
    expect(totals.map((r) => r.hour)).toEqual([T0 - 399 * DAY, T0]);
    const days = await h.store.all<{ day: number }>(sql`SELECT day FROM usage_daily ORDER BY day`);
    expect(days.map((r) => r.day)).toEqual([T0 - 399 * DAY, T0].map((t) => Math.floor(t / DAY) * DAY));
  });
});

describe("latency histogram", () => {
  test("bins are powers of two from 2 ms; quantiles interpolate inside a bin", () => {
    expect([0, 1.9, 2, 3.9, 4, 100, 32767, 32768, 1e9].map(latencyBin)).toEqual([0, 0, 1, 1, 2, 6, 14, 15, 15]);
    const counts = new Array(16).fill(0);
    expect(latencyQuantile(counts, 0.5)).toBeNull();
    counts[6] = 100; // 64–128 ms
    expect(latencyQuantile(counts, 0.5)).toBe(96);
    expect(latencyQuantile(counts, 0.95)).toBeCloseTo(124.8, 1);
    counts[10] = 100; // 1024–2048 ms
    expect(latencyQuantile(counts, 0.5)).toBe(128);
    expect(latencyQuantile(counts, 0.95)).toBeCloseTo(1945.6, 1);
  });
});

describe("UsageQueries on a seeded database", () => {
  const seed = () => seedDemoData(h.store.db, { keys: 40, days: 3, busyKeys: 5, now: T0 });

  test("the demo data is consistent: key counters, totals table and buckets agree", async () => {
    const { buckets: n } = await seed();
    expect(n).toBeGreaterThan(5 * 72);
    await expectConsistent();
  });

  test("overview totals equal the sums of the key counters over the whole data, splits add up", async () => {
    await seed();
    const q = h.services.usageQueries;
    const o = await q.overview({ from: T0 - 4 * DAY, to: T0 });
    const [counters] = await h.store.all<{ n: number; bi: number; bo: number }>(
      sql`SELECT sum(conversions) AS n, sum(bytes_in) AS bi, sum(bytes_out) AS bo FROM api_keys`,
    );
    const [guard] = await h.store.all<{ ge: number }>(sql`SELECT sum(guard_encodes) AS ge FROM api_keys`);
    expect(o.totals).toMatchObject({
      conversions: counters!.n,
      bytesIn: counters!.bi,
      bytesOut: counters!.bo,
      bytesSaved: counters!.bi - counters!.bo,
      guardEncodes: guard!.ge,
    });
    // The demo's guard encodes are those of lossy AVIFs (the default IMGPRESS_QUALITY_GUARD=avif), 2 to a few each.
    const avifLossy = o.byFormatQuality.find((r) => r.format === "avif" && r.quality === "lossy")!;
    expect(avifLossy.guardEncodes).toBe(o.totals.guardEncodes);
    expect(avifLossy.guardEncodes / avifLossy.conversions).toBeGreaterThan(2);
    expect(avifLossy.guardEncodes / avifLossy.conversions).toBeLessThan(4);
    expect(o.byQuality.reduce((s, f) => s + f.guardEncodes, 0)).toBe(o.totals.guardEncodes);
    expect(o.totals.savingsPercent).toBeCloseTo((100 * (counters!.bi - counters!.bo)) / counters!.bi, 2);
    expect(o.byFormat.reduce((s, f) => s + f.conversions, 0)).toBe(o.totals.conversions);
    expect(o.byQuality.reduce((s, f) => s + f.bytesIn, 0)).toBe(o.totals.bytesIn);
    expect(o.byFormatQuality.reduce((s, f) => s + f.bytesSaved, 0)).toBe(o.totals.bytesSaved);
    expect(o.byFormatQuality.length).toBeGreaterThanOrEqual(o.byFormat.length);
    expect(o.errorsByCode.reduce((s, e) => s + e.count, 0)).toBe(o.totals.errors);
    expect(o.totals.errors).toBeGreaterThan(0);
    expect(o.totals.p50Ms!).toBeGreaterThan(0);
    expect(o.totals.p95Ms!).toBeGreaterThanOrEqual(o.totals.p50Ms!);
    // A range after the data is empty, not an error.
    expect((await q.overview({ from: T0 + DAY, to: T0 + 2 * DAY })).totals).toEqual({
      conversions: 0,
      bytesIn: 0,
      bytesOut: 0,
      bytesSaved: 0,
      guardEncodes: 0,
      errors: 0,
      savingsPercent: null,
      p50Ms: null,
      p95Ms: null,
    });
  });

  test("series: one point per step, empty steps as zeros, sums equal the overview; per key equals its counters", async () => {
    await seed();
    const q = h.services.usageQueries;
    const range = { from: T0 - 4 * DAY, to: T0 };
    const overview = await q.overview(range);
    const hourly = await q.series({ ...range, step: "hour" });
    expect(hourly.points).toHaveLength(96);
    expect(hourly.points[0]).toEqual({
      t: T0 - 4 * DAY,
      conversions: 0,
      bytesIn: 0,
      bytesOut: 0,
      bytesSaved: 0,
      guardEncodes: 0,
      errors: 0,
      errorsByCode: {},
      p50Ms: null,
      p95Ms: null,
    });
    expect(hourly.points.reduce((n, p) => n + p.conversions, 0)).toBe(overview.totals.conversions);
    expect(hourly.points.reduce((n, p) => n + p.errors, 0)).toBe(overview.totals.errors);
    expect(hourly.points.reduce((n, p) => n + p.guardEncodes, 0)).toBe(overview.totals.guardEncodes);
    // Each hour holds its own conversions (whole UTC days once landed on their 00:00 hour).
    const perHour = await h.store.all<{ hour: number; n: number }>(
      sql`SELECT hour, sum(count) AS n FROM usage_hourly_total WHERE hour >= ${range.from} AND hour < ${range.to} GROUP BY hour`,
    );
    expect(perHour.length).toBeGreaterThan(4);
    expect(
      hourly.points.filter((p) => p.conversions + p.errors > 0).map((p) => [p.t, p.conversions + p.errors]),
    ).toEqual(perHour.map((r) => [Number(r.hour), Number(r.n)]).sort((a, b) => a[0]! - b[0]!));
    const daily = await q.series({ ...range, step: "day", utcOffsetMinutes: 120 });
    // Days start at 22:00 UTC for UTC+2, so the range widens to five steps.
    expect(daily.points.map((p) => p.t)).toEqual([0, 1, 2, 3, 4].map((d) => T0 - 4 * DAY - 2 * HOUR + d * DAY));
    expect(daily.points.reduce((n, p) => n + p.bytesSaved, 0)).toBe(overview.totals.bytesSaved);
    // Whole UTC days come from usage_daily_total, whose guard encodes must agree too.
    const utcDays = await q.series({ ...range, step: "day" });
    expect(utcDays.points.reduce((n, p) => n + p.guardEncodes, 0)).toBe(overview.totals.guardEncodes);

    // The answers match the schemas routes will declare.
    expect(Value.Errors(Overview, overview).First()).toBeUndefined();
    expect(Value.Errors(Series, hourly).First()).toBeUndefined();
    const page = await q.keys({ sort: "conversions", order: "desc", page: 1, pageSize: 1 });
    expect(Value.Errors(KeysPage, page).First()).toBeUndefined();
    const [busiest] = page.rows;
    const own = await q.series({ ...range, step: "day", keyId: busiest!.id });
    expect(own.points.reduce((n, p) => n + p.conversions, 0)).toBe(busiest!.conversions);
    expect(own.points.reduce((n, p) => n + p.guardEncodes, 0)).toBe(busiest!.guardEncodes);
    const detail = await q.key(busiest!.id);
    // The page's row adds its figures over the table's range (all time here) to the key's own.
    const { inRange, ...ownRow } = busiest!;
    expect(detail!.key).toEqual(ownRow);
    expect(inRange?.conversions).toBe(busiest!.conversions);
    expect(Value.Errors(KeyDetail, detail).First()).toBeUndefined();
    expect(detail!.usage.totals.conversions).toBe(busiest!.conversions);
    expect(await q.key("key_unknown")).toBeNull();
  });

  test("keys: paging covers every key once, sorting follows the whitelist, page size and search are bounded", async () => {
    await seed();
    const q = h.services.usageQueries;
    const seen: string[] = [];
    for (let page = 1; page <= 6; page++) {
      const p = await q.keys({ page, pageSize: 7, sort: "email", order: "asc" });
      expect(p.total).toBe(40);
      seen.push(...p.rows.map((r) => r.id));
    }
    expect(seen).toHaveLength(40);
    expect(new Set(seen).size).toBe(40);
    const bySaved = (await q.keys({ page: 1, pageSize: 40, sort: "bytesSaved", order: "desc" })).rows.map(
      (r) => r.bytesSaved,
    );
    expect(bySaved).toEqual([...bySaved].sort((a, b) => b - a));
    expect((await q.keys({ page: 1, pageSize: 100 })).pageSize).toBe(100);
    for (const bad of [
      { sort: "email; DROP TABLE api_keys" },
      { order: "sideways" },
      { status: "deleted" },
      { page: 0 },
      { page: 1e300 },
      { pageSize: 0 },
      { pageSize: 101 },
      { search: "x".repeat(201) },
    ]) {
      const err = await q.keys({ page: 1, pageSize: 10, ...(bad as object) }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AppError);
      expect(err).toMatchObject({ status: 400, code: "VALIDATION_ERROR" });
    }
    expect((await q.keys({ page: 1, pageSize: 1 })).total).toBe(40);
  });

  test("keys: search matches e-mail, site and prefix case-insensitively; % and _ match only themselves", async () => {
    const keys = h.services.keys;
    const underscore = await keys.issue("a_b@example.com", "https://one.example.com");
    await keys.issue("axb@example.com", "https://two.example.com");
    const percent = await keys.issue("sale100%@example.com", "");
    await keys.issue("sale1000@example.com", "https://100-percent.example.com");
    const revoked = await keys.issue("gone@example.com", "https://gone.example.com");
    await keys.revoke(revoked.id);
    const q = h.services.usageQueries;
    const ids = async (search: string, status?: "active" | "revoked" | "all") =>
      (await q.keys({ search, status, page: 1, pageSize: 50 })).rows.map((r) => r.id);
    expect(await ids("A_B")).toEqual([underscore.id]);
    expect(await ids("%")).toEqual([percent.id]);
    expect(await ids("100%")).toEqual([percent.id]);
    // Every key prefix has an underscore (imp_…), so look for one next to the @.
    expect(await ids("_b@")).toEqual([underscore.id]);
    expect(await ids("//ONE.EXAMPLE")).toEqual([underscore.id]);
    expect(await ids(percent.keyPrefix.slice(2))).toEqual([percent.id]);
    expect(await ids("gone", "active")).toEqual([]);
    expect(await ids("gone", "revoked")).toEqual([revoked.id]);
    expect((await q.keys({ search: "gone", page: 1, pageSize: 5 })).rows[0]).toMatchObject({
      status: "revoked",
      conversions: 0,
      lastUsedAt: null,
    });
  });

  test("ranges: reversed, empty or longer than 400 days are refused with VALIDATION_ERROR", async () => {
    const q = h.services.usageQueries;
    for (const range of [
      { from: T0, to: T0 },
      { from: T0, to: T0 - 1 },
      { from: T0 - 401 * DAY, to: T0 },
      { from: Number.NaN, to: T0 },
    ]) {
      await expect(q.overview(range)).rejects.toMatchObject({ status: 400, code: "VALIDATION_ERROR" });
      await expect(q.series({ ...range, step: "day" })).rejects.toMatchObject({
        status: 400,
        code: "VALIDATION_ERROR",
      });
    }
    expect((await q.series({ from: T0 - 400 * DAY, to: T0, step: "hour" })).points).toHaveLength(9600);
  });
});
