import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { redactUrl } from "../../core/redact.ts";

/** PostgreSQL pool size and timeout when none is given: the config's fallbacks too (IMGPRESS_DATABASE_POOL_SIZE, _TIMEOUT_S). */
export const POSTGRES_DEFAULTS = Object.freeze({ poolSize: 10, timeoutS: 10 });

/**
 * The embedded file's IMGPRESS_DATABASE_TIMEOUT_S when none is given: the longest a client request's
 * write waits for another process's lock before 503 STORAGE_UNAVAILABLE (the busy timeout it had before).
 */
export const FILE_DEFAULTS = Object.freeze({ timeoutS: 5 });

/**
 * The file behind a `file:` database URL, or null for a database server (remote libSQL, PostgreSQL).
 * Read as libSQL reads it: up to a `?` or `#`, %-escapes decoded (one it cannot decode is left as
 * written; libSQL refuses that URL).
 */
export function localPath(url: string): string | null {
  if (!url.startsWith("file:")) return null;
  if (url.startsWith("file://")) return fileURLToPath(url);
  const path = url.slice("file:".length).split(/[?#]/, 1)[0]!;
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** The `file:` URL libSQL opens `path` by: `%`, `?` and `#` escaped, which it would otherwise read as an escape, a query or a fragment. */
export function fileUrl(path: string): string {
  return `file:${path.replace(/[%?#]/g, (c) => encodeURIComponent(c))}`;
}

/** The folder holding a local database file, or null for a database server. */
export function databaseFolder(url: string): string | null {
  const path = localPath(url);
  return path === null ? null : dirname(path);
}

/** Whether a database URL names PostgreSQL (`postgres://` or `postgresql://`) rather than libSQL. */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

/** A database URL as it may be printed (messages, logs): a file path as typed, any other URL without its password or token. */
export function shown(url: string): string {
  return url.startsWith("file:") ? url : redactUrl(url);
}
