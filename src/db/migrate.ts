import type { Client } from "@libsql/client";

/** One embedded migration: drizzle-kit's SQL file with the journal's timestamp and the file's SHA-256. */
export interface Migration {
  tag: string;
  when: number;
  hash: string;
  sql: string;
}

/**
 * Applies pending migrations in one write transaction, bookkeeping in drizzle's own
 * `__drizzle_migrations` table so drizzle-kit and this migrator agree on what ran.
 * Returns the tags it applied.
 */
export async function migrate(client: Client, migrations: readonly Migration[]): Promise<string[]> {
  await client.execute(
    "CREATE TABLE IF NOT EXISTS __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)",
  );
  const last = await client.execute("SELECT created_at FROM __drizzle_migrations ORDER BY created_at DESC LIMIT 1");
  const lastWhen = last.rows.length ? Number(last.rows[0]![0]) : -Infinity;
  const pending = migrations.filter((m) => m.when > lastWhen);
  if (pending.length === 0) return [];
  const statements = pending.flatMap((m) => [
    ...m.sql
      .split("--> statement-breakpoint")
      .map((s) => s.trim())
      .filter(Boolean),
    { sql: "INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)", args: [m.hash, m.when] },
  ]);
  await client.batch(statements, "write");
  return pending.map((m) => m.tag);
}
