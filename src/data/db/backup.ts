import { Buffer } from "node:buffer";
import { chmod, copyFile, rename, rm, writeFile } from "node:fs/promises";
import { type Client, createClient } from "@libsql/client";
import { timingSafeEqual } from "../../core/crypto.ts";
import { pathExists, statOf } from "../../core/files.ts";
import { type DatabaseFacts, factsOf } from "./inspect.ts";
import { fileUrl } from "./location.ts";
import { newerDatabase } from "./migrate.ts";
import { sqliteMigrations } from "./migrations.gen.ts";

/**
 * Online backup and verified restore of the local database file. A snapshot is made with
 * `VACUUM INTO`, which reads inside one transaction: in WAL mode the server keeps writing and the
 * copy is exactly the database at one instant. The master key travels inside the snapshot (table
 * `imgpress_backup`, never in a live database: the server refuses one copied into place), because sealed secrets are useless
 * without it; that makes the file as sensitive as the key itself.
 */

/** What a snapshot holds, as `restore` reports it. */
export interface SnapshotInfo {
  /** The key pairs it holds. */
  keys: KeyPairCount;
  /** The master key carried in the snapshot, or null for a `--without-key` backup. */
  masterKey: Uint8Array | null;
  /** When the backup was made (Unix ms), or null. */
  createdAt: number | null;
  /** What tells the master key its database was created with (src/server/masterkey.ts `keyFitsDatabase`). */
  facts: DatabaseFacts;
}

/**
 * Writes a consistent snapshot of `source` (a local file) to `dest`, carrying `masterKey` when
 * given. The copy is made under a temporary name and renamed into place, so `dest` never holds a
 * half-written backup. `starting` hears the expected size first: libSQL runs `VACUUM INTO` as one
 * blocking call, so there is no progress to report until it ends. `interrupted` hears the files
 * to remove if the command is stopped meanwhile. Returns the snapshot's size in bytes and key count.
 */
export async function writeSnapshot(
  source: string,
  dest: string,
  masterKey: Uint8Array | null,
  starting: (expectedBytes: number) => void,
  interrupted?: (leftovers: string[]) => void,
): Promise<{ bytes: number; keys: KeyPairCount }> {
  if (await pathExists(dest)) throw new Error(`${dest} already exists; choose another file name`);
  const temp = `${dest}.${crypto.randomUUID()}.partial`;
  // Created empty, owner-only, before the copy: the snapshot (and SQLite's journal beside it,
  // which takes the file's mode) is never readable by others, not even while it is written.
  interrupted?.([temp, `${temp}-journal`]);
  await writeFile(temp, "", { mode: 0o600, flag: "wx" });
  // Said once the file exists: a signal from then on finds it to remove (one arriving while its
  // creation was still in flight left it behind).
  starting((await sizeOf(source)) + (await sizeOf(`${source}-wal`)));
  const client = createClient({ url: fileUrl(source) });
  try {
    await client.execute("PRAGMA busy_timeout = 5000");
    await client.execute({ sql: "VACUUM INTO ?", args: [temp] });
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  } finally {
    client.close();
  }
  try {
    await chmod(temp, 0o600);
    const snapshot = createClient({ url: fileUrl(temp) });
    let keys: KeyPairCount;
    try {
      // A live database that is itself a backup copied into place (the server refuses it) would already have one.
      await snapshot.execute("DROP TABLE IF EXISTS imgpress_backup");
      await snapshot.execute("CREATE TABLE imgpress_backup (master_key TEXT, created_at INTEGER NOT NULL)");
      await snapshot.execute({
        sql: "INSERT INTO imgpress_backup (master_key, created_at) VALUES (?, ?)",
        args: [masterKey ? Buffer.from(masterKey).toString("hex") : null, Date.now()],
      });
      keys = await countKeys(snapshot);
    } finally {
      snapshot.close();
    }
    await rename(temp, dest);
    return { bytes: await sizeOf(dest), keys };
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

/**
 * Copies `file` to `stage`, checks the copy (`PRAGMA integrity_check`, an imgpress schema) and takes
 * the backup table out of it; the caller moves `stage` into place. The user's file is never modified.
 */
export async function stageSnapshot(file: string, stage: string): Promise<SnapshotInfo> {
  await copyFile(file, stage);
  // Owner-only whatever the copied file's mode was (a data folder's database from an older version was 0644).
  await chmod(stage, 0o600);
  // A data folder copied as it is (after a stop, or even a crash) may keep its latest pages in the
  // -wal beside the file: taken along, SQLite replays it.
  if (await pathExists(`${file}-wal`)) await copyFile(`${file}-wal`, `${stage}-wal`);
  const client = createClient({ url: fileUrl(stage) });
  try {
    const check = await client.execute("PRAGMA integrity_check").catch((err: Error) => {
      throw new Error(`${file} is not a readable SQLite database (${err.message})`);
    });
    const verdict = check.rows.map((r) => String(r[0])).join("; ");
    if (verdict !== "ok") throw new Error(`${file} failed the integrity check: ${verdict}`);
    // One self-contained file: the -wal folded in, and the changes below written to the file itself
    // (only the file is moved into place; the server switches it back to WAL when it opens it).
    await client.execute("PRAGMA journal_mode = DELETE");
    const tables = new Set(
      (await client.execute("SELECT name FROM sqlite_master WHERE type = 'table'")).rows.map((r) => String(r[0])),
    );
    if (!tables.has("api_keys") || !tables.has("__drizzle_migrations"))
      throw new Error(`${file} is not an imgpress database`);
    const facts = await factsOf(client);
    // Refused here, before it replaces anything: the restored folder could not be started by this version.
    const newer = newerDatabase(facts.newestMigration, sqliteMigrations);
    if (newer) throw new Error(newer);
    let info: SnapshotInfo = { keys: await countKeys(client), masterKey: null, createdAt: null, facts };
    if (tables.has("imgpress_backup")) {
      const row = (await client.execute("SELECT master_key, created_at FROM imgpress_backup LIMIT 1")).rows[0];
      const hex = row?.[0] ? String(row[0]) : null;
      info = {
        ...info,
        masterKey: hex ? new Uint8Array(Buffer.from(hex, "hex")) : null,
        createdAt: row ? Number(row[1]) : null,
      };
      await client.execute("DROP TABLE imgpress_backup");
    }
    client.close();
    return info;
  } catch (err) {
    client.close();
    await removeDatabaseFiles(stage);
    throw err;
  }
}

/** A SQLite database file and the files that go with it (write-ahead log, its index, rollback journal). */
export const DATABASE_FILE_SUFFIXES = ["", "-wal", "-shm", "-journal"] as const;

/** Removes the database file `path` and the files that go with it, where present. */
export async function removeDatabaseFiles(path: string): Promise<void> {
  for (const ext of DATABASE_FILE_SUFFIXES) await rm(`${path}${ext}`, { force: true });
}

/** Two master keys compared in constant time. */
export function sameKey(a: Uint8Array, b: Uint8Array): boolean {
  return timingSafeEqual(Buffer.from(a).toString("hex"), Buffer.from(b).toString("hex"));
}

/** Key pairs in a snapshot: all of them, and how many of those are revoked (kept for the audit trail). */
export interface KeyPairCount {
  all: number;
  revoked: number;
}

/** "3 key pairs, 1 of them revoked", as backup and restore report a snapshot. */
export function describeKeyPairs({ all, revoked }: KeyPairCount): string {
  return `${all} key ${all === 1 ? "pair" : "pairs"}${revoked > 0 ? `, ${revoked} of them revoked` : ""}`;
}

async function countKeys(client: Client): Promise<KeyPairCount> {
  const row = (await client.execute("SELECT count(*), count(revoked_at) FROM api_keys")).rows[0]!;
  return { all: Number(row[0]), revoked: Number(row[1]) };
}

async function sizeOf(path: string): Promise<number> {
  return (await statOf(path))?.size ?? 0;
}
