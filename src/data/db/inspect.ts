import { type Client, createClient } from "@libsql/client";
import { statOf } from "../../core/files.ts";
import { fileUrl } from "./location.ts";

/**
 * What a local database file says about itself, read before it is opened for use (and so before
 * anything migrates it): which migrations it has, and what tells its master key.
 */
export interface DatabaseFacts {
  /** The `created_at` of the newest migration it recorded, or null when it has none (a new or foreign file). */
  newestMigration: number | null;
  /** The check value of the master key it was pinned to (src/server/masterkey.ts), or null when never pinned. */
  keyCheck: string | null;
  /** Its newest sealed secret key, which only the right master key opens; null when it holds no key pair. */
  newestSealed: { id: string; sealed: string } | null;
  /** It holds `imgpress backup`'s table: a backup file put in place by hand instead of restored; `withKey` when it carries the master key (in clear). */
  backup: { withKey: boolean } | null;
}

/**
 * Reads the facts of the database file `path` without changing it; null when there is no file
 * there (or an empty one: a start that created it and stopped). A table a version before it lacks
 * reads as no facts of that kind.
 */
export async function inspectDatabaseFile(path: string): Promise<DatabaseFacts | null> {
  if (!((await statOf(path))?.size ?? 0)) return null;
  const client = createClient({ url: fileUrl(path) });
  try {
    return await factsOf(client);
  } finally {
    client.close();
  }
}

/** The facts of a database on an open raw client (a staged restore, a file being inspected). */
export async function factsOf(client: Client): Promise<DatabaseFacts> {
  const first = async (sql: string) => (await client.execute(sql).catch(() => null))?.rows[0];
  const migration = await first("SELECT max(created_at) FROM __drizzle_migrations");
  const check = await first("SELECT value FROM database_facts WHERE name = 'master_key_check'");
  const sealed = await first("SELECT id, secret_sealed FROM api_keys ORDER BY created_at DESC LIMIT 1");
  const backup = await first("SELECT count(master_key) FROM imgpress_backup");
  return {
    newestMigration: migration?.[0] === undefined || migration[0] === null ? null : Number(migration[0]),
    keyCheck: check?.[0] === undefined || check[0] === null ? null : String(check[0]),
    newestSealed: sealed ? { id: String(sealed[0]), sealed: String(sealed[1]) } : null,
    backup: backup ? { withKey: Number(backup[0]) > 0 } : null,
  };
}
