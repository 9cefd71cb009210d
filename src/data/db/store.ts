import type { SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { LibSQLDatabase } from "drizzle-orm/libsql";
import type * as schema from "./schema.ts";

/** The tables every service works on; src/data/db/schema-pg.ts has the same names and columns. */
export type Tables = typeof schema;

/**
 * The query builder services use: select, insert, update, delete and transaction, whose API is the
 * same on both dialects. Typed as the SQLite flavour; the PostgreSQL store hands over its pg-core
 * handle under this type (test/data/db/store.test.ts runs every service query on both). What differs
 * between dialects (raw statements, batches, row counts, locks) goes through `Store` instead.
 */
export type Database = Omit<LibSQLDatabase<Tables>, "run" | "all" | "get" | "values" | "batch" | "$client">;

/** One statement of a `Store.batch`. */
export type BatchStatement = BatchItem<"sqlite">;

/** How a `Store.batch` runs. */
export interface BatchOptions {
  /**
   * The longest it waits for a lock another process (or session) holds, then fails as a storage
   * fault; shorter than a client request's IMGPRESS_DATABASE_TIMEOUT_S for background writes that
   * are retried anyway (the readiness heartbeat, the usage flush). The whole batch is retried or
   * rolled back, never half-applied.
   */
  lockWaitMs?: number;
}

/** Which SQL engine a store talks to. */
export type Dialect = "sqlite" | "postgres";

/** An open, migrated database. Services see only this interface, never the engine behind it. */
export interface Store {
  readonly dialect: Dialect;
  readonly db: Database;
  /** The tables of this store's dialect (same names and columns on both). */
  readonly tables: Tables;
  /** The migrations opening this store applied, oldest first; empty when the database was already current. */
  readonly migrationsApplied: readonly string[];
  /** Runs a raw query; returns its rows as objects, integers and sums as JS numbers. */
  all<T>(query: SQL): Promise<T[]>;
  /** Runs the statements `build` makes on the handle it gets, in order, in one transaction; returns the rows each changed. */
  batch(build: (db: Database) => BatchStatement[], options?: BatchOptions): Promise<number[]>;
  /**
   * Runs a check-and-write statement so that no other instance runs one under the same `name` at
   * the same time (rate limits stay exact across instances); returns the rows it changed.
   */
  runExclusive(name: string, query: SQL): Promise<number>;
  /**
   * `work`, or a storage fault once the database timeout has passed. The server enforces its own
   * statement timeout, but a frozen or cut-off server cannot: the conversion path bounds its
   * statements with this so a request never waits on it longer than IMGPRESS_DATABASE_TIMEOUT_S,
   * and the readiness probe with a shorter `limitMs`. A local file's statements are bounded by
   * their lock wait instead (they run on the JS thread, which no timer can interrupt, and wait for
   * a lock from timers: src/data/db/lockwait.ts).
   */
  bounded<T>(work: Promise<T>, limitMs?: number): Promise<T>;
  /** One round trip to the database; rejects when it cannot be reached. */
  ping(): Promise<void>;
  /**
   * Why the database file is no longer the one this store opened (removed, or replaced by another
   * file), or null. Meanwhile every statement fails with a storage fault (`DATABASE_FILE_LOST`):
   * writes into the moved-aside file would be lost at the next start. Always null for a database server.
   */
  fileLost(): Promise<string | null>;
  /** Drops pooled connections so the next statement opens fresh ones (after a storage fault). */
  reconnect(): Promise<void>;
  /** Closes the connections. */
  close(): Promise<void>;
  /** Closes after making the data durable on its own (a local file's WAL checkpointed). */
  shutdown(): Promise<void>;
}

/** The rows a driver result changed: libSQL says `rowsAffected`, postgres.js `count`. */
export function changedRows(result: unknown): number {
  const r = result as { rowsAffected?: number; count?: number } | undefined;
  return r?.rowsAffected ?? r?.count ?? 0;
}
