// The bench's private PostgreSQL: the tests' own cluster (test/support/postgres.ts: initdb + pg_ctl in
// a temp folder, 127.0.0.1, fsync off) restarted once with pg_stat_statements loaded, so the bench can
// count what every database of it executes, and read the CPU time of the server's processes.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createDatabase, psql, startPostgres, stopPostgres } from "../../test/support/postgres.ts";

/** One normalised statement and how often it ran since the last reset. */
export interface StatementCount {
  calls: number;
  query: string;
}

/** The running cluster as the bench uses it. */
export interface BenchPostgres {
  /** `PostgreSQL 15.x`. */
  version: string;
  /** The settings that matter for the figures (`fsync`, `synchronous_commit`, `max_connections`). */
  settings: string;
  /** A fresh database with pg_stat_statements installed. */
  database(prefix: string): Promise<string>;
  /** Forgets every count (all databases). */
  reset(): Promise<void>;
  /** What ran on `url`'s database since the last reset, most frequent first; the bench's own reads left out. */
  statements(url: string): Promise<StatementCount[]>;
  /** CPU time (ns) of the postmaster and each live child, by pid; `cpuBetween` turns two into ms. */
  cpu(): Map<number, number>;
  stop(): Promise<void>;
}

/** Starts the cluster, loads pg_stat_statements (ALTER SYSTEM, then a restart) and learns the postmaster's pid. */
export async function startBenchPostgres(): Promise<BenchPostgres> {
  const pg = await startPostgres();
  await psql(pg.adminUrl, "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'");
  await pg.restart();
  const show = (name: string) => psql(pg.adminUrl, `SHOW ${name}`);
  // BEGIN and COMMIT are statements too (track_utility, on by default): a transaction's round trips all count.
  if ((await show("pg_stat_statements.track_utility")) !== "on")
    throw new Error("pg_stat_statements.track_utility is off: BEGIN and COMMIT would not be counted");
  // The reset is called on the maintenance database, so it needs the extension's functions too.
  await psql(pg.adminUrl, "CREATE EXTENSION pg_stat_statements");
  const postmaster = Number(readFileSync(join(await show("data_directory"), "postmaster.pid"), "utf8").split("\n")[0]);
  const version = (await psql(pg.adminUrl, "SELECT version()")).split(" on ")[0]!;
  const settings = `fsync ${await show("fsync")}, synchronous_commit ${await show("synchronous_commit")}, max_connections ${await show("max_connections")}`;
  return {
    version,
    settings,
    async database(prefix) {
      const url = await createDatabase(prefix);
      await psql(url, "CREATE EXTENSION pg_stat_statements");
      return url;
    },
    reset: async () => void (await psql(pg.adminUrl, "SELECT pg_stat_statements_reset()")),
    async statements(url) {
      const out = await psql(
        url,
        "SELECT s.calls || E'\\t' || regexp_replace(s.query, '\\s+', ' ', 'g') FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid " +
          "WHERE d.datname = current_database() AND s.query NOT ILIKE '%pg_stat_statements%' ORDER BY s.calls DESC, s.query",
      );
      return out
        .split("\n")
        .filter(Boolean)
        .map((line) => ({
          calls: Number(line.slice(0, line.indexOf("\t"))),
          query: line.slice(line.indexOf("\t") + 1),
        }));
    },
    cpu: () => clusterCpu(postmaster),
    stop: stopPostgres,
  };
}

/** The sum of `calls`. */
export const totalCalls = (counts: StatementCount[]) => counts.reduce((n, s) => n + s.calls, 0);

/**
 * Nanoseconds on a CPU of the postmaster and each of its children (backends, writers, autovacuum),
 * from /proc/<pid>/schedstat: exact, unlike the 10 ms ticks of /proc/<pid>/stat, and every
 * PostgreSQL process is single-threaded.
 */
function clusterCpu(postmaster: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const pid = Number(entry);
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]!.split(" ")[1]);
      if (pid === postmaster || ppid === postmaster)
        out.set(pid, Number(readFileSync(`/proc/${entry}/schedstat`, "utf8").split(" ")[0]));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return out;
}

/** CPU ms between two snapshots: processes present in both, plus those started since (one that ended in between is left out). */
export function cpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let ns = 0;
  for (const [pid, t] of after) ns += t - (before.get(pid) ?? 0);
  return ns / 1e6;
}
