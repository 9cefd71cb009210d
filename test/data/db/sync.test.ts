/**
 * The database commits with synchronous = NORMAL on every pooled connection (src/data/db/index.ts): the
 * setting is per connection and the client opens connections lazily, so a connection opened later
 * would silently be back at FULL (an fsync per signed request). Statements issued at once spread
 * over the pool's connections, so each of them reports its own level here.
 */
import { afterEach, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore as openStore, type SqliteStore as Store } from "../../../src/data/db/sqlite.ts";

let dir: string;
let store: Store | undefined;
afterEach(async () => {
  store?.close();
  await rm(dir, { recursive: true, force: true });
});

const levels = async (s: Store, n: number) =>
  (await Promise.all(Array.from({ length: n }, () => s.client.execute("PRAGMA synchronous")))).map((r) =>
    Number(r.rows[0]?.[0]),
  );

test("every connection of the pool commits with synchronous = NORMAL (1), also after bursts and transactions", async () => {
  dir = await mkdtemp(join(tmpdir(), "imgpress-sync-"));
  store = await openStore(`file:${join(dir, "imgpress.db")}`);
  expect(await levels(store, 16)).toEqual(Array(16).fill(1));
  const tx = await store.client.transaction("write");
  await tx.execute("SELECT 1");
  const during = await levels(store, 8);
  await tx.commit();
  expect(during).toEqual(Array(8).fill(1));
  expect(await levels(store, 16)).toEqual(Array(16).fill(1));
  expect((await store.client.execute("PRAGMA journal_mode")).rows[0]?.[0]).toBe("wal");
});

test("connections opened afresh after a lock (src/data/db/lockwait.ts drops them) commit with synchronous = NORMAL too", async () => {
  dir = await mkdtemp(join(tmpdir(), "imgpress-sync-"));
  store = await openStore(`file:${join(dir, "imgpress.db")}`);
  await store.client.reconnect();
  expect(await levels(store, 16)).toEqual(Array(16).fill(1));
});
