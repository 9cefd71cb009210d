// The "PostgreSQL vs the embedded file" section of bench/RESULTS.md, from one run of bench/postgres.ts.
import { cpus } from "node:os";
import type { DbPath } from "./db-path.ts";
import { type StatementCount, totalCalls } from "./pg-cluster.ts";
import { fmt, median, table } from "./util.ts";

/** The target of issue 15: statements (round trips) on the request path of one conversion on PostgreSQL. */
export const ROUND_TRIP_TARGET = 2;

/** Everything one run measured. */
export interface PostgresRun {
  date: string;
  /** Load averages (1, 5, 15 min) at the start and at the end. */
  load: [number[], number[]];
  postgres: string;
  throughput: {
    jobs: number;
    clients: number;
    runs: {
      round: number;
      backend: string;
      kind: string;
      ips: number;
      cpuMs: number;
      pgCpuMs: number;
      statements: number;
    }[];
  };
  sequential: { thumb: string; width: number; height: number; reps: number; p50: Record<string, number> };
  /** Per client kind: what the PostgreSQL instance executed for `conversions` sequential conversions. */
  roundTrips: Record<string, { conversions: number; counts: StatementCount[] }>;
  /** In-process, per backend. */
  paths: Record<string, DbPath>;
}

const KINDS = ["keep-alive, bearer", "keep-alive, signed"];

/** Statements that ran at least once per two conversions are the request path; the rest (usage flush, maintenance) is background. */
export function requestPath(r: { conversions: number; counts: StatementCount[] }) {
  const path = r.counts.filter((s) => s.calls >= r.conversions / 2);
  const background = r.counts.filter((s) => s.calls < r.conversions / 2);
  const per = (xs: StatementCount[]) => totalCalls(xs) / r.conversions;
  return { path, background, perConversion: per(path), backgroundPerConversion: per(background) };
}

/** The markdown section. */
export function postgresMarkdown(run: PostgresRun, flags: string): string {
  const t = run.throughput;
  const runsOf = (backend: string, kind: string) => t.runs.filter((x) => x.backend === backend && x.kind === kind);
  const med = (backend: string, kind: string, f: (x: PostgresRun["throughput"]["runs"][number]) => number) =>
    median(runsOf(backend, kind).map(f));
  // Ratios within a round (the two backends of a kind ran back to back), then the median over rounds.
  const ratio = (kind: string, f: (x: PostgresRun["throughput"]["runs"][number]) => number = (x) => x.ips) =>
    median(runsOf("PostgreSQL", kind).map((p) => f(p) / f(runsOf("file", kind).find((x) => x.round === p.round)!)));
  const p = run.sequential.p50;
  const fixed = (backend: string, kind: string) => p[`${backend}: ${kind}`]! - p["in-process"]!;
  const trips = Object.fromEntries(KINDS.map((k) => [k, requestPath(run.roundTrips[k]!)]));
  const stmts = (backend: string, scheme: "bearer" | "signed") => run.paths[backend]!.statements[scheme].perRequest;
  const met = KINDS.every((k) => trips[k]!.perConversion <= ROUND_TRIP_TARGET);
  const summary: (string | number)[][] = [
    ...KINDS.map((k) => [
      `throughput, ${k} (img/s, median of rounds)`,
      fmt(med("file", k, (x) => x.ips)),
      fmt(med("PostgreSQL", k, (x) => x.ips)),
      `${fmt(ratio(k), 3)} (median of per-round ratios)`,
    ]),
    ...KINDS.map((k) => [
      `CPU per conversion of the imgpress process, ${k}`,
      `${fmt(
        med("file", k, (x) => x.cpuMs),
        1,
      )} ms`,
      `${fmt(
        med("PostgreSQL", k, (x) => x.cpuMs),
        1,
      )} ms`,
      `${fmt(
        ratio(k, (x) => x.cpuMs),
        3,
      )} (median of per-round ratios)`,
    ]),
    ...KINDS.map((k) => [
      `CPU per conversion of the PostgreSQL server processes, ${k}`,
      "—",
      `${fmt(
        med("PostgreSQL", k, (x) => x.pgCpuMs),
        2,
      )} ms`,
      "",
    ]),
    ...KINDS.map((k) => [
      `${run.sequential.width} px p50, ${k}`,
      `${fmt(p[`file: ${k}`]!, 2)} ms`,
      `${fmt(p[`PostgreSQL: ${k}`]!, 2)} ms`,
      fmt(p[`PostgreSQL: ${k}`]! / p[`file: ${k}`]!, 3),
    ]),
    ...KINDS.map((k) => [
      `fixed cost (p50 − in-process p50 ${fmt(p["in-process"]!, 2)} ms), ${k}`,
      `${fmt(fixed("file", k), 2)} ms`,
      `${fmt(fixed("PostgreSQL", k), 2)} ms`,
      `${fixed("PostgreSQL", k) >= fixed("file", k) ? "+" : "−"}${fmt(Math.abs(fixed("PostgreSQL", k) - fixed("file", k)), 2)} ms`,
    ]),
    [
      "`/health` p50 (`SELECT 1`), keep-alive",
      `${fmt(p["file: /health"]!, 2)} ms`,
      `${fmt(p["PostgreSQL: /health"]!, 2)} ms`,
      fmt(p["PostgreSQL: /health"]! / p["file: /health"]!, 3),
    ],
    ...(["bearer", "signed"] as const).map((s) => [
      `database statements per conversion on the request path, ${s}`,
      `${fmt(stmts("file", s), 2)} (libSQL client calls in-process; no network)`,
      `**${fmt(trips[`keep-alive, ${s}`]!.perConversion, 2)}** round trips (pg_stat_statements, real server; ${fmt(stmts("PostgreSQL", s), 2)} in-process)`,
      `target ≤ ${ROUND_TRIP_TARGET} on PostgreSQL: ${trips[`keep-alive, ${s}`]!.perConversion <= ROUND_TRIP_TARGET ? "met" : "**missed**"}`,
    ]),
    ...KINDS.map((k) => [
      `all statements per conversion during the throughput runs (usage flushes included), ${k}`,
      "—",
      fmt(
        med("PostgreSQL", k, (x) => x.statements),
        2,
      ),
      "",
    ]),
    ...(["bearer", "signed"] as const).map((s) => [
      `authentication in-process (service classes), ${s}`,
      `${fmt(run.paths.file!.ms[s], 3)} ms`,
      `${fmt(run.paths.PostgreSQL!.ms[s], 3)} ms`,
      fmt(run.paths.PostgreSQL!.ms[s] / run.paths.file!.ms[s], 2),
    ]),
  ];
  const statementRows = KINDS.flatMap((k) => {
    const r = run.roundTrips[k]!;
    return r.counts.map((s) => [
      k,
      s.query.length > 150 ? `${s.query.slice(0, 150)}…` : s.query,
      s.calls,
      fmt(s.calls / r.conversions, 2),
      s.calls >= r.conversions / 2 ? "request path" : "background",
    ]);
  });
  const inprocRows = Object.entries(run.paths).flatMap(([backend, path]) =>
    (["bearer", "signed"] as const).flatMap((s) =>
      path.statements[s].counts.map((c) => [
        backend,
        s,
        c.query.length > 150 ? `${c.query.slice(0, 150)}…` : c.query,
        fmt(c.calls / path.counted, 2),
      ]),
    ),
  );
  return [
    "<!-- postgres bench:start (written by bench/postgres.ts --write) -->",
    "## PostgreSQL vs the embedded file (bench/postgres.ts)",
    "",
    `\`bun bench/postgres.ts${flags ? ` ${flags}` : ""}\` (\`npm run bench:postgres\`), ${run.date}: one instance on the embedded libSQL file and one on PostgreSQL (${run.postgres}; a private cluster the bench starts with the tests' fixture, test/support/postgres.ts, on 127.0.0.1), ` +
      `both \`bun src/main.ts\` with default settings, side by side in one run. **Shared machine**: ${cpus().length} cores shared with other sessions running tests (load average ${run.load[0].map((x) => fmt(x)).join(" / ")} at the start, ${run.load[1].map((x) => fmt(x)).join(" / ")} at the end), so absolute figures drift; compare the columns, not the runs. ` +
      "The file commits with `synchronous = NORMAL` (no fsync per commit) and the cluster runs with `fsync = off`: neither side waits for the disk.",
    "",
    table(["", "file", "PostgreSQL", "PostgreSQL vs file"], summary),
    "",
    `Round trips on PostgreSQL are counted by \`pg_stat_statements\` (loaded with \`shared_preload_libraries\`, \`track_utility = on\` so BEGIN and COMMIT count): postgres.js sends each statement as its own extended-query exchange and awaits its answer, so one statement is one round trip. ` +
      `Counted over ${run.sequential.reps} sequential 300 px conversions per client kind after a reset; statements that ran at least once per two conversions are the request path, the rest is background (the usage flush every 5 s, maintenance every 60 s). ` +
      "Bearer: the key lookup (read on every request, so a revocation anywhere counts at once). Signed: the key lookup and the replay INSERT (exact across instances). Usage is recorded in memory and written in one transaction per flush. " +
      `On the file the same statements are calls into the embedded library, counted at the libSQL client on the service's own classes. Target ≤ ${ROUND_TRIP_TARGET} round trips per conversion on PostgreSQL: ${met ? "met" : "**missed**"}.`,
    "",
    `Throughput: ${t.clients} client loops over kept-alive HTTPS draining ${t.jobs} jobs (the thumbnail workload's sizes, 150–1536 px, of the three mate-backgrounds images of the quick corpus, twice, WebP and AVIF lossy alternating, largest first), the two backends of a client kind back to back, which one first alternating; ratios within each pair, then the median. CPU per conversion is user + system time from /proc; the PostgreSQL server's (from /proc/<pid>/schedstat, exact) includes its backends, writers and autovacuum.`,
    "",
    table(
      ["round", "backend", "client", "img/s", "imgpress CPU ms/conv", "PostgreSQL CPU ms/conv", "statements/conv"],
      t.runs.map((x) => [
        x.round,
        x.backend,
        x.kind,
        fmt(x.ips),
        fmt(x.cpuMs, 1),
        x.backend === "PostgreSQL" ? fmt(x.pgCpuMs, 2) : "",
        Number.isNaN(x.statements) ? "" : fmt(x.statements, 2),
      ]),
    ),
    "",
    `One ${run.sequential.width}×${run.sequential.height} JPEG (${run.sequential.thumb}) → WebP lossy, one request at a time over a kept-alive connection, ${run.sequential.reps} rounds interleaving every row; p50 request start → last byte:`,
    "",
    table(
      ["request", "p50"],
      Object.entries(p).map(([k, v]) => [k, `${fmt(v, 2)} ms`]),
    ),
    "",
    "What the PostgreSQL instance executed (normalised by pg_stat_statements):",
    "",
    table(["client", "statement", "calls", "per conversion", "part"], statementRows),
    "",
    `The same request path in-process on the service's classes (RequestAuthenticator, KeyService) over each store, ${Object.values(run.paths)[0]?.counted ?? 0} requests per scheme counted, then timed interleaved:`,
    "",
    table(["store", "scheme", "statement (libSQL: client method)", "per request"], inprocRows),
    "<!-- postgres bench:end -->",
  ].join("\n");
}
