import { AppError } from "../../core/errors.ts";

/**
 * SQLite result codes (primary part) that say the storage cannot take a write right now rather
 * than that the request was wrong: the disk is full, the folder read-only or gone, an I/O error, or
 * another process held the lock past the lock wait budget (src/data/db/lockwait.ts). Each clears
 * by itself once the cause is fixed.
 */
const STORAGE_FAULTS: Record<number, string> = {
  5: "SQLITE_BUSY",
  6: "SQLITE_LOCKED",
  8: "SQLITE_READONLY",
  10: "SQLITE_IOERR",
  13: "SQLITE_FULL",
  14: "SQLITE_CANTOPEN",
};

/**
 * PostgreSQL SQLSTATE classes and codes, and postgres.js / socket error codes, that say the same of
 * a database server: unreachable or restarting, refusing the login, the database dropped, out of
 * disk or connections, read-only, or a statement past IMGPRESS_DATABASE_TIMEOUT_S. Each clears once
 * the server is back or the operator has fixed it, without a restart.
 */
// 28: the server refuses the login (a rotated password), 3D: the database is gone; both clear once
// the operator fixes them, and the log line names the cause.
const POSTGRES_FAULT_CLASSES = ["08", "28", "3D", "53", "57P"];
const POSTGRES_FAULT_CODES = new Set([
  "25006", // read_only_sql_transaction (a standby, or default_transaction_read_only)
  "57014", // query_canceled: statement_timeout
  "55P03", // lock_not_available: a lock another session holds, past a batch's lock_timeout
  "40001", // serialization_failure
  "40P01", // deadlock_detected
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "CONNECTION_ENDED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EPIPE",
  "ETIMEDOUT",
]);

function postgresFault(code: string): boolean {
  return (
    POSTGRES_FAULT_CODES.has(code) ||
    (/^[0-9A-Z]{5}$/.test(code) && POSTGRES_FAULT_CLASSES.some((c) => code.startsWith(c)))
  );
}

/** The code of the fault every statement meets once the database file was removed or replaced under the server. */
export const FILE_LOST = "DATABASE_FILE_LOST";

/** The error a statement fails with once the database file is lost (`why`); a storage fault, so answered 503. */
export function fileLostFault(why: string): Error {
  return Object.assign(new Error(why), { code: FILE_LOST });
}

/** Seconds a client is told to wait after a storage fault. */
export const STORAGE_RETRY_AFTER_S = 30;

/**
 * The SQLite, PostgreSQL or connection code of a storage fault anywhere in `err`'s cause chain
 * (Drizzle wraps the driver's error in its own), or null when the error is something else.
 */
export function storageFaultCode(err: unknown): string | null {
  for (
    let e = err as { code?: unknown; rawCode?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (typeof e.rawCode === "number" && STORAGE_FAULTS[e.rawCode & 0xff])
      return typeof e.code === "string" ? e.code : STORAGE_FAULTS[e.rawCode & 0xff]!;
    if (
      typeof e.code === "string" &&
      Object.values(STORAGE_FAULTS).some((name) => e!.code === name || (e!.code as string).startsWith(`${name}_`))
    )
      return e.code;
    if (typeof e.code === "string" && (postgresFault(e.code) || e.code === FILE_LOST)) return e.code;
  }
  return null;
}

/** The answer to a request whose write the storage refused: 503 with Retry-After, nothing half-written. */
export function storageUnavailable(): AppError {
  return new AppError(
    503,
    "STORAGE_UNAVAILABLE",
    `The server cannot use its database right now (unreachable, disk full or read-only); nothing was changed. Retry in ${STORAGE_RETRY_AFTER_S} s.`,
    { "retry-after": String(STORAGE_RETRY_AFTER_S) },
  );
}

/**
 * The first line of the innermost error's message: the driver's own words ("connect ECONNREFUSED
 * …", "database or disk is full") rather than Drizzle's wrapper, whose message repeats the query
 * and its parameters.
 */
export function driverMessage(err: unknown): string {
  let e = err as { message?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e?.cause && depth < 5; depth++) e = e.cause as typeof e;
  return String(e?.message ?? err)
    .split("\n")[0]!
    .slice(0, 200);
}

/**
 * What an operator can do about a storage fault a one-off command met (its `storageFaultCode`):
 * the disk, the permissions, a lock, or the database server.
 */
export function storageFaultAdvice(code: string): string {
  if (code.startsWith("SQLITE_FULL")) return "the disk is full: free some space, then run it again";
  if (/^SQLITE_(BUSY|LOCKED)/.test(code)) return "another process kept the database locked: run it again";
  if (code.startsWith("SQLITE_"))
    return "make the data folder and its files writable by this user (not on a read-only mount), then run it again";
  return "the database server is unreachable or refused: check it, then run it again";
}
