import { existsSync, realpathSync } from "node:fs";
import { resolve } from "node:path";
import { asc, count, getTableColumns, gt, is, type SQL, sql } from "drizzle-orm";
import { getTableConfig, type SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { serverInUse } from "../../server/pidfile.ts";
import { serverHoldsLock, servingLockHeld } from "../../server/servinglock.ts";
import { type DatabaseOptions, fileUrl, isPostgresUrl, localPath, openStore } from "./index.ts";
import * as schema from "./schema.ts";
import type { Database, Store } from "./store.ts";

/** Why a copy did not start or was rolled back; the target holds nothing of it. Its message is for the operator. */
export class CopyRefused extends Error {}

/** Rows of one table in the source and in the target after the copy. */
export interface TableCount {
  table: string;
  source: number;
  target: number;
}

/** How `copyDatabase` works and reports. */
export interface CopyOptions {
  /** Rows read and written per statement (default 500): memory stays bounded by one page. */
  pageSize?: number;
  /** Called after each page and once for an empty table, with the rows copied so far of `total`. */
  onProgress?: (table: string, copied: number, total: number) => void;
  /** Passed to `openStore` for both databases (timeouts, a libSQL server's token). */
  storeOptions?: DatabaseOptions;
}

/** One table as the copy sees it: its export name in both schemas, its SQL name, how its rows are ordered. */
interface TablePlan {
  key: keyof typeof schema;
  name: string;
  /** Property names of the primary key's columns, the order of keyset pages. */
  order: string[];
  /** The property name of an auto-increment id (a bigserial on PostgreSQL), whose sequence follows the copied ids. */
  serial: string | null;
}

/**
 * Every table of the schema, read from the SQLite twin (schema-pg.ts has the same export names,
 * table names and property names): a table added later is copied without touching this file.
 */
export const TABLES: readonly TablePlan[] = Object.entries(schema).flatMap(([key, value]) => {
  if (!is(value, SQLiteTable)) return [];
  const config = getTableConfig(value);
  const columns = Object.entries(getTableColumns(value));
  const property = (column: SQLiteColumn) => columns.find(([, c]) => c === column)![0];
  const keyColumns = config.primaryKeys[0]?.columns ?? config.columns.filter((c) => c.primary);
  if (keyColumns.length === 0) throw new Error(`table ${config.name} has no primary key to page by`);
  const serial = config.columns.find((c) => c.primary && (c as { autoIncrement?: boolean }).autoIncrement === true);
  return [
    {
      key: key as keyof typeof schema,
      name: config.name,
      order: keyColumns.map(property),
      serial: serial ? property(serial) : null,
    },
  ];
});

/** What a copy reads and writes through: the query builder of a transaction, on either dialect. */
type Tx = Pick<Database, "select" | "insert">;

/**
 * Copies every table of the database at `from` into the one at `to` (libSQL or PostgreSQL, either
 * way), keeping every value: ids, sealed secrets, counters, the master-key check value. Both are
 * opened (and migrated) with `openStore`. Refuses, writing nothing, when both name the same
 * database, when a local source file is missing or a server uses it (or the target file), or when
 * the target already holds a row in any table. The source is read inside one transaction (a
 * consistent snapshot); the target is written inside one transaction, in pages ordered by primary
 * key, and its row counts are checked against the source's before the commit, so the target gets
 * all of it or nothing. Returns the counts per table.
 */
export async function copyDatabase(from: string, to: string, options: CopyOptions = {}): Promise<TableCount[]> {
  if (databaseIdentity(from) === databaseIdentity(to)) throw new CopyRefused("--from and --to name the same database");
  const sourcePath = localPath(from);
  if (sourcePath !== null && !existsSync(sourcePath))
    throw new CopyRefused(`there is no database file at ${resolve(sourcePath)}`);
  for (const path of [sourcePath, localPath(to)]) {
    const inUse =
      path === null
        ? null
        : (serverInUse(resolve(path)) ??
          ((await servingLockHeld(resolve(path))) ? serverHoldsLock(resolve(path)) : null));
    if (inUse !== null) throw new CopyRefused(inUse);
  }
  const source = await openStore(from, options.storeOptions);
  try {
    const target = await openStore(to, options.storeOptions);
    try {
      return await readConsistently(source, (read) =>
        target.db.transaction((write) => copyAll(source, read, target, write, options)),
      );
    } finally {
      await target.shutdown();
    }
  } finally {
    await source.shutdown();
  }
}

async function copyAll(source: Store, read: Tx, target: Store, write: Tx, options: CopyOptions): Promise<TableCount[]> {
  const occupied: string[] = [];
  for (const plan of TABLES)
    if ((await write.select({ one: sql`1` }).from(tableOf(target, plan)).limit(1)).length > 0) occupied.push(plan.name);
  if (occupied.length > 0)
    throw new CopyRefused(`the target already holds data (${occupied.join(", ")}); migrate into an empty database`);
  const pageSize = options.pageSize ?? 500;
  const counts: TableCount[] = [];
  for (const plan of TABLES) {
    const from = tableOf(source, plan);
    const into = tableOf(target, plan);
    const total = await rowCount(read, from);
    const order = plan.order.map((p) => getTableColumns(from)[p]!);
    let copied = 0;
    let last: Record<string, unknown> | undefined;
    if (total === 0) options.onProgress?.(plan.name, 0, 0);
    for (;;) {
      // Keyset paging: each page starts after the last key read, so a page costs the same at any depth.
      const page = await read
        .select()
        .from(from)
        .where(
          last
            ? after(
                order,
                plan.order.map((p) => last![p]),
              )
            : undefined,
        )
        .orderBy(...order.map((c) => asc(c)))
        .limit(pageSize);
      if (page.length === 0) break;
      await write.insert(into).values(page as (typeof into)["$inferInsert"][]);
      copied += page.length;
      last = page[page.length - 1];
      options.onProgress?.(plan.name, copied, total);
      if (page.length < pageSize) break;
    }
    if (plan.serial !== null && target.dialect === "postgres") await followSequence(write, into, plan);
    counts.push({ table: plan.name, source: total, target: await rowCount(write, into) });
  }
  const wrong = counts.filter((c) => c.source !== c.target);
  if (wrong.length > 0)
    throw new CopyRefused(
      `row counts differ after copying (${wrong.map((c) => `${c.table}: ${c.source} → ${c.target}`).join(", ")}); the target was rolled back`,
    );
  return counts;
}

/**
 * Runs `work` inside one transaction on the source, so every page comes from the same snapshot.
 * PostgreSQL: REPEATABLE READ, READ ONLY. libSQL's transaction is BEGIN IMMEDIATE: besides the
 * snapshot it holds the file's write lock, so no other process changes it while it is copied.
 */
function readConsistently<T>(store: Store, work: (tx: Tx) => Promise<T>): Promise<T> {
  if (store.dialect === "postgres") {
    const pg = store.db as unknown as {
      transaction(
        fn: (tx: Tx) => Promise<T>,
        config: { isolationLevel: "repeatable read"; accessMode: "read only" },
      ): Promise<T>;
    };
    return pg.transaction(work, { isolationLevel: "repeatable read", accessMode: "read only" });
  }
  return store.db.transaction((tx) => work(tx));
}

/** A bigserial's sequence continues after the highest copied id, so new rows do not collide with copied ones. */
async function followSequence(write: Tx, table: SQLiteTable, plan: TablePlan): Promise<void> {
  const column = getTableColumns(table)[plan.serial!]!;
  const query: SQL = sql`SELECT setval(pg_get_serial_sequence(${plan.name}, ${column.name}), coalesce(max(${column}), 0) + 1, false) FROM ${table}`;
  await (write as unknown as { execute(query: SQL): Promise<unknown> }).execute(query);
}

async function rowCount(tx: Tx, table: SQLiteTable): Promise<number> {
  const [row] = await tx.select({ n: count() }).from(table);
  return row?.n ?? 0;
}

/** `(a, b, …) > (x, y, …)`: rows after a key, in primary-key order (row values: SQLite ≥ 3.15 and PostgreSQL). */
function after(columns: SQLiteColumn[], values: unknown[]): SQL {
  if (columns.length === 1) return gt(columns[0]!, values[0]);
  return sql`(${sql.join(columns, sql`, `)}) > (${sql.join(
    values.map((v) => sql`${v}`),
    sql`, `,
  )})`;
}

function tableOf(store: Store, plan: TablePlan): SQLiteTable {
  // The PostgreSQL store's tables are pg-core tables typed as their SQLite twins (src/data/db/store.ts).
  return store.tables[plan.key] as unknown as SQLiteTable;
}

/** What tells two URLs apart as databases: a local file's real path; a server's host, port and database, credentials left out. */
function databaseIdentity(url: string): string {
  const path = localPath(url);
  if (path !== null) return fileUrl(existsSync(path) ? realpathSync(path) : resolve(path));
  try {
    const u = new URL(url);
    if (isPostgresUrl(url))
      return `postgres://${u.hostname.toLowerCase()}:${u.port || "5432"}/${decodeURIComponent(u.pathname.slice(1) || u.username)}`;
    return `${u.protocol}//${u.host.toLowerCase()}${u.pathname}`;
  } catch {
    return url;
  }
}
