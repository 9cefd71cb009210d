import { createClient, type Client } from "@libsql/client";
import { drizzle, type LibSQLDatabase } from "drizzle-orm/libsql";
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { migrate } from "./migrate.ts";
import { migrations } from "./migrations.gen.ts";
import * as schema from "./schema.ts";

/** The Drizzle handle every service receives. */
export type Database = LibSQLDatabase<typeof schema>;

/** An open database: the Drizzle handle plus the raw client for closing and batches. */
export interface Store {
  db: Database;
  client: Client;
  close(): void;
  /** Checkpoints the write-ahead log into the main file (local files), then closes. */
  shutdown(): Promise<void>;
}

/** The file behind a `file:` database URL, or null for a remote libSQL server. */
export function localPath(url: string): string | null {
  if (!url.startsWith("file:")) return null;
  return url.startsWith("file://") ? fileURLToPath(url) : url.slice("file:".length);
}

/** The folder holding a local database file, or null for a remote libSQL URL. */
export function databaseFolder(url: string): string | null {
  const path = localPath(url);
  return path === null ? null : dirname(path);
}

/** Opens (creating the folder of a local file if needed) and migrates the database. */
export async function openStore(url: string, authToken?: string): Promise<Store> {
  const path = localPath(url);
  if (path) await mkdir(dirname(path), { recursive: true });
  // The busy timeout as an option, not a PRAGMA: the client keeps a pool of connections and a
  // PRAGMA reaches only one of them (the others would fail at once while the CLI writes).
  const client = createClient({ url, authToken, timeout: 5000, concurrency: POOL_SIZE });
  if (url.startsWith("file:")) {
    // WAL lets the CLI read while the server writes; switching waits for a concurrently starting process.
    await client.execute("PRAGMA journal_mode = WAL");
  }
  await migrate(client, migrations);
  if (url.startsWith("file:")) await syncNormal(client);
  return {
    db: drizzle(client, { schema }),
    client,
    close: () => client.close(),
    async shutdown() {
      try {
        // TRUNCATE: the main file alone is then complete, and the -wal file is left empty.
        if (url.startsWith("file:")) await client.execute("PRAGMA wal_checkpoint(TRUNCATE)");
      } finally {
        client.close();
      }
    },
  };
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
 * connection is ever opened (test/db-sync.test.ts checks each one).
 */
async function syncNormal(client: Client): Promise<void> {
  await Promise.all(Array.from({ length: POOL_SIZE }, () => client.execute("PRAGMA synchronous = NORMAL")));
}
