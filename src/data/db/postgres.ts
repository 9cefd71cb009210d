import { sql as raw, type SQL } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { within } from "../../core/timeout.ts";
import { migratePostgres } from "./migrate.ts";
import { postgresMigrations } from "./migrations.gen.ts";
import * as schema from "./schema-pg.ts";
import { changedRows, type Database, type Store, type Tables } from "./store.ts";

/** How the PostgreSQL pool behaves (IMGPRESS_DATABASE_POOL_SIZE, IMGPRESS_DATABASE_TIMEOUT_S). */
export interface PostgresOptions {
  poolSize: number;
  /** Seconds a connection attempt or one statement may take before it fails (and the request gets 503). */
  timeoutS: number;
}

const NO_STARTUP = (seconds: number) =>
  `no PostgreSQL start-up completed within ${seconds + 1} s: something answers at that address and port, but not as PostgreSQL (is it another service's port?)`;

/**
 * Opens and migrates a PostgreSQL database (`postgres://` or `postgresql://`, `sslmode` honoured).
 * The pool opens connections on demand up to `poolSize`; a connection lost when the server restarts
 * is replaced on the next statement, so the instance recovers by itself.
 */
export async function openPostgresStore(url: string, options: PostgresOptions): Promise<Store> {
  const client = postgres(url, {
    max: options.poolSize,
    connect_timeout: options.timeoutS,
    idle_timeout: 60,
    // Sent at connection start-up: no statement can hold a pooled connection past the limit.
    connection: { application_name: "imgpress", statement_timeout: options.timeoutS * 1000 },
    // int8 and numeric (counts, Unix ms, sums) as JS numbers: every value stays below 2^53.
    types: {
      bigint: { to: 20, from: [20, 1700], serialize: (n: number) => String(n), parse: (s: string) => Number(s) },
    },
    // "relation already exists, skipping" and the like are not for the operator's log.
    onnotice: () => {},
    // No wait before reconnecting: postgres.js's default (up to 20 s after repeated failures) held
    // every queued statement that long while the server refused connections in a millisecond;
    // with none, each statement tries once and a refused one fails at once (503, Retry-After).
    backoff: () => 0,
  });
  let migrationsApplied: string[];
  try {
    // Bounded here: a peer that answers the start-up with something else (an HTTP server on that
    // port) and closes makes postgres.js reconnect at once, for ever, without a timeout of its own.
    // A second more than the driver's own connect timeout, so its errors (refused, timed out, bad password) come first.
    await within(
      client`SELECT 1`.execute(),
      options.timeoutS * 1000 + 1000,
      () => new Error(NO_STARTUP(options.timeoutS)),
    );
    migrationsApplied = await migratePostgres(client, postgresMigrations);
  } catch (err) {
    // timeout 0: ends a reconnect loop at once, failing the statement it retries.
    await client.end({ timeout: 0 });
    throw err;
  }
  // ETIMEDOUT: a storage fault, answered 503 STORAGE_UNAVAILABLE.
  const bounded = <T>(work: Promise<T>, limitMs = Number.POSITIVE_INFINITY) => {
    const ms = Math.min(limitMs, options.timeoutS * 1000);
    return within(work, ms, () =>
      Object.assign(new Error(`the database did not answer within ${ms / 1000} s`), { code: "ETIMEDOUT" }),
    );
  };
  // Same names and columns as the SQLite schema (test/data/db/store.test.ts compares them), so services run unchanged.
  const db = drizzle(client, { schema }) as unknown as Database;
  const pg = db as unknown as ReturnType<typeof drizzle<typeof schema>>;
  return {
    dialect: "postgres",
    db,
    tables: schema as unknown as Tables,
    migrationsApplied,
    all: async <T>(query: SQL) => [...(await pg.execute(query))] as T[],
    batch: (build, batchOptions) =>
      pg.transaction(async (tx) => {
        // Only lock waits: a slow but working server still has the whole statement timeout. 55P03 when it passes.
        if (batchOptions?.lockWaitMs !== undefined)
          await tx.execute(raw.raw(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(batchOptions.lockWaitMs))}`));
        const changed: number[] = [];
        for (const statement of build(tx as unknown as Database)) changed.push(changedRows(await statement));
        return changed;
      }),
    // A transaction-scoped advisory lock per name: instances queue on it, and it ends with the commit.
    runExclusive: (name: string, query: SQL) =>
      pg.transaction(async (tx) => {
        await tx.execute(raw`SELECT pg_advisory_xact_lock(hashtextextended(${name}, 0))`);
        return changedRows(await tx.execute(query));
      }),
    bounded,
    ping: async () => void (await bounded(client`SELECT 1`.execute())),
    fileLost: async () => null,
    // postgres.js replaces a broken connection on the next statement by itself.
    reconnect: async () => {},
    close: () => client.end({ timeout: 5 }),
    shutdown: () => client.end({ timeout: 5 }),
  };
}
