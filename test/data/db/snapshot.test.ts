/** The snapshot writer behind `imgpress backup` (src/data/db/backup.ts), on a database with some bulk. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { describeKeyPairs, stageSnapshot, writeSnapshot } from "../../../src/data/db/backup.ts";
import { openSqliteStore as openStore } from "../../../src/data/db/sqlite.ts";

let dir: string;
let source: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "imgpress-snapshot-"));
  source = join(dir, "imgpress.db");
  const store = await openStore(`file:${source}`);
  // ~16 MB of rate events: over the size where the CLI announces the copy.
  await store.client.execute(
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 120000) INSERT INTO rate_events (bucket, at) SELECT printf('%0100d', i), i FROM n",
  );
  store.close();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

test("announces the expected size first; the snapshot carries the key and passes its own check", async () => {
  const announced: number[] = [];
  const key = new Uint8Array(32).fill(7);
  const dest = join(dir, "backup.db");
  const result = await writeSnapshot(source, dest, key, (expected) => announced.push(expected));
  expect(announced).toHaveLength(1);
  expect(announced[0]!).toBeGreaterThanOrEqual(result.bytes * 0.9);
  expect(result.bytes).toBeGreaterThan(10 * 1024 * 1024);
  const staged = await stageSnapshot(dest, join(dir, "staged.db"));
  expect(staged.masterKey).toEqual(key);
  expect(staged.keys).toEqual({ all: 0, revoked: 0 });
  // The staged copy no longer holds the key; the backup file itself is untouched.
  const client = createClient({ url: `file:${join(dir, "staged.db")}` });
  expect((await client.execute("SELECT name FROM sqlite_master WHERE name = 'imgpress_backup'")).rows).toHaveLength(0);
  client.close();
  expect((await stageSnapshot(dest, join(dir, "staged-again.db"))).masterKey).toEqual(key);
});

test("a snapshot's key pairs are reported with the revoked ones told apart", () => {
  expect(describeKeyPairs({ all: 1, revoked: 0 })).toBe("1 key pair");
  expect(describeKeyPairs({ all: 3, revoked: 0 })).toBe("3 key pairs");
  expect(describeKeyPairs({ all: 3, revoked: 1 })).toBe("3 key pairs, 1 of them revoked");
});
