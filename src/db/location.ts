import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { redactUrl } from "../redact.ts";

/** PostgreSQL pool size and timeout when none is given: the config's fallbacks too (IMGPRESS_DATABASE_POOL_SIZE, _TIMEOUT_S). */
export const POSTGRES_DEFAULTS = Object.freeze({ poolSize: 10, timeoutS: 10 });

/** The file behind a `file:` database URL, or null for a database server (remote libSQL, PostgreSQL). */
export function localPath(url: string): string | null {
  if (!url.startsWith("file:")) return null;
  return url.startsWith("file://") ? fileURLToPath(url) : url.slice("file:".length);
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
