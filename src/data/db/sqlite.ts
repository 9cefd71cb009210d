import { type Stats, statSync } from "node:fs";
import { mkdir, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { type Client, createClient } from "@libsql/client";
import type { SQL } from "drizzle-orm";
import { drizzle } from "drizzle-orm/libsql";
import { createOwnerOnly } from "../../core/files.ts";
import { fileLostFault } from "./faults.ts";
import { FILE_DEFAULTS, localPath } from "./location.ts";
import { BUSY_TIMEOUT_MS, LockWaitingClient } from "./lockwait.ts";
import { migrateSqlite } from "./migrate.ts";
import { sqliteMigrations } from "./migrations.gen.ts";
import * as schema from "./schema.ts";
import { changedRows, type Store } from "./store.ts";

/** A libSQL store, with its raw client for what only SQLite has (PRAGMAs, VACUUM INTO; tests). */
export interface SqliteStore extends Store {
  readonly dialect: "sqlite";
  readonly client: Client;
}

/** How to open a libSQL database (openSqliteStore). */
export interface SqliteOptions {
  /** A libSQL server's token; unused by `file:` URLs. */
  authToken?: string;
  /** Longest wait of a statement for another process's lock on a file, in seconds (IMGPRESS_DATABASE_TIMEOUT_S). */
  lockWaitS?: number;
  /** Hears that the file was removed or replaced under this process (why), and null once it is back. */
  onFileLost?: (why: string | null) => void;
}

/** Creates the folder of the database file `path` when missing, owner-only (it holds the master key, the database and the TLS key). */
export async function prepareDatabaseFolder(path: string): Promise<void> {
  const folder = dirname(path);
  await mkdir(folder, { recursive: true, mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "EEXIST") throw new Error(`${folder} (the database's folder) exists but is not a folder`);
    if (err.code === "ENOTDIR")
      throw new Error(
        `${folder} (the database's folder) cannot be created: a part of its path is a file, not a folder`,
      );
    if (err.code === "EACCES" || err.code === "EPERM" || err.code === "EROFS") {
      throw new Error(
        `${folder} (the database's folder) cannot be created (${err.code}): this user may not write where it would go; choose a folder it can write with IMGPRESS_DATA_DIR`,
      );
    }
    throw err;
  });
}

/**
 * Opens (creating the folder of a local file if needed) and migrates a libSQL database: a `file:` URL
 * or a remote libSQL server. On a file a statement waits at most `lockWaitS` (IMGPRESS_DATABASE_TIMEOUT_S)
 * for another process's lock, off the JS thread (src/data/db/lockwait.ts).
 */
export async function openSqliteStore(url: string, options: SqliteOptions = {}): Promise<SqliteStore> {
  const { authToken, lockWaitS = FILE_DEFAULTS.timeoutS, onFileLost } = options;
  const path = localPath(url);
  if (path) {
    await prepareDatabaseFolder(path);
    await createOwnerOnly(path);
  }
  const client = path
    ? lockWaiting(url, lockWaitS)
    : createClient({ url, authToken, timeout: 5000, concurrency: POOL_SIZE });
  if (path) {
    // WAL lets the CLI read while the server writes; switching waits for a concurrently starting process.
    await client.execute("PRAGMA journal_mode = WAL");
  }
  const migrationsApplied = await migrateSqlite(client, sqliteMigrations);
  if (path) await syncNormal(client);
  // The file as opened: the same path later naming no file, or another one, means it was removed or replaced under this process.
  const lost = path ? watchFile(path, await stat(path), onFileLost) : () => null;
  if (path) refuseWhileLost(client, lost);
  const db = drizzle(client, { schema });
  return {
    dialect: "sqlite",
    client,
    db,
    tables: schema,
    migrationsApplied,
    all: <T>(query: SQL) => db.all<T>(query),
    async batch(build, options) {
      const [first, ...rest] = build(db);
      if (!first) return [];
      const run = async () => (await db.batch([first, ...rest])).map(changedRows);
      return options?.lockWaitMs !== undefined && client instanceof LockWaitingClient
        ? client.withLockWait(options.lockWaitMs, run)
        : run();
    },
    // SQLite has one writer at a time: a single check-and-write statement is already exclusive.
    runExclusive: async (_name: string, query: SQL) => changedRows(await db.run(query)),
    // A local file's statements are bounded by their lock wait budget (src/data/db/lockwait.ts).
    bounded: (work) => work,
    ping: async () => void (await client.execute("SELECT 1")),
    fileLost: async () => lost(),
    reconnect: async () => void (await client.reconnect()),
    close: async () => client.close(),
    async shutdown() {
      try {
        // TRUNCATE: the main file alone is then complete, and the -wal file is left empty.
        // Not into a lost file: its statements are refused, and what it holds was moved aside whole.
        if (path && lost() === null) await client.execute("PRAGMA wal_checkpoint(TRUNCATE)");
      } finally {
        client.close();
      }
    },
  };
}

/** A file's client, whose statements wait for another process's lock from timers (src/data/db/lockwait.ts). */
function lockWaiting(url: string, lockWaitS: number): LockWaitingClient {
  // The busy timeout as an option, not a PRAGMA: the client keeps a pool of connections and a
  // PRAGMA reaches only one of them (the others would fail at once while the CLI writes).
  const raw = createClient({ url, timeout: BUSY_TIMEOUT_MS, concurrency: POOL_SIZE });
  return new LockWaitingClient(raw, lockWaitS * 1000, async () => {
    await raw.reconnect();
    await syncNormal(raw);
  });
}

/**
 * Connections in the client's pool. Every statement runs synchronously on the JS thread, so more
 * connections add no parallelism; they only let a few interactive transactions be open at once.
 */
const POOL_SIZE = 4;

/**
 * `synchronous = NORMAL` on every pooled connection. In WAL mode a commit then writes the WAL but
 * does not fsync it (the WAL is synced at each checkpoint): the replay record of every signed
 * request stops costing an fsync (0.3 ms on an idle SSD, several ms on a busy disk; bench/RESULTS.md).
 * A killed process loses nothing (the written WAL is in the OS's hands); a power cut may lose the
 * last commits before the latest checkpoint, never the file's consistency (docs/performance.md).
 * The setting is per connection and the pool opens connections lazily, so POOL_SIZE statements
 * issued at once open every connection now, each setting its own; with the pool full no other
 * connection is ever opened (test/data/db/sync.test.ts checks each one).
 */
async function syncNormal(client: Client): Promise<void> {
  await Promise.all(Array.from({ length: POOL_SIZE }, () => client.execute("PRAGMA synchronous = NORMAL")));
}

/**
 * Whether `path` still names the file `opened` (null) or why not, at each call: a file moved aside
 * and put back is the server's own again. `onChange` hears each change: the reason, then null.
 */
function watchFile(path: string, opened: Stats, onChange?: (why: string | null) => void): () => string | null {
  let last: string | null = null;
  return () => {
    let now: Stats | undefined;
    try {
      now = statSync(path, { throwIfNoEntry: false });
    } catch {
      return last; // cannot look (permissions changed): the statement itself will say what is wrong
    }
    let why: string | null = null;
    if (!now)
      why = `${path} was removed while the server had it open: nothing more is written until it is back; restart the server (a new start creates an empty database where none is)`;
    else if (now.ino !== opened.ino || now.dev !== opened.dev)
      why = `${path} was replaced by another file (a restore?) while the server had it open: nothing more is written into the old one; restart the server to use the new one`;
    if (why !== last) onChange?.(why);
    last = why;
    return why;
  };
}

/**
 * Makes every statement fail with a storage fault while `lost` says the file was removed or replaced:
 * writes into the old file would succeed and be lost at the next start (keys issued that then
 * answer 401). One stat per statement (a few microseconds, beside the statement's own tens).
 */
function refuseWhileLost(client: Client, lost: () => string | null): void {
  for (const name of ["execute", "batch", "executeMultiple", "transaction"] as const) {
    const original = (client[name] as (...args: unknown[]) => Promise<unknown>).bind(client);
    (client as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
      const why = lost();
      return why === null ? original(...args) : Promise.reject(fileLostFault(why));
    };
  }
}
