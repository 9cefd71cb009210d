import type { Client } from "@libsql/client";
import type { Sql } from "postgres";

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
export async function migrateSqlite(client: Client, migrations: readonly Migration[]): Promise<string[]> {
  // BEGIN IMMEDIATE: processes starting together on a fresh database queue here, and each sees
  // what the previous one applied before deciding what is pending.
  const tx = await client.transaction("write");
  try {
    await tx.execute(
      "CREATE TABLE IF NOT EXISTS __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)",
    );
    const last = await tx.execute("SELECT created_at FROM __drizzle_migrations ORDER BY created_at DESC LIMIT 1");
    const newest = last.rows.length ? Number(last.rows[0]![0]) : null;
    refuseNewer(newest, migrations);
    const pending = pendingMigrations(newest, migrations);
    for (const m of pending) {
      for (const statement of statements(m)) await tx.execute(statement);
      await tx.execute({
        sql: "INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)",
        args: [m.hash, m.when],
      });
    }
    await tx.commit();
    return pending.map((m) => m.tag);
  } finally {
    tx.close();
  }
}

/**
 * The PostgreSQL counterpart of `migrateSqlite`, in one transaction (DDL is transactional there).
 * Instances starting together queue on a transaction-scoped advisory lock, so exactly one applies
 * what is pending and the others then find nothing left; the lock ends with the transaction. Its
 * bookkeeping is `public.__drizzle_migrations`, not drizzle-kit's `drizzle.__drizzle_migrations`:
 * on PostgreSQL only this migrator manages the database.
 */
export async function migratePostgres(sql: Sql, migrations: readonly Migration[]): Promise<string[]> {
  return sql.begin(async (tx) => {
    // No statement timeout here: a migration on a large table, or the wait of an instance queued
    // behind it, may rightly take longer than IMGPRESS_DATABASE_TIMEOUT_S.
    await tx.unsafe("SET LOCAL statement_timeout = 0");
    await tx.unsafe(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`);
    await tx.unsafe(
      "CREATE TABLE IF NOT EXISTS __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)",
    );
    const [last] = await tx<
      { created_at: string }[]
    >`SELECT created_at FROM __drizzle_migrations ORDER BY created_at DESC LIMIT 1`;
    const newest = last ? Number(last.created_at) : null;
    refuseNewer(newest, migrations);
    const pending = pendingMigrations(newest, migrations);
    for (const m of pending) {
      for (const statement of statements(m)) await tx.unsafe(statement);
      await tx`INSERT INTO __drizzle_migrations (hash, created_at) VALUES (${m.hash}, ${m.when})`;
    }
    return pending.map((m) => m.tag);
  });
}

/** The advisory-lock key of migrations: an arbitrary constant ("imgpress" in ASCII) no other lock uses. */
const MIGRATION_LOCK = "7596841879097144179";

/** The migrations of `known` a database whose newest recorded one is `newest` has not had yet. */
export function pendingMigrations(newest: number | null, known: readonly Migration[]): Migration[] {
  return known.filter((m) => newest === null || m.when > newest);
}

/**
 * The refusal of a database migrated by a newer imgpress (its newest migration is later than any
 * this one knows): this version would run on tables it does not know, and what it wrote there
 * would be missing from what the newer one keeps (usage, audit). Null when it is not newer.
 */
export function newerDatabase(newest: number | null, known: readonly Migration[]): string | null {
  const last = known.at(-1);
  if (newest === null || !last || newest <= last.when) return null;
  return (
    `this database was migrated by a newer imgpress (its newest migration is from ${new Date(newest).toISOString()}; this version knows migrations up to ${last.tag}). ` +
    "Run that newer version, or restore the backup taken before the upgrade (README, Upgrading)"
  );
}

// Before anything is applied: a newer database is left exactly as it was.
function refuseNewer(newest: number | null, migrations: readonly Migration[]): void {
  const newer = newerDatabase(newest, migrations);
  if (newer) throw new Error(newer);
}

function statements(m: Migration): string[] {
  return m.sql
    .split("--> statement-breakpoint")
    .map((s) => s.trim())
    .filter(Boolean);
}
