/**
 * Store-level rules on both backends: the embedded libSQL file and PostgreSQL (a private cluster
 * started by test/support/postgres.ts). Two in-process instances of the real app share one
 * database, as instances behind a load balancer do, and every shared-state rule must hold across
 * them: one-time codes, wrong-guess budgets, rate limits, replay records, revocation, usage sums,
 * staff and sessions, the master-key pin. The schema twins are compared column by column.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getTableColumns, getTableName, is, sql, Table } from "drizzle-orm";
import { ConfigError } from "../../../src/core/config.ts";
import { AuditLog } from "../../../src/data/audit/service.ts";
import { openStore } from "../../../src/data/db/index.ts";
import * as sqliteSchema from "../../../src/data/db/schema.ts";
import * as pgSchema from "../../../src/data/db/schema-pg.ts";
import { convertForm, type Keys, postBearer, postSigned } from "../../support/convert-helpers.ts";
import { createHarness, expectError, type Harness, wrongCode } from "../../support/harness.ts";
import * as img from "../../support/images.ts";
import { createDatabase, psql } from "../../support/postgres.ts";
import { signedHeaders } from "../../support/sign.ts";
import { type SmtpSink, startSmtpSink } from "../../support/smtp.ts";

const folders: string[] = [];
afterAll(async () => {
  for (const dir of folders) await rm(dir, { recursive: true, force: true });
});

async function freshFile(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "imgpress-store-"));
  folders.push(dir);
  return `file:${join(dir, "shared.db")}`;
}

const backends: [string, () => Promise<string>][] = [
  ["libSQL file", freshFile],
  ["PostgreSQL", () => createDatabase("store")],
];

/** Tables of a schema module by SQL name, each with its columns' SQL names, types left aside. */
function shape(
  schema: Record<string, unknown>,
): Record<string, { key: string; columns: Record<string, { name: string; notNull: boolean; primary: boolean }> }> {
  const tables: ReturnType<typeof shape> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (!is(value, Table)) continue;
    const columns = Object.fromEntries(
      Object.entries(getTableColumns(value)).map(([k, c]) => [
        k,
        { name: c.name, notNull: c.notNull, primary: c.primary },
      ]),
    );
    tables[getTableName(value)] = { key, columns };
  }
  return tables;
}

test("the PostgreSQL schema is the SQLite schema's twin: same tables, same JS keys, same column names and nullability", () => {
  const lite = shape(sqliteSchema);
  expect(Object.keys(lite).length).toBe(17);
  expect(shape(pgSchema)).toEqual(lite);
});

describe.each(backends)("two instances on one %s", (_name, freshUrl) => {
  let url: string;
  let smtp: SmtpSink;
  let a: Harness;
  let b: Harness;
  let image: Buffer;
  let n = 0;
  /** A fresh body each time: the same body and timestamp would be a replay. */
  const body = () => convertForm(image, { max_width: String(200 + n++) });
  const both = () => [a, b] as const;
  const advance = (ms: number) => {
    for (const h of both()) h.clock.advance(ms);
  };

  beforeAll(async () => {
    url = await freshUrl();
    smtp = await startSmtpSink();
    // Started together on an empty database: the migrations of one must not trip the other.
    [a, b] = await Promise.all([
      createHarness({ smtp, env: { IMGPRESS_DATABASE_URL: url } }),
      createHarness({ smtp, env: { IMGPRESS_DATABASE_URL: url } }),
    ]);
    image = await img.photo(96, 64);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await smtp?.close();
  });

  test("a code requested through A is exchanged through B, exactly once when both try at the same moment", async () => {
    const email = "once@example.com";
    const { code } = await a.obtainOtp(email);
    const tries = await Promise.all(
      [a, b, b, a].map((h, i) => h.verifyOtp({ email, otp: code }, { ip: `198.51.100.${i + 1}` })),
    );
    expect(tries.map((r) => r.status).sort()).toEqual([200, 401, 401, 401]);
    const winner = tries.find((r) => r.status === 200)!.body as Keys;
    expect(winner.api_key).toStartWith("imp_");
    // The key works on both instances.
    for (const h of both()) expect((await postBearer(h, winner, await body())).status).toBe(200);
  });

  test("wrong guesses spread over both instances, all at once, burn the code after five; no more than five are ever compared", async () => {
    const email = "burn@example.com";
    const { code } = await b.obtainOtp(email);
    const guesses = Array.from({ length: 10 }, (_, i) =>
      (i % 2 ? a : b).verifyOtp({ email, otp: wrongCode(code, 1 + i) }, { ip: `198.51.100.${20 + i}` }),
    );
    // Wrong, or refused as burnt once the fifth has been spent: never a key.
    for (const r of await Promise.all(guesses)) expect([401, 429]).toContain(r.status);
    const table = a.store.tables.otpCodes;
    const rows = await a.store.db
      .select({ attempts: table.attempts })
      .from(table)
      .where(sql`${table.email} = ${email}`);
    expect(rows.map((r) => r.attempts)).toEqual([5]);
    expect((await a.verifyOtp({ email, otp: code }, { ip: "198.51.100.40" })).status).not.toBe(200);
  });

  test("a rate limit counts both instances' events: of six simultaneous code requests for one address, exactly one passes", async () => {
    const email = "limited@example.com";
    const all = await Promise.all(
      Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).requestOtp({ email }, { ip: `203.0.113.${i + 1}` })),
    );
    expect(all.map((r) => r.status).sort()).toEqual([200, 429, 429, 429, 429, 429]);
    for (const r of all.filter((r) => r.status === 429)) expectError(r, 429, "RATE_LIMITED");
  });

  test("the limiter stays exact under a burst: of 60 simultaneous events in a bucket of 7, over both instances, exactly 7 pass", async () => {
    const rule = [{ limit: 7, windowMs: 60_000 }];
    const outcomes = await Promise.allSettled(
      Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).services.limiter.hit("burst", rule)),
    );
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(7);
    for (const o of outcomes) if (o.status === "rejected") expect(o.reason.code).toBe("RATE_LIMITED");
  });

  test("a signature accepted by one instance is a replay on the other", async () => {
    const keys = await a.issueKey("signer@example.com", "https://shared.example.com");
    const form = await body();
    const headers = signedHeaders({
      apiKey: keys.api_key,
      secretKey: keys.secret_key,
      timestamp: Math.floor(a.clock.now() / 1000),
      body: form.bytes,
    });
    expect((await postSigned(a, keys, form, { timestamp: headers["x-timestamp"] })).status).toBe(200);
    const replay = await postSigned(b, keys, form, { timestamp: headers["x-timestamp"] });
    expect(replay.status).toBe(401);
    expect(replay.body.code).toBe("REPLAYED_REQUEST");
    // A fresh signature still passes on B.
    advance(1000);
    expect((await postSigned(b, keys, await body())).status).toBe(200);
  });

  test("an instance whose clock runs ahead (within the tolerance) cannot prune a replay record another instance still needs", async () => {
    const keys = await a.issueKey("skew@example.com", "https://shared.example.com");
    const form = await body();
    const timestamp = String(Math.floor(b.clock.now() / 1000));
    expect((await postSigned(b, keys, form, { timestamp })).status).toBe(200);
    // A's clock runs 290 s ahead of B's: by A's clock the record expired (300 s tolerance + 1 s) a few seconds ago.
    b.clock.advance(15_000);
    a.clock.advance(15_000 + 290_000);
    await a.services.authenticator.prune();
    // B, on time, still accepts that timestamp: the record must still be there to refuse the replay.
    const replay = await postSigned(b, keys, form, { timestamp });
    expect({ status: replay.status, code: replay.body.code }).toEqual({ status: 401, code: "REPLAYED_REQUEST" });
    b.clock.advance(290_000); // the clocks agree again for the tests below
  });

  test("a key revoked through one instance is refused on the other's very next request", async () => {
    const keys = await b.issueKey("revoked@example.com");
    expect((await postBearer(a, keys, await body())).status).toBe(200);
    const [row] = await a.services.keys.list({ email: "revoked@example.com" });
    expect(await b.services.keys.revoke(row!.id)).toBe(true);
    expect(await a.services.keys.revoke(row!.id)).toBe(false);
    expect((await postBearer(a, keys, await body())).status).toBe(401);
    expect((await postBearer(b, keys, await body())).status).toBe(401);
  });

  test("usage from both instances adds up exactly: buckets, totals, key counters and the dashboard's queries", async () => {
    const keys = await a.issueKey("counted@example.com");
    const [row] = await a.services.keys.list({ email: "counted@example.com" });
    const sizes: number[] = [];
    for (const h of [a, b, a, b, b]) {
      const res = await postBearer(h, keys, await body());
      expect(res.status).toBe(200);
      sizes.push(res.bytes.byteLength);
    }
    expect((await postBearer(a, keys, await convertForm(new Uint8Array([1, 2, 3])))).status).toBe(415);
    await Promise.all(both().map((h) => h.services.usage.flush()));
    // Flushing again adds nothing: each bucket was written once.
    await Promise.all(both().map((h) => h.services.usage.flush()));
    const [sums] = await a.store.all<{ n: number; bo: number }>(
      sql`SELECT sum(count) AS n, sum(bytes_out) AS bo FROM usage_hourly WHERE key_id = ${row!.id} AND outcome = 'ok'`,
    );
    expect(sums).toEqual({ n: 5, bo: sizes.reduce((x, y) => x + y, 0) });
    const [counter] = await b.services.keys.list({ email: "counted@example.com" });
    expect({ conversions: counter!.conversions, bytesOut: counter!.bytesOut }).toEqual({
      conversions: 5,
      bytesOut: sums!.bo,
    });
    expect(counter!.lastUsedAt).toBe(a.clock.now());

    const range = { from: a.clock.now() - 3_600_000, to: a.clock.now() + 3_600_000 };
    const overview = await b.services.usageQueries.overview({ ...range, keyId: row!.id });
    expect(overview.totals.conversions).toBe(5);
    expect(overview.totals.bytesOut).toBe(sums!.bo);
    expect(overview.errorsByCode).toEqual([{ code: "UNSUPPORTED_MEDIA_TYPE", count: 1 }]);
    expect(overview.totals.p50Ms).not.toBeNull();
    const series = await a.services.usageQueries.series({ ...range, step: "hour" });
    expect(series.points.reduce((s, p) => s + p.conversions, 0)).toBeGreaterThanOrEqual(5);
    const page = await a.services.usageQueries.keys({
      page: 1,
      pageSize: 50,
      sort: "lastUsed",
      order: "desc",
      search: "COUNTED",
    });
    expect(page.total).toBe(1);
    expect(page.rows[0]).toMatchObject({ email: "counted@example.com", conversions: 5, status: "active" });
    // A never-used key sorts as the oldest on both engines (PostgreSQL's DESC puts NULLs first unless told).
    await b.issueKey("idle@example.com");
    const byUse = await a.services.usageQueries.keys({ page: 1, pageSize: 50, sort: "lastUsed", order: "desc" });
    expect(byUse.rows.at(-1)).toMatchObject({ email: "idle@example.com", lastUsedAt: null });
    expect(byUse.rows[0]!.lastUsedAt).not.toBeNull();
    // Oldest first, it comes first.
    const oldestFirst = await a.services.usageQueries.keys({ page: 1, pageSize: 50, sort: "lastUsed", order: "asc" });
    expect(oldestFirst.rows[0]).toMatchObject({ email: "idle@example.com", lastUsedAt: null });
    expect(oldestFirst.rows.at(-1)!.lastUsedAt).not.toBeNull();
    const detail = await b.services.usageQueries.key(row!.id, range);
    expect(detail?.usage.totals.conversions).toBe(5);
  });

  test("refused requests from both instances add up, and the hour's named clients stay bounded across them", async () => {
    const hour = Math.floor(a.clock.now() / 3_600_000) * 3_600_000;
    for (const h of [a, b]) {
      for (let i = 0; i < 3; i++) h.services.refusals.record("address", "203.0.113.5", "INVALID_SIGNATURE", hour + i);
      h.services.refusals.record("key", "key_x", "INVALID_API_KEY", hour + 10);
      for (let i = 0; i < 30; i++) h.services.refusals.record("address", `198.51.100.${i}`, "UNAUTHORIZED", hour + 20);
    }
    for (const h of [a, b]) await h.services.refusals.flush();
    const range = { from: hour, to: hour + 3_600_000 };
    const top = await b.services.refusalQueries.top(range, 3);
    // 32 clients on each: 20 named (the largest first), 12 folded into "other" on each instance.
    expect(top[0]).toMatchObject({ kind: "other", client: "", count: 24, mainCode: "UNAUTHORIZED" });
    expect(top[1]).toMatchObject({
      kind: "address",
      client: "203.0.113.5",
      count: 6,
      lastAt: hour + 2,
      mainCode: "INVALID_SIGNATURE",
    });
    expect(await a.services.refusalQueries.codes({ ...range, keyId: "key_x" })).toEqual({
      total: 2,
      byCode: [{ code: "INVALID_API_KEY", count: 2 }],
    });
    const points = await a.services.refusalQueries.series({
      from: hour - 86_400_000,
      to: hour + 3_600_000,
      step: "day",
    });
    expect(points.reduce((s, p) => s + p.total, 0)).toBe(68);
    const [rows] = await a.store.all<{ n: number }>(sql`SELECT count(*) AS n FROM refused_hourly WHERE hour = ${hour}`);
    expect(rows!.n).toBeLessThanOrEqual(20 + 2);
  });

  test("per-key range figures: whole days from usage_daily, edge hours from usage_hourly, refused from refused_hourly; last address as IPv4 or IPv6 /64", async () => {
    const busy = await a.issueKey("ranged-busy@example.com");
    const early = await a.issueKey("ranged-early@example.com");
    await a.issueKey("ranged-refused@example.com");
    const idOf = async (email: string) => (await a.services.keys.list({ email }))[0]!.id;
    const [busyId, earlyId, refusedId] = (await Promise.all(
      ["ranged-busy", "ranged-early", "ranged-refused"].map((n) => idOf(`${n}@example.com`)),
    )) as [string, string, string];
    // A fresh hour: the refused-requests test filled the last one's named clients.
    advance(2 * 3_600_000);
    // Two days ago: "early" converts three times (a whole day inside a 7-day range, outside 24 h).
    advance(-2 * 86_400_000);
    for (let i = 0; i < 3; i++) expect((await postSigned(a, early, await body(), {}, "198.51.100.7")).status).toBe(200);
    advance(2 * 86_400_000);
    // Now: "busy" converts twice through each instance, the last time from an IPv6 address; one failed attempt.
    for (const h of [a, b, a]) expect((await postSigned(h, busy, await body(), {}, "203.0.113.9")).status).toBe(200);
    advance(1000);
    expect((await postSigned(b, busy, await body(), {}, "2001:db8:1:2:3:4:5:6")).status).toBe(200);
    expect((await postBearer(a, busy, await convertForm(new Uint8Array([1, 2, 3])))).status).toBe(415);
    for (let i = 0; i < 9; i++) a.services.refusals.record("key", refusedId, "KEY_REVOKED", a.clock.now());
    await Promise.all(both().map((h) => h.services.usage.flush()));
    await a.services.refusals.flush();

    const now = a.clock.now();
    const day = { from: now - 86_400_000, to: now + 1 };
    const week = { from: now - 7 * 86_400_000, to: now + 1 };
    const mine = <T extends { email: string }>(rows: T[]) => rows.filter((r) => r.email.startsWith("ranged-"));
    const top = mine(await b.services.usageQueries.topKeys(day, 50));
    // Conversions plus refused: 9 refusals outrank 4 conversions; "early" has nothing in the last 24 h.
    expect(top.map((k) => [k.email, k.conversions, k.errors, k.refused])).toEqual([
      ["ranged-refused@example.com", 0, 0, 9],
      ["ranged-busy@example.com", 4, 1, 0],
    ]);
    expect(top[1]!.bytesSaved).toBe(top[1]!.bytesIn - top[1]!.bytesOut);
    const weekTop = mine(await a.services.usageQueries.topKeys(week, 50));
    expect(weekTop.find((k) => k.id === earlyId)?.conversions).toBe(3);

    const page = (range: typeof day | undefined, sort: "conversions" | "refused" | "errors") =>
      a.services.usageQueries.keys({ page: 1, pageSize: 100, sort, order: "desc", search: "ranged-", range });
    expect((await page(day, "conversions")).rows.map((r) => [r.id, r.inRange?.conversions])).toEqual([
      [busyId, 4],
      // Ties (zero in the range) by id, descending.
      ...[earlyId, refusedId]
        .sort()
        .reverse()
        .map((id) => [id, 0]),
    ]);
    expect((await page(week, "conversions")).rows.map((r) => r.inRange?.conversions)).toEqual([4, 3, 0]);
    expect((await page(day, "refused")).rows[0]).toMatchObject({ id: refusedId, inRange: { refused: 9 } });
    expect((await page(day, "errors")).rows[0]).toMatchObject({ id: busyId, inRange: { errors: 1 } });
    // All time: the counters for conversions, the retention period for errors and refused requests.
    const allTime = await page(undefined, "conversions");
    expect(allTime.rows.map((r) => [r.id, r.inRange?.conversions, r.inRange?.refused])).toEqual([
      [busyId, 4, 0],
      [earlyId, 3, 0],
      [refusedId, 0, 9],
    ]);
    expect(allTime.rows.map((r) => r.lastAddress)).toEqual(["2001:db8:1:2::/64", "198.51.100.7", null]);
  });

  test("staff added on one instance is staff on the other; removing them ends their sessions everywhere", async () => {
    expect((await a.services.staff.add("ops@example.com", "cli")).added).toBe(true);
    expect(await b.services.staff.isStaff("ops@example.com")).toBe(true);
    const session = await a.services.sessions.create("ops@example.com", "192.0.2.1", "test");
    expect((await b.services.sessions.authenticate(session.token))?.email).toBe("ops@example.com");
    expect((await b.services.sessions.list("ops@example.com")).map((s) => s.id)).toEqual([session.id]);
    expect((await b.services.staff.remove("ops@example.com", "cli")).removed).toBe(true);
    expect(await a.services.sessions.authenticate(session.token)).toBeNull();
    expect((await a.services.staff.remove("ops@example.com", "cli")).removed).toBe(false);
    const events = await b.services.audit.list({ type: "staff.removed" });
    expect(events.map((e) => e.subject)).toEqual(["ops@example.com"]);
  });

  test("sessions: ending one and ending all report what they ended", async () => {
    await a.services.staff.add("lead@example.com", "cli");
    const [s1, s2] = [
      await a.services.sessions.create("lead@example.com", "192.0.2.2", "x"),
      await b.services.sessions.create("lead@example.com", "192.0.2.3", "y"),
    ];
    expect(await b.services.sessions.end("lead@example.com", s1.id)).toBe(true);
    expect(await a.services.sessions.end("lead@example.com", s1.id)).toBe(false);
    expect(await a.services.sessions.endAll("lead@example.com")).toBe(1);
    expect(await b.services.sessions.authenticate(s2.token)).toBeNull();
  });

  test("the minute's maintenance runs on both instances without error and removes what expired", async () => {
    advance(2 * 3_600_000);
    for (const h of both()) {
      await h.services.issuance.prune();
      await h.services.staffSignIn.prune();
      await h.services.sessions.prune();
      await h.services.limiter.prune(60 * 60 * 1000);
      await h.services.authenticator.prune();
      await h.services.usage.prune();
    }
    const [left] = await b.store.all<{ codes: number; events: number; seen: number }>(
      sql`SELECT (SELECT count(*) FROM otp_codes) AS codes, (SELECT count(*) FROM rate_events) AS events, (SELECT count(*) FROM seen_signatures) AS seen`,
    );
    expect(left).toEqual({ codes: 0, events: 0, seen: 0 });
  });

  test("wrong staff codes: counted per address and hour for addresses that are not staff (over both instances), an event each for staff", async () => {
    const stranger = "not-staff@example.com";
    await a.services.staff.add("guarded@example.com", "cli");
    const verify = (h: Harness, email: string, i: number) =>
      h.services.staffSignIn.verify({ email, code: "000000", ip: `192.0.2.${100 + i}`, userAgent: "t" });
    const tries = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => verify(i % 2 ? a : b, stranger, i)));
    expect(tries.map((t) => t.status)).toEqual(Array(6).fill("rejected"));
    await expect(verify(a, "guarded@example.com", 7)).rejects.toThrow(/expired or was already used/);
    const hour = Math.floor(a.clock.now() / 3_600_000) * 3_600_000;
    expect(
      (await b.services.audit.failedSignInCounts(0)).map(({ email, hour, attempts }) => ({ email, hour, attempts })),
    ).toEqual([{ email: stranger, hour, attempts: 6 }]);
    expect((await b.services.audit.list({ type: "staff.sign_in_failed" })).map((e) => e.actor)).toEqual([
      "guarded@example.com",
    ]);
    // The next hour is a row of its own.
    advance(3_600_000);
    await expect(verify(b, stranger, 8)).rejects.toThrow(/expired or was already used/);
    expect((await a.services.audit.failedSignInCounts(0)).map((r) => r.attempts)).toEqual([1, 6]);
  });

  test("the audit's retention: events and failed sign-in counts older than it go, and the pruning is itself an event; 0 keeps everything", async () => {
    const now = () => a.clock.now();
    for (const subject of ["one@example.com", "two@example.com"])
      await b.services.audit.record({ type: "staff.added", actor: "cli", subject });
    await a.services.audit.countFailedSignIn("old-stranger@example.com", "192.0.2.8");
    expect(await new AuditLog(a.store, now, 0).prune()).toBe(0);
    const before = (await a.services.audit.list({ limit: 500 })).length;
    expect(before).toBeGreaterThan(0);
    advance(2 * 86_400_000);
    await a.services.audit.record({ type: "staff.added", actor: "cli", subject: "recent@example.com" });
    await a.services.audit.countFailedSignIn("recent-stranger@example.com", "192.0.2.9");
    const pruned = await new AuditLog(b.store, now, 1).prune();
    expect(pruned).toBe(before);
    const left = await a.services.audit.list({ limit: 500 });
    expect(left.map((e) => e.type)).toEqual(["audit.pruned", "staff.added"]);
    expect(left[0]!.detail).toEqual({
      deleted: before,
      before: new Date(now() - 86_400_000).toISOString(),
      retentionDays: 1,
    });
    expect((await a.services.audit.failedSignInCounts(0)).map((r) => r.email)).toEqual(["recent-stranger@example.com"]);
    // Nothing older left: a second prune deletes nothing and records nothing.
    expect(await new AuditLog(a.store, now, 1).prune()).toBe(0);
    expect((await a.services.audit.list({ limit: 500 })).length).toBe(2);
  });

  test("a prune of more old events than one slice deletes every one of them, announced once", async () => {
    const old = a.clock.now() - 400 * 86_400_000;
    const { auditEvents } = a.store.tables;
    for (let i = 0; i < 12; i++)
      await a.store.db.insert(auditEvents).values(
        Array.from({ length: 1000 }, (_, j) => ({
          at: old + i * 1000 + j,
          type: "key.issued",
          actor: `bulk${j}@example.com`,
        })),
      );
    await a.store.db.insert(auditEvents).values({ at: old + 20_000, type: "key.issued", actor: "last@example.com" });
    expect(await new AuditLog(b.store, () => a.clock.now(), 365).prune()).toBe(12_001);
    const [left] = await a.store.all<{ n: number }>(
      sql`SELECT count(*) AS n FROM audit_events WHERE at < ${a.clock.now() - 365 * 86_400_000}`,
    );
    expect(Number(left!.n)).toBe(0);
    expect((await a.services.audit.list({ type: "audit.pruned", limit: 1 }))[0]!.detail).toMatchObject({
      deleted: 12_001,
      retentionDays: 365,
    });
  });

  test("an instance holding another master key refuses to start on this database", async () => {
    const other = createHarness({ smtp, env: { IMGPRESS_DATABASE_URL: url, IMGPRESS_MASTER_KEY: "1e".repeat(32) } });
    await expect(other).rejects.toBeInstanceOf(ConfigError);
    await expect(other).rejects.toThrow(/not the one this database was created with/);
  });
});

describe("PostgreSQL migrations", () => {
  test("eight stores opening one fresh database at the same moment migrate it exactly once", async () => {
    const url = await createDatabase("migrate");
    const stores = await Promise.all(Array.from({ length: 8 }, () => openStore(url, { poolSize: 2 })));
    try {
      const applied = await psql(url, "SELECT count(*) FROM __drizzle_migrations");
      const { postgresMigrations } = await import("../../../src/data/db/migrations.gen.ts");
      expect(Number(applied)).toBe(postgresMigrations.length);
      // One store did the work and says so (the server logs it); the seven that waited applied nothing.
      const reports = stores.map((s) => s.migrationsApplied.length).sort((a, b) => b - a);
      expect(reports).toEqual([postgresMigrations.length, 0, 0, 0, 0, 0, 0, 0]);
      expect(stores.find((s) => s.migrationsApplied.length > 0)!.migrationsApplied).toEqual(
        postgresMigrations.map((m) => m.tag),
      );
      expect(await psql(url, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'api_keys'")).toBe("1");
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  test("a database a newer version migrated is refused and left as it was (an older instance started in a rolling upgrade)", async () => {
    const url = await createDatabase("newer");
    await (await openStore(url, { poolSize: 1 })).close();
    const { postgresMigrations } = await import("../../../src/data/db/migrations.gen.ts");
    const future = postgresMigrations.at(-1)!.when + 1;
    await psql(url, `INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('from-a-newer-version', ${future})`);
    await expect(openStore(url, { poolSize: 1 })).rejects.toThrow(
      `this database was migrated by a newer imgpress (its newest migration is from ${new Date(future).toISOString()}`,
    );
    expect(await psql(url, "SELECT count(*) FROM __drizzle_migrations")).toBe(String(postgresMigrations.length + 1));
  });
});
