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
}

/** The folder holding a local database file, or null for a remote libSQL URL. */
export function databaseFolder(url: string): string | null {
  if (!url.startsWith("file:")) return null;
  return dirname(url.startsWith("file://") ? fileURLToPath(url) : url.slice("file:".length));
}

/** Opens (creating the folder of a local file if needed) and migrates the database. */
export async function openStore(url: string, authToken?: string): Promise<Store> {
  const folder = databaseFolder(url);
  if (folder !== null) await mkdir(folder, { recursive: true });
  const client = createClient({ url, authToken });
  if (url.startsWith("file:")) {
    // busy_timeout first, so even switching to WAL waits for a concurrently starting process;
    // WAL lets the CLI read while the server writes.
    await client.execute("PRAGMA busy_timeout = 5000");
    await client.execute("PRAGMA journal_mode = WAL");
  }
  await migrate(client, migrations);
  return { db: drizzle(client, { schema }), client, close: () => client.close() };
}
