import { isPostgresUrl, POSTGRES_DEFAULTS } from "./location.ts";
import type { PostgresOptions } from "./postgres.ts";
import { openSqliteStore } from "./sqlite.ts";
import type { Store } from "./store.ts";

export { databaseFolder, FILE_DEFAULTS, fileUrl, isPostgresUrl, localPath, POSTGRES_DEFAULTS } from "./location.ts";
export type { BatchOptions, BatchStatement, Database, Dialect, Store, Tables } from "./store.ts";

/** Where the database is and how to reach it (the database part of Config). */
export interface DatabaseOptions extends Partial<PostgresOptions> {
  /** A libSQL server's token; unused by `file:` and PostgreSQL URLs. */
  authToken?: string;
  /** Hears that a local database file was removed or replaced under this process (why; every statement then fails), and null once it is back. */
  onFileLost?: (why: string | null) => void;
}

/** Opens and migrates the database a URL names: PostgreSQL for `postgres(ql)://`, libSQL otherwise (`file:` by default). */
export async function openStore(url: string, options: DatabaseOptions = {}): Promise<Store> {
  if (isPostgresUrl(url)) {
    // Loaded only when asked for: an instance on the embedded file never pays for the driver at start-up.
    const { openPostgresStore } = await import("./postgres.ts");
    return openPostgresStore(url, {
      poolSize: options.poolSize ?? POSTGRES_DEFAULTS.poolSize,
      timeoutS: options.timeoutS ?? POSTGRES_DEFAULTS.timeoutS,
    });
  }
  return openSqliteStore(url, {
    authToken: options.authToken,
    lockWaitS: options.timeoutS,
    onFileLost: options.onFileLost,
  });
}
