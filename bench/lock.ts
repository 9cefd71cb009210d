// `bun bench/lock.ts` — issue 37 point 1: the service while another process holds the database's
// write lock. One real server (bun src/main.ts, HTTPS) on a fresh libSQL file; the same load is run
// twice, side by side in one run: first while the `sqlite3` CLI holds `BEGIN EXCLUSIVE` (with a
// write in it) for --lock-s seconds, then with nothing locking the file. The load: /health and an
// unknown route polled back to back, bearer conversions of a known key one after another, one
// `request-otp` always in flight (each a write that must wait or fail), and /health/ready once a
// second. Prints p50/p99 of each, the conversion time ratio and the readiness answer time.
//
//   bun bench/lock.ts               ~40 s; prints the section
//   bun bench/lock.ts --write       also replaces its section of bench/RESULTS.md
//   --lock-s=N (15)
import { join } from "node:path";
import { parseArgs } from "node:util";
import { photo } from "../test/support/images.ts";
import { multipart } from "../test/support/imgpress.ts";
import { startSmtpSink } from "../test/support/smtp.ts";
import { holdSqliteLock } from "../test/support/sqlite-lock.ts";
import { LOCK_BLOCK, writeSection } from "./lib/results.ts";
import { obtainKeys, type Service, startService, tempDir } from "./lib/service.ts";
import { fmtMs, median, progress, table } from "./lib/util.ts";

const { values: opt } = parseArgs({
  options: { "lock-s": { type: "string", default: "15" }, write: { type: "boolean", default: false } },
});
const LOCK_S = Number(opt["lock-s"]);

/** Times and statuses of one kind of request during a phase. */
interface Series {
  ms: number[];
  statuses: Map<number, number>;
}

const series = (): Series => ({ ms: [], statuses: new Map() });

function p99(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(0.99 * xs.length) - 1)] ?? Number.NaN;
}

async function timed(svc: Service, path: string, into: Series, init: RequestInit = {}): Promise<void> {
  const t0 = performance.now();
  try {
    const res = await fetch(`${svc.base}${path}`, { ...init, tls: { ca: svc.ca } } as RequestInit);
    await res.arrayBuffer();
    into.statuses.set(res.status, (into.statuses.get(res.status) ?? 0) + 1);
  } catch {
    into.statuses.set(0, (into.statuses.get(0) ?? 0) + 1);
  }
  into.ms.push(performance.now() - t0);
}

/** Runs `step` back to back until `until` has passed. */
async function loop(until: number, step: () => Promise<void>, pauseMs = 0): Promise<void> {
  while (performance.now() < until) {
    await step();
    if (pauseMs) await Bun.sleep(pauseMs);
  }
}

interface Phase {
  health: Series;
  unknown: Series;
  convert: Series;
  otp: Series;
  ready: Series;
}

/** The load of one phase, for `seconds`. */
async function phase(svc: Service, apiKey: string, image: Uint8Array, seconds: number, tag: string): Promise<Phase> {
  const p: Phase = { health: series(), unknown: series(), convert: series(), otp: series(), ready: series() };
  const until = performance.now() + seconds * 1000;
  let n = 0;
  const form = () => multipart({ format: "webp", quality: "lossy" }, image, "photo.jpg");
  await Promise.all([
    loop(until, () => timed(svc, "/health", p.health), 10),
    loop(until, () => timed(svc, "/no/such/route", p.unknown), 10),
    loop(until, async () => {
      const f = form();
      await timed(svc, "/v1/plugin/convert", p.convert, {
        method: "POST",
        body: f.body as Uint8Array<ArrayBuffer>,
        headers: { "content-type": f.contentType, authorization: `Bearer ${apiKey}` },
      });
    }),
    loop(
      until,
      () =>
        timed(svc, "/v1/plugin/auth/request-otp", p.otp, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email: `${tag}-${n++}@example.com` }),
        }),
      10,
    ),
    loop(until, () => timed(svc, "/health/ready", p.ready), 1000),
  ]);
  return p;
}

const statusText = (s: Series) => [...s.statuses].map(([code, count]) => `${count}× ${code}`).join(", ");

function report(free: Phase, locked: Phase): string {
  const row = (name: string, a: Series, b: Series) => [
    name,
    fmtMs(median(a.ms)),
    fmtMs(p99(a.ms)),
    statusText(a),
    fmtMs(median(b.ms)),
    fmtMs(p99(b.ms)),
    fmtMs(Math.max(...b.ms)),
    statusText(b),
  ];
  const rows = [
    row("`/health`", free.health, locked.health),
    row("unknown route (404)", free.unknown, locked.unknown),
    row("bearer conversion (640×480 JPEG → WebP)", free.convert, locked.convert),
    row("`request-otp` (a write)", free.otp, locked.otp),
    row("`/health/ready`", free.ready, locked.ready),
  ];
  const ratio = median(locked.convert.ms) / median(free.convert.ms);
  return [
    "<!-- lock bench:start (written by bench/lock.ts --write) -->",
    "## A locked database (bench/lock.ts)",
    "",
    `One server on a fresh libSQL file; the same load for ${LOCK_S} s while the \`sqlite3\` CLI holds \`BEGIN EXCLUSIVE\` with a write in it,`,
    "then for as long with nothing locking the file: /health and an unknown route polled back to back",
    "(10 ms apart), bearer conversions one after another, one `request-otp` always in flight, `/health/ready` once a second.",
    "",
    table(
      ["request", "free p50", "free p99", "free answers", "locked p50", "locked p99", "locked max", "locked answers"],
      rows,
    ),
    "",
    `Bearer conversion time while locked ÷ free (p50): **${ratio.toFixed(2)}**.`,
    "<!-- lock bench:end -->",
  ].join("\n");
}

const sink = await startSmtpSink();
const dataDir = tempDir("lock");
const svc = await startService({ kind: "source", dataDir, sink });
try {
  const keys = await obtainKeys(svc);
  const image = new Uint8Array(await photo(640, 480));
  // Locked first: its code requests all fail (nothing recorded), so the client's hourly code quota
  // is still whole for the free phase, whose requests are then real writes too, not quick 429s.
  progress(`locked: the load while sqlite3 holds BEGIN EXCLUSIVE for ${LOCK_S} s`);
  const lock = await holdSqliteLock(join(dataDir, "imgpress.db"), "UPDATE heartbeat SET at = at");
  let locked: Phase;
  try {
    locked = await phase(svc, keys.apiKey, image, LOCK_S, "locked");
  } finally {
    await lock.release();
  }
  progress(`free: the same load for ${LOCK_S} s with nothing locking the file`);
  const free = await phase(svc, keys.apiKey, image, LOCK_S, "free");
  const markdown = report(free, locked);
  console.log(`\n${markdown}\n`);
  if (opt.write) progress(`wrote ${writeSection(LOCK_BLOCK, markdown)}`);
} finally {
  await svc.stop();
  await sink.close();
}
