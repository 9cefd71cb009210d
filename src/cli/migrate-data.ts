import { parseDatabaseUrl } from "../core/config.ts";
import { scrub } from "../core/redact.ts";
import { CopyRefused, copyDatabase, type TableCount } from "../data/db/copy.ts";
import { driverMessage } from "../data/db/faults.ts";
import type { DatabaseOptions } from "../data/db/index.ts";
import { shown } from "../data/db/location.ts";
import type { Output } from "./backup.ts";
import { table } from "./index.ts";
import { interruptible } from "./interrupt.ts";

/** A progress line at every this many rows of a table (and at its end): a large table shows it moves, a small one prints once. */
const PROGRESS_EVERY = 10_000;

/**
 * `imgpress migrate-data --from URL --to URL`: copies a whole database into an empty one (e.g. the
 * libSQL file into PostgreSQL) with src/data/db/copy.ts, printing progress per table on stderr, then the
 * row counts of both sides and the master-key reminder. No URL is ever printed with its password.
 */
export async function runMigrateData(
  words: string[],
  flags: Record<string, string>,
  options: DatabaseOptions,
  io: Output,
): Promise<number> {
  const { from, to } = flags;
  if (!from || !to || words.length > 0)
    return (
      io.err(
        "usage: imgpress migrate-data --from URL --to URL [--json]   (e.g. --from file:./imgpress-data/imgpress.db --to postgres://user@host/imgpress, the password in PGPASSWORD)",
      ),
      2
    );
  // A malformed URL is a usage error, refused before anything is opened (an in-memory target would "succeed" into nothing).
  for (const [flag, url] of [
    ["--from", from],
    ["--to", to],
  ] as const) {
    try {
      parseDatabaseUrl(url);
    } catch (allowed) {
      // What is allowed, never the URL itself: nothing of its password to mask.
      return (io.err(`imgpress: ${flag} is invalid: expected ${allowed}.`), 2);
    }
  }
  const clean = (text: string) => scrub(text, [from, to]);
  io.err(clean(`migrate-data: copying ${shown(from)} into ${shown(to)}`));
  let counts: TableCount[];
  // The copy is one transaction on the target: a stop rolls it back (the connection closes with the process).
  const signals = interruptible(
    io,
    "nothing was copied into the target (its transaction is rolled back; empty tables may remain, as after any failure); run the same command again",
  );
  try {
    counts = await copyDatabase(from, to, {
      storeOptions: options,
      onProgress: (table, copied, total) => {
        if (copied === total || copied % PROGRESS_EVERY === 0) io.err(`migrate-data: ${table} ${copied}/${total} rows`);
      },
    });
  } catch (err) {
    if (err instanceof CopyRefused) return (io.err(clean(`migrate-data refused, nothing written: ${err.message}`)), 1);
    return (io.err(clean(`migrate-data failed, nothing written to the target: ${driverMessage(err)}`)), 1);
  } finally {
    signals.release();
  }
  const rows = counts.reduce((sum, c) => sum + c.target, 0);
  const json = flags.json === "true";
  if (json)
    io.out(
      clean(
        JSON.stringify({
          target: shown(to),
          rows,
          tables: counts.map((c) => ({ table: c.table, source: c.source, target: c.target })),
        }),
      ),
    );
  else {
    io.out(
      table(
        ["TABLE", "SOURCE", "TARGET"],
        counts.map((c) => [c.table, String(c.source), String(c.target)]),
      ),
    );
    io.out(
      clean(
        `copied ${rows} rows of ${counts.length} tables into ${shown(to)}; every table has as many rows as in the source.`,
      ),
    );
  }
  // With --json stdout holds the object alone: the reminder goes to stderr.
  (json ? io.err : io.out)(
    "The new database holds the source's master-key check: start every instance on it with the SAME master key as before " +
      "(the master.key of the old data folder, or IMGPRESS_MASTER_KEY set to it), or it refuses to start. The source was left as it was.",
  );
  return 0;
}
