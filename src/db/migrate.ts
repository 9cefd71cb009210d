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
  // BEGIN IMMEDIATE: processes starting together on a fresh database queue here, and each sees
  // what the previous one applied before deciding what is pending.
  const tx = await client.transaction("write");
  try {
    await tx.execute("CREATE TABLE IF NOT EXISTS __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)");
    const last = await tx.execute("SELECT created_at FROM __drizzle_migrations ORDER BY created_at DESC LIMIT 1");
    const lastWhen = last.rows.length ? Number(last.rows[0]![0]) : -Infinity;
    const pending = migrations.filter((m) => m.when > lastWhen);
    for (const m of pending) {
      for (const statement of m.sql.split("--> statement-breakpoint").map((s) => s.trim()).filter(Boolean)) await tx.execute(statement);
      await tx.execute({ sql: "INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)", args: [m.hash, m.when] });
    }
    await tx.commit();
    return pending.map((m) => m.tag);
  } finally {
    tx.close();
  }
}
