import { AppError } from "../errors.ts";

/**
 * SQLite result codes (primary part) that say the storage cannot take a write right now rather
 * than that the request was wrong: the disk is full, the folder read-only or gone, an I/O error, or
 * another writer held the lock past busy_timeout. Each clears by itself once the cause is fixed.
 */
const STORAGE_FAULTS: Record<number, string> = {
  5: "SQLITE_BUSY",
  6: "SQLITE_LOCKED",
  8: "SQLITE_READONLY",
  10: "SQLITE_IOERR",
  13: "SQLITE_FULL",
  14: "SQLITE_CANTOPEN",
};

/** Seconds a client is told to wait after a storage fault. */
export const STORAGE_RETRY_AFTER_S = 30;

/**
 * The SQLite code of a storage fault anywhere in `err`'s cause chain (Drizzle wraps libSQL's
 * error in its own), or null when the error is something else.
 */
export function storageFaultCode(err: unknown): string | null {
  for (let e = err as { code?: unknown; rawCode?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.rawCode === "number" && STORAGE_FAULTS[e.rawCode & 0xff]) return typeof e.code === "string" ? e.code : STORAGE_FAULTS[e.rawCode & 0xff]!;
    if (typeof e.code === "string" && Object.values(STORAGE_FAULTS).some((name) => e!.code === name || (e!.code as string).startsWith(`${name}_`))) return e.code;
  }
  return null;
}

/** The answer to a request whose write the storage refused: 503 with Retry-After, nothing half-written. */
export function storageUnavailable(): AppError {
  return new AppError(
    503,
    "STORAGE_UNAVAILABLE",
    `The server cannot write to its database right now (disk full or read-only); nothing was changed. Retry in ${STORAGE_RETRY_AFTER_S} s.`,
    { "retry-after": String(STORAGE_RETRY_AFTER_S) },
  );
}
