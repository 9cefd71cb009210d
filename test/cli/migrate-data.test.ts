/**
 * `imgpress migrate-data` from a real libSQL file, filled through the real app (keys issued by the
 * OTP flow, bearer and signed conversions, flushed usage, a staff member), into a fresh database of
 * a private PostgreSQL cluster, run as a real process. Then a second app on the PostgreSQL URL
 * with the same master key: old keys convert (bearer, and signed: the sealed secret still opens),
 * counters, buckets and staff came along, new rows do not collide with copied ids. Refusals (a
 * non-empty target, the same database, a server on the source, a missing file) change nothing, and
 * no output ever shows a password. copyDatabase with tiny pages checks keyset paging row by row.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { asc } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { copyDatabase, TABLES } from "../../src/data/db/copy.ts";
import { openStore, type Store } from "../../src/data/db/index.ts";
import { pidFilePath } from "../../src/server/pidfile.ts";
import {
  convertForm,
  expectImage,
  type Keys,
  postBearer,
  postConvert,
  postSigned,
  type RawResponse,
} from "../support/convert-helpers.ts";
import { createHarness, expectError, type Harness } from "../support/harness.ts";
import * as img from "../support/images.ts";
import { cleanEnv } from "../support/imgpress.ts";
import { createDatabase, startPostgres } from "../support/postgres.ts";
import { type CliResult, ROOT, runCli, runtimeCommand } from "../support/server.ts";
import { signedHeaders } from "../support/sign.ts";

let source: Harness;
let alice: Keys;
let bob: Keys;
let image: Buffer;
let password: string;
let sourceUrl: string;
let pgUrl: string;
let migrated: CliResult;
/** A signed request the source accepted: replayed on the new database it must be refused. */
let acceptedSigned: { body: Awaited<ReturnType<typeof convertForm>>; headers: Record<string, string> };
let n = 0;
const body = (fields: Record<string, string> = {}) => convertForm(image, { ...fields, max_width: String(1000 + n++) });

const output = (r: CliResult) => r.stdout + r.stderr;
const table = (store: Store, name: string) =>
  store.tables[TABLES.find((t) => t.name === name)!.key] as unknown as SQLiteTable;

/** Rows per table, in TABLES order. */
async function counts(store: Store): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of TABLES) out[t.name] = (await store.db.select().from(table(store, t.name))).length;
  return out;
}

/** Every row of a table in primary-key order. */
async function rows(store: Store, name: string): Promise<Record<string, unknown>[]> {
  const plan = TABLES.find((t) => t.name === name)!;
  const t = table(store, name);
  const columns = plan.order.map((p) => (t as unknown as Record<string, Parameters<typeof asc>[0]>)[p]!);
  return store.db
    .select()
    .from(t)
    .orderBy(...columns.map((c) => asc(c)));
}

async function expectConverted(res: RawResponse) {
  expect({ status: res.status, type: res.headers.get("content-type") }).toEqual({ status: 200, type: "image/webp" });
  await expectImage(res.bytes, { format: "webp", width: 64, height: 48 });
}

function expectNoPassword(r: CliResult, secret = password) {
  expect(output(r)).not.toContain(secret);
  expect(output(r)).not.toContain(encodeURIComponent(secret));
}

beforeAll(async () => {
  password = (await startPostgres()).password;
  image = await img.photo(64, 48);
  source = await createHarness();
  alice = await source.issueKey("alice@example.com", "https://blog.example.com");
  bob = await source.issueKey("bob@example.com");
  await expectConverted(await postBearer(source, alice, await body()));
  await expectConverted(await postBearer(source, alice, await body({ format: "webp", quality: "lossless" })));
  await expectConverted(await postSigned(source, bob, await body()));
  const signedBody = await body();
  const headers = signedHeaders({
    apiKey: bob.api_key,
    secretKey: bob.secret_key,
    timestamp: Math.floor(source.clock.now() / 1000),
    body: signedBody.bytes,
  });
  await expectConverted(
    await postConvert(source, { body: signedBody.bytes, contentType: signedBody.contentType, headers }),
  );
  acceptedSigned = { body: signedBody, headers };
  // A failed attempt is a usage bucket too (outcome = its error code).
  expect((await postBearer(source, alice, await body({ format: "gif" }))).status).toBe(400);
  await source.services.usage.flush();
  await source.services.staff.add("boss@example.com", "cli");
  sourceUrl = `file:${source.dbPath}`;
  pgUrl = await createDatabase("migdata");
  migrated = await runCli(["migrate-data", "--from", sourceUrl, "--to", pgUrl]);
});

afterAll(async () => {
  await source?.close();
});

describe("libSQL file → PostgreSQL", () => {
  let target: Harness;
  beforeAll(async () => {
    target = await createHarness({ env: { IMGPRESS_DATABASE_URL: pgUrl } });
  });
  afterAll(() => target?.close());

  test("exits 0, prints a row-count table and the master-key reminder, never the password", async () => {
    expect({ code: migrated.code, stderr: migrated.code === 0 ? "" : migrated.stderr }).toEqual({
      code: 0,
      stderr: "",
    });
    const before = await counts(source.store);
    for (const [name, rowCount] of Object.entries(before))
      expect(migrated.stdout).toMatch(new RegExp(`^${name}\\s+${rowCount}\\s+${rowCount}$`, "m"));
    for (const name of ["api_keys", "usage_hourly", "staff_members", "database_facts"])
      expect(migrated.stderr).toMatch(new RegExp(`migrate-data: ${name} \\d+/\\d+ rows`));
    expect(migrated.stdout).toContain("SAME master key");
    expect(migrated.stderr).toContain("postgres://imgpress:******@127.0.0.1");
    expectNoPassword(migrated);
  });

  test("every table has the source's rows, value for value", async () => {
    expect(await counts(target.store)).toEqual(await counts(source.store));
    for (const name of [
      "api_keys",
      "usage_hourly",
      "usage_hourly_total",
      "usage_daily_total",
      "usage_daily",
      "staff_members",
      "audit_events",
      "database_facts",
      "seen_signatures",
    ]) {
      expect({ name, rows: await rows(target.store, name) }).toEqual({ name, rows: await rows(source.store, name) });
    }
    const [check] = (await rows(target.store, "database_facts")).filter((r) => r.name === "master_key_check");
    expect(check).toBeDefined();
  });

  test("counters and usage figures read the same through the services", async () => {
    // Sorted here: both keys were issued at the same (fake) instant, and list() orders by time only.
    const list = async (h: Harness) =>
      (await h.services.keys.list({ activeOnly: false })).sort((a, b) => a.id.localeCompare(b.id));
    expect(await list(target)).toEqual(await list(source));
    const aliceRow = (await list(target)).find((k) => k.email === "alice@example.com")!;
    expect(aliceRow.conversions).toBe(2);
    expect((await target.services.staff.list()).map((s) => s.email)).toContain("boss@example.com");
  });

  test("old keys convert on the new database: bearer, and signed (the sealed secret opens)", async () => {
    const before = (await target.services.keys.list({ activeOnly: false })).find(
      (k) => k.email === "bob@example.com",
    )!.conversions;
    await expectConverted(await postBearer(target, alice, await body()));
    await expectConverted(await postSigned(target, bob, await body()));
    await expectConverted(await postSigned(target, alice, await body()));
    await target.services.usage.flush();
    const after = (await target.services.keys.list({ activeOnly: false })).find(
      (k) => k.email === "bob@example.com",
    )!.conversions;
    expect(after).toBe(before + 1);
  });

  test("a signature accepted before the move is a replay after it", async () => {
    const res = await postConvert(target, {
      body: acceptedSigned.body.bytes,
      contentType: acceptedSigned.body.contentType,
      headers: acceptedSigned.headers,
    });
    expectError({ status: res.status, headers: res.headers, body: res.body, text: "" }, 401, "REPLAYED_REQUEST");
  });

  test("new audit events and rate events get ids after the copied ones (sequences moved on)", async () => {
    const maxId = async (name: string) => Math.max(0, ...(await rows(target.store, name)).map((r) => r.id as number));
    const [auditBefore, rateBefore] = [await maxId("audit_events"), await maxId("rate_events")];
    await target.services.staff.add("second@example.com", "cli");
    await target.issueKey("carol@example.com");
    expect(await maxId("audit_events")).toBeGreaterThan(auditBefore);
    expect(await maxId("rate_events")).toBeGreaterThan(rateBefore);
  });

  test("a second migrate-data into the now non-empty target is refused and changes nothing", async () => {
    const before = await counts(target.store);
    const r = await runCli(["migrate-data", "--from", sourceUrl, "--to", pgUrl]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("refused, nothing written");
    expect(r.stderr).toContain("already holds data (api_keys");
    expectNoPassword(r);
    expect(await counts(target.store)).toEqual(before);
  });

  test("back the other way: PostgreSQL → a new libSQL file", async () => {
    const file = join(source.dir, "back.db");
    const r = await runCli(["migrate-data", "--from", pgUrl, "--to", `file:${file}`]);
    expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
    expectNoPassword(r);
    const back = await openStore(`file:${file}`);
    try {
      expect(await counts(back)).toEqual(await counts(target.store));
      expect(await rows(back, "api_keys")).toEqual(await rows(target.store, "api_keys"));
    } finally {
      await back.close();
    }
  });
});

describe("refusals", () => {
  test("the same database twice, however spelled", async () => {
    const cases = [
      [sourceUrl, sourceUrl],
      [sourceUrl, `file:${source.dir}/./imgpress.db`],
      [pgUrl, pgUrl.replace("postgres://", "postgresql://")],
    ];
    for (const [from, to] of cases) {
      const r = await runCli(["migrate-data", "--from", from!, "--to", to!]);
      expect({ code: r.code, said: r.stderr.includes("the same database") }).toEqual({ code: 1, said: true });
      expectNoPassword(r);
    }
  });

  test("a server running on the source file", async () => {
    const target = await createDatabase("migdata_busy");
    // This test process is alive and is not the CLI's process, so it passes for a running server.
    writeFileSync(pidFilePath(source.dbPath), `${process.pid}\n`);
    try {
      const r = await runCli(["migrate-data", "--from", sourceUrl, "--to", target]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`a server (pid ${process.pid}) is using`);
      expectNoPassword(r);
    } finally {
      rmSync(pidFilePath(source.dbPath), { force: true });
    }
    const empty = await openStore(target);
    try {
      expect(Object.values(await counts(empty)).every((c) => c === 0)).toBe(true);
    } finally {
      await empty.close();
    }
  });

  test("a malformed or in-memory URL is a usage error (exit 2), refused before anything is opened", async () => {
    const cases: [string, string, RegExp][] = [
      ["--to", "nonsense", /--to is invalid: expected a URL starting with file: or postgres:/],
      ["--to", "file:", /--to is invalid: expected a file: URL naming a database file/],
      ["--to", "file::memory:", /--to is invalid: expected a file: URL naming a database file/],
      [
        "--from",
        "postgres://u:secret-pw@h/db?sslmode=bogus",
        /--from is invalid: expected a PostgreSQL URL whose sslmode is one of/,
      ],
    ];
    for (const [flag, url, said] of cases) {
      const [from, to] = flag === "--to" ? [sourceUrl, url] : [url, sourceUrl];
      const r = await runCli(["migrate-data", "--from", from, "--to", to]);
      expect({ url, code: r.code, out: r.stdout }).toEqual({ url, code: 2, out: "" });
      expect(r.stderr).toMatch(said);
      expect(r.stderr).not.toContain("copying");
      expect(r.stderr).not.toContain("secret-pw");
    }
  });

  test("a source file that does not exist (and is not created)", async () => {
    const missing = join(source.dir, "nope.db");
    const r = await runCli([
      "migrate-data",
      "--from",
      `file:${missing}`,
      "--to",
      await createDatabase("migdata_missing"),
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("there is no database file at");
    expect(existsSync(missing)).toBe(false);
  });

  test("a wrong password in the target URL is reported without the password", async () => {
    const secret = "hunter2-never-printed";
    const wrong = pgUrl.replace(`:${password}@`, `:${secret}@`);
    const r = await runCli(["migrate-data", "--from", sourceUrl, "--to", wrong]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("password authentication failed");
    expectNoPassword(r, secret);
    expectNoPassword(r);
  });

  test.each([
    [["migrate-data"]],
    [["migrate-data", "--from", "file:x.db"]],
    [["migrate-data", "--to", "file:x.db"]],
    [["migrate-data", "extra", "--from", "file:x.db", "--to", "file:y.db"]],
  ])("usage error %p exits 2", async (args) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("usage: imgpress migrate-data --from URL --to URL");
  });
});

describe("interrupted", () => {
  test("kill -9 in the middle of a large copy leaves the target empty; the same command then completes", async () => {
    // 60,000 rate events: several progress lines, so the kill lands mid-table.
    const big = await createHarness();
    try {
      await big.sqlite.client.execute(
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 60000) INSERT INTO rate_events (bucket, at) SELECT 'otp-ip:198.51.100.' || (x % 200), x FROM n",
      );
      const from = `file:${big.dbPath}`;
      const to = await createDatabase("killed");
      const proc = Bun.spawn([...runtimeCommand(), "migrate-data", "--from", from, "--to", to], {
        cwd: ROOT,
        env: { ...cleanEnv() },
        stdout: "pipe",
        stderr: "pipe",
      });
      const reader = proc.stderr.getReader();
      let said = "";
      for (const deadline = Date.now() + 30_000; !/rate_events [1-5]0000\/60000 rows/.test(said); ) {
        if (Date.now() > deadline) throw new Error(`no progress line: ${said}`);
        const { value, done } = await reader.read();
        if (done) throw new Error(`migrate-data ended before the kill: ${said}`);
        said += new TextDecoder().decode(value);
      }
      proc.kill("SIGKILL");
      const killed = (await proc.exited) !== 0;
      const target = await openStore(to);
      try {
        // One transaction on the target: nothing of the copy is left, not even the rows of tables
        // done before. Had the copy ended before the kill (the test stalled for the last second of
        // it on a loaded machine), it is whole.
        if (killed) expect(Object.values(await counts(target)).every((c) => c === 0)).toBe(true);
        else expect((await counts(target)).rate_events).toBe(60_000);
      } finally {
        await target.close();
      }
      if (!killed) return;
      const again = await runCli(["migrate-data", "--from", from, "--to", to]);
      expect(again.code).toBe(0);
      const copied = await openStore(to);
      try {
        expect((await counts(copied)).rate_events).toBe(60_000);
      } finally {
        await copied.close();
      }
    } finally {
      await big.close();
    }
  }, 120_000);
});

describe("the password outside the URL", () => {
  test("PGPASSWORD stands in for a URL without one (kept out of shell history and ps)", async () => {
    const target = (await createDatabase("migdata_env")).replace(`:${encodeURIComponent(password)}@`, "@");
    expect(target).not.toContain(password);
    const r = await runCli(["migrate-data", "--from", sourceUrl, "--to", target], { PGPASSWORD: password });
    expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
    expectNoPassword(r);
  });
});

describe("copyDatabase", () => {
  test("pages of two rows copy every row of every table exactly (composite keys included)", async () => {
    const target = await createDatabase("migdata_pages");
    const seen: Record<string, number[]> = {};
    const result = await copyDatabase(sourceUrl, target, {
      pageSize: 2,
      onProgress: (t, copied) => void (seen[t] ??= []).push(copied),
    });
    expect(result.every((c) => c.source === c.target)).toBe(true);
    expect(seen.usage_hourly!.length).toBeGreaterThan(1);
    const store = await openStore(target);
    try {
      for (const t of TABLES)
        expect({ table: t.name, rows: await rows(store, t.name) }).toEqual({
          table: t.name,
          rows: await rows(source.store, t.name),
        });
    } finally {
      await store.close();
    }
  });
});
