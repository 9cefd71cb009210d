/**
 * The embedded store while another process (the `sqlite3` CLI) holds the file's write lock
 * (src/data/db/lockwait.ts): reads go on; a write waits without freezing the event loop and runs
 * once the lock goes, a batch or a transaction whole; a write whose budget is spent fails
 * SQLITE_BUSY (a storage fault: 503) having written nothing; and afterwards the store writes and
 * reads the holder's data again (the libSQL client's connections keep no stale snapshot).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { storageFaultCode } from "../../../src/data/db/faults.ts";
import { openSqliteStore, type SqliteStore } from "../../../src/data/db/sqlite.ts";
import { hasSqlite3, holdSqliteLock, type SqliteLock } from "../../support/sqlite-lock.ts";

let dir: string;
let file: string;
let store: SqliteStore;
let lock: SqliteLock | undefined;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "imgpress-lockwait-"));
  file = join(dir, "imgpress.db");
  // A 10 s default budget: only the tests that want a write to give up set a shorter one.
  store = await openSqliteStore(`file:${file}`, { lockWaitS: 10 });
  await store.client.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
  lock = undefined;
});

afterEach(async () => {
  await lock?.release();
  store.close();
  await rm(dir, { recursive: true, force: true });
});

const values = async () => (await store.all<{ v: string }>(sql`SELECT v FROM t ORDER BY id`)).map((r) => r.v);
const t = sqliteTable("t", { id: integer("id").primaryKey(), v: text("v").notNull() });
const insert = (db: SqliteStore["db"], v: string) => db.insert(t).values({ v });

/** Resolves after `n` timer turns of 10 ms each: the event loop ran while `pending` waited. */
async function loopTurns(n: number, pending: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void pending.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < n; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return settled;
}

describe.skipIf(!hasSqlite3)("a file locked by another process", () => {
  test("reads go on; a batch waits off the event loop and runs whole once the lock goes", async () => {
    await store.client.execute("INSERT INTO t (v) VALUES ('before')");
    lock = await holdSqliteLock(file, "INSERT INTO t (v) VALUES ('holder')");
    expect(await values()).toEqual(["before"]);
    const batch = store.batch((db) => [insert(db, "a"), insert(db, "b")]);
    // 20 timer turns while the batch waits: the loop is not frozen, and the lock is still held.
    expect(await loopTurns(20, batch)).toBe(false);
    await lock.release();
    lock = undefined;
    expect(await batch).toEqual([1, 1]);
    expect(await values()).toEqual(["before", "holder", "a", "b"]);
  });

  test("a write past its budget fails SQLITE_BUSY, a storage fault, having written nothing; then writes work again", async () => {
    lock = await holdSqliteLock(file, "INSERT INTO t (v) VALUES ('holder')");
    const failed = await store
      .batch((db) => [insert(db, "lost-1"), insert(db, "lost-2")], { lockWaitMs: 200 })
      .catch((err: unknown) => err);
    expect(storageFaultCode(failed)).toStartWith("SQLITE_BUSY");
    // A plain statement (no batch) with the default budget: also waits, then runs.
    const single = store.client.execute("INSERT INTO t (v) VALUES ('single')");
    expect(await loopTurns(5, single)).toBe(false);
    await lock.release();
    lock = undefined;
    await single;
    // The connections that failed busy were replaced: they write, and see the holder's row.
    await store.client.execute("INSERT INTO t (v) VALUES ('after')");
    expect(await values()).toEqual(["holder", "single", "after"]);
  });

  test("an interactive transaction waits for its BEGIN, then commits whole", async () => {
    lock = await holdSqliteLock(file, "INSERT INTO t (v) VALUES ('holder')");
    const tx = store.db.transaction(async (db) => {
      await insert(db, "tx-1");
      await insert(db, "tx-2");
    });
    expect(await loopTurns(5, tx)).toBe(false);
    await lock.release();
    lock = undefined;
    await tx;
    expect(await values()).toEqual(["holder", "tx-1", "tx-2"]);
  });
});
