// `npm run bench:postgres` — one imgpress instance on the embedded libSQL file against one on
// PostgreSQL (issue 15), same machine, same run, side by side: thumbnail throughput with 4 clients
// (kept-alive, bearer and signed), the fixed cost per request (300 px p50 minus the same conversion
// in-process), and the database statements per conversion — on PostgreSQL counted by
// pg_stat_statements on the real server, on the file by the libSQL client in-process (no network).
// PostgreSQL is a private cluster the bench starts itself (test/support/postgres.ts).
//
//   bun bench/postgres.ts              ~1–2 min on 2 cores; prints the section
//   bun bench/postgres.ts --write      also replaces its section of bench/RESULTS.md
//   --rounds=N (3)  --reps=N (60)  --clients=N (4)
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "../src/core/config.ts";
import { openStore } from "../src/data/db/index.ts";
import { startSmtpSink } from "../test/support/smtp.ts";
import { openServices, servicesOn } from "./lib/auth-cost.ts";
import { smallImages } from "./lib/corpus.ts";
import { measureDbPaths, sqliteCounter } from "./lib/db-path.ts";
import {
  type BenchPostgres,
  cpuBetween,
  type StatementCount,
  startBenchPostgres,
  totalCalls,
} from "./lib/pg-cluster.ts";
import { type PostgresRun, postgresMarkdown } from "./lib/pg-report.ts";
import { type Reference, startReference } from "./lib/reference.ts";
import { POSTGRES_BLOCK, writeSection } from "./lib/results.ts";
import { obtainKeys, type Service, startService, tempDir } from "./lib/service.ts";
import { type ClientKind, kindLabel, post, prepare, saturate, type Target } from "./lib/thumb-client.ts";
import { loadThumbs, type Thumb } from "./lib/thumbs.ts";
import { cpuMs, median, progress } from "./lib/util.ts";

const { values: opt } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    reps: { type: "string", default: "60" },
    clients: { type: "string", default: "4" },
    write: { type: "boolean", default: false },
  },
});
const ROUNDS = Number(opt.rounds);
const REPS = Number(opt.reps);
const CLIENTS = Number(opt.clients);
const WORK = join(import.meta.dir, ".work");
/** Kept-alive connections, as a plugin with a reused cURL handle: the database's share is largest there. */
const KINDS: ClientKind[] = [
  { auth: "bearer", keepAlive: true },
  { auth: "signed", keepAlive: true },
];

/** One instance under test. */
interface Backend {
  label: "file" | "PostgreSQL";
  svc: Service;
  target: Target;
}

/**
 * Rounds of every client kind × backend on the same jobs. The two backends of a kind run back to
 * back (their ratio is taken within that pair), first one then the other, alternating: on a
 * shared machine other load changes within seconds, so the paired runs must be close in time.
 */
async function throughput(
  backends: Backend[],
  pg: BenchPostgres,
  pgUrl: string,
  thumbs: Thumb[],
  bytes: Map<string, Buffer>,
): Promise<PostgresRun["throughput"]> {
  const jobs = [...thumbs, ...thumbs].sort((x, y) => y.width * y.height - x.width * x.height);
  const out: PostgresRun["throughput"] = { jobs: jobs.length, clients: CLIENTS, runs: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const [k, kind] of KINDS.entries()) {
      for (const b of (r + k) % 2 ? [...backends].reverse() : backends) {
        const uploads = jobs.map((j) => prepare(b.target, kind, j, bytes.get(j.path)!));
        await pg.reset();
        const [c0, pg0] = [cpuMs(b.svc.pid), pg.cpu()];
        const ips = await saturate(b.target, kind.keepAlive, uploads, CLIENTS);
        const [c1, pg1] = [cpuMs(b.svc.pid), pg.cpu()];
        const statements = b.label === "PostgreSQL" ? totalCalls(await pg.statements(pgUrl)) / jobs.length : Number.NaN;
        out.runs.push({
          round: r + 1,
          backend: b.label,
          kind: kindLabel(kind),
          ips,
          cpuMs: (c1 - c0) / jobs.length,
          pgCpuMs: cpuBetween(pg0, pg1) / jobs.length,
          statements,
        });
        progress(`round ${r + 1}: ${b.label}, ${kindLabel(kind)}: ${ips.toFixed(2)} img/s`);
      }
    }
  }
  return out;
}

/** One 300 px JPEG → WebP lossy, one request at a time: in-process, then each backend's /health and conversions, interleaved. */
async function sequential(
  backends: Backend[],
  ref: Reference,
  thumb: Thumb,
  image: Buffer,
): Promise<PostgresRun["sequential"]> {
  const ms: Record<string, number[]> = {};
  const add = (key: string, v: number, warm: boolean) => warm && (ms[key] ??= []).push(v);
  for (let i = 0; i < REPS + 3; i++) {
    const warm = i >= 3;
    add("in-process", (await ref.call<{ ms: number }>({ op: "convert", path: thumb.path, format: "webp" })).ms, warm);
    for (const b of i % 2 ? backends : [...backends].reverse()) {
      add(`${b.label}: /health`, await post(b.target, true, "/health"), warm);
      for (const kind of KINDS)
        add(
          `${b.label}: ${kindLabel(kind)}`,
          await post(b.target, true, "/v1/plugin/convert", {
            method: "POST",
            ...prepare(b.target, kind, { ...thumb, format: "webp" }, image),
          }),
          warm,
        );
    }
  }
  return {
    thumb: thumb.name,
    width: thumb.width,
    height: thumb.height,
    reps: REPS,
    p50: Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, median(v)])),
  };
}

/** Statements the PostgreSQL instance runs for `REPS` sequential conversions of one kind, all of them listed. */
async function roundTrips(
  b: Backend,
  pg: BenchPostgres,
  pgUrl: string,
  thumb: Thumb,
  image: Buffer,
): Promise<PostgresRun["roundTrips"]> {
  const out: PostgresRun["roundTrips"] = {};
  for (const kind of KINDS) {
    const upload = () => prepare(b.target, kind, { ...thumb, format: "webp" }, image);
    for (let i = 0; i < 3; i++) await post(b.target, true, "/v1/plugin/convert", { method: "POST", ...upload() });
    await pg.reset();
    for (let i = 0; i < REPS; i++) await post(b.target, true, "/v1/plugin/convert", { method: "POST", ...upload() });
    const counts: StatementCount[] = await pg.statements(pgUrl);
    out[kindLabel(kind)] = { conversions: REPS, counts };
  }
  return out;
}

async function main(): Promise<void> {
  mkdirSync(WORK, { recursive: true });
  const loadStart = loadavg();
  progress("thumbnails of the small corpus (made once, kept in bench/.work/corpus/thumbs)…");
  const thumbs = await loadThumbs(await smallImages(), WORK);
  const bytes = new Map(thumbs.map((t) => [t.path, readFileSync(t.path)]));
  const thumb = thumbs.find((t) => t.width === 300 && t.path.endsWith(".jpg"))!;
  progress("PostgreSQL: a private cluster with pg_stat_statements…");
  const pg = await startBenchPostgres();
  const [ref, sink] = await Promise.all([startReference(), startSmtpSink()]);
  const dirs = [tempDir("file"), tempDir("pg"), tempDir("inproc")];
  const backends: Backend[] = [];
  try {
    const serviceUrl = await pg.database("bench_service");
    for (const [label, dataDir, env] of [
      ["file", dirs[0]!, {}],
      ["PostgreSQL", dirs[1]!, { IMGPRESS_DATABASE_URL: serviceUrl }],
    ] as const) {
      progress(`starting \`bun src/main.ts\` on ${label}…`);
      const svc = await startService({ kind: "source", dataDir, sink, env });
      backends.push({ label, svc, target: { base: svc.base, ca: svc.ca, keys: await obtainKeys(svc) } });
    }
    const sat = await throughput(backends, pg, serviceUrl, thumbs, bytes);
    progress(`sequential ${thumb.name} requests, ${REPS} rounds…`);
    const seq = await sequential(backends, ref, thumb, bytes.get(thumb.path)!);
    progress("statements per conversion on the PostgreSQL instance (pg_stat_statements)…");
    const trips = await roundTrips(backends[1]!, pg, serviceUrl, thumb, bytes.get(thumb.path)!);
    for (const b of backends.splice(0)) await b.svc.stop();

    progress("the request path in-process on the service's classes, both stores…");
    const file = await openServices(dirs[2]!);
    const inprocUrl = await pg.database("bench_inproc");
    const pgStore = await openStore(inprocUrl);
    const onPg = await servicesOn(
      pgStore,
      loadConfig({
        IMGPRESS_DATA_DIR: dirs[2]!,
        IMGPRESS_DATABASE_URL: inprocUrl,
        IMGPRESS_MASTER_KEY: file.config.masterKey!,
      }),
    );
    const paths = await measureDbPaths(
      [
        { label: "file", services: file.services, keys: file.keys, counter: sqliteCounter(file.store) },
        {
          label: "PostgreSQL",
          services: onPg.services,
          keys: onPg.keys,
          counter: { reset: pg.reset, read: () => pg.statements(inprocUrl) },
        },
      ],
      bytes.get(thumb.path)!,
      20,
      REPS * 5,
    );
    await Promise.all([file.store.close(), pgStore.close()]);

    const run: PostgresRun = {
      date: new Date().toISOString(),
      load: [loadStart, loadavg()],
      postgres: `${pg.version} (${pg.settings})`,
      throughput: sat,
      sequential: seq,
      roundTrips: trips,
      paths,
    };
    const markdown = postgresMarkdown(run, opt.write ? "--write" : "");
    console.log(`\n${markdown}`);
    writeFileSync(join(WORK, "postgres.json"), JSON.stringify(run, null, 1));
    if (opt.write) {
      progress(`wrote its section of ${writeSection(POSTGRES_BLOCK, markdown)}`);
    }
  } finally {
    for (const b of backends) await b.svc.stop();
    await Promise.all([ref.stop(), sink.close()]);
    await pg.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
