// Side-by-side sweep of glibc malloc settings for the server (issue 14's remaining misses): each
// variant is a fresh `bun src/main.ts` (or bench/lib/entry-untuned.ts with BENCH_MALLOPT) measured
// on the large-photo throughput run (32 signed jobs, 4 clients: images/s, peak RSS), the thumbnail
// workload (4 client kinds), and a second fresh server taking 8 × 20 MB uploads (peak RSS). Each
// variant's ratios are against in-process pools (glibc defaults) measured right before it, so
// load drifting on the shared machine hits both sides of a ratio alike; variants rotate per round.
//
//   bun bench/alloc-sweep.ts [--rounds=2] [--kinds=2] [--only=as-is,a2-m8,…]   prints a markdown table
//   bun bench/alloc-sweep.ts --sustained=5 [--rounds=…] [--only=…]   peak RSS of back-to-back large-photo runs
//
// Findings (2026-11-23, docs/performance.md "Throughput on thumbnails and the allocator"): a fixed
// 8 MiB threshold recovers most of the thumbnails' CPU for ~+35–65 MiB of peak, not enough for 0.95.
// On an AMD EPYC host (2026-11-24, same doc, "Sustained load"): a2-dyn-idle reads ~0.86 of the pool
// against ~0.77 as is, and with --sustained both settings settle at 530–680 MiB. On the same kind of
// host (2026-11-27): jemalloc and mimalloc preloaded fault 2–3× more per thumbnail job than as is
// and read 0.63–0.73 of the pool (docs/performance.md, "Other allocators").
import { cpSync, existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Bench, filename, idleRss, MiB } from "./lib/context.ts";
import { loadCorpus } from "./lib/corpus.ts";
import { type Service, send, signedConvert, startService } from "./lib/service.ts";
import { CLIENT_KINDS, kindLabel, poolRate, prepare, saturate } from "./lib/thumb-client.ts";
import { loadThumbs } from "./lib/thumbs.ts";
import { fmt, median, PeakRss, procCounters, progress, table } from "./lib/util.ts";

const WORK = join(import.meta.dir, ".work");
const UNTUNED = join(import.meta.dir, "lib", "entry-untuned.ts");
const MB = 1024 * 1024;

interface Variant {
  name: string;
  label: string;
  env: Record<string, string>;
  entry?: string;
}

const mallopt = (name: string, label: string, spec: string, env: Record<string, string> = {}): Variant => ({
  name,
  label,
  env: { BENCH_MALLOPT: spec, ...env },
  entry: UNTUNED,
});

const VARIANTS: Variant[] = [
  { name: "as-is", label: "src/main.ts: arena_max 2, mmap 16 MiB", env: {} },
  { name: "defaults", label: "glibc defaults", env: {}, entry: UNTUNED },
  mallopt("a2-dyn", "arena_max 2, dynamic mmap threshold", "arena_max=2"),
  mallopt("a2-dyn-idle", "arena_max 2, dynamic mmap threshold, release when idle (as src/main.ts)", "arena_max=2", {
    BENCH_IDLE_RELEASE: "1",
  }),
  mallopt("a1-m16-idle", "arena_max 1, mmap 16 MiB, release when idle", `arena_max=1,mmap_threshold=${16 * MB}`, {
    BENCH_IDLE_RELEASE: "1",
  }),
  mallopt("a2-m4", "arena_max 2, mmap 4 MiB", `arena_max=2,mmap_threshold=${4 * MB}`),
  mallopt("a2-m8", "arena_max 2, mmap 8 MiB", `arena_max=2,mmap_threshold=${8 * MB}`),
  mallopt("a2-m16", "arena_max 2, mmap 16 MiB", `arena_max=2,mmap_threshold=${16 * MB}`),
  mallopt("a2-m32", "arena_max 2, mmap 32 MiB", `arena_max=2,mmap_threshold=${32 * MB}`),
  mallopt(
    "a2-m16-t32",
    "arena_max 2, mmap 16 MiB, trim 32 MiB",
    `arena_max=2,mmap_threshold=${16 * MB},trim_threshold=${32 * MB}`,
  ),
  mallopt(
    "a2-m16-t64",
    "arena_max 2, mmap 16 MiB, trim 64 MiB",
    `arena_max=2,mmap_threshold=${16 * MB},trim_threshold=${64 * MB}`,
  ),
  mallopt(
    "a2-m16-p16",
    "arena_max 2, mmap 16 MiB, top pad 16 MiB",
    `arena_max=2,mmap_threshold=${16 * MB},top_pad=${16 * MB}`,
  ),
  mallopt(
    "a2-m32-t64",
    "arena_max 2, mmap 32 MiB, trim 64 MiB",
    `arena_max=2,mmap_threshold=${32 * MB},trim_threshold=${64 * MB}`,
  ),
  mallopt("a4-m16", "arena_max 4, mmap 16 MiB", `arena_max=4,mmap_threshold=${16 * MB}`),
  mallopt("a8-m16", "arena_max 8, mmap 16 MiB", `arena_max=8,mmap_threshold=${16 * MB}`),
  mallopt("a4-m1", "arena_max 4, mmap 1 MiB", `arena_max=4,mmap_threshold=${MB}`),
  mallopt("a8-m1", "arena_max 8, mmap 1 MiB", `arena_max=8,mmap_threshold=${MB}`),
  {
    name: "jemalloc",
    label: "jemalloc 5.3 (Debian's libjemalloc2, LD_PRELOAD), no mallopt",
    env: { LD_PRELOAD: "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2" },
    entry: UNTUNED,
  },
  {
    name: "mimalloc",
    label: "mimalloc 2.0 (Debian's libmimalloc2.0, LD_PRELOAD), no mallopt",
    env: { LD_PRELOAD: "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2" },
    entry: UNTUNED,
  },
  {
    name: "as-is-thp",
    label: "src/main.ts + GLIBC_TUNABLES=glibc.malloc.hugetlb=1",
    env: { GLIBC_TUNABLES: "glibc.malloc.hugetlb=1" },
  },
];

interface Row {
  large: number[];
  largeCpu: number[];
  largePeak: number[];
  thumbs: Record<string, number[]>;
  thumbsCpu: number[];
  /** Minor page faults per thumbnail job (the converting process). */
  thumbsFaults: number[];
  after: number[];
  big: number[];
  failed: number;
}

/** Runs `run` and returns its result with the CPU ms and minor page faults per job `pid` had meanwhile. */
async function withCpuAndFaults<T>(pid: number, jobs: number, run: () => Promise<T>): Promise<[T, number, number]> {
  const before = procCounters(pid);
  const r = await run();
  const after = procCounters(pid);
  return [r, (after.cpuMs - before.cpuMs) / jobs, (after.minorFaults - before.minorFaults) / jobs];
}

const { values } = parseArgs({
  options: {
    rounds: { type: "string" },
    only: { type: "string" },
    kinds: { type: "string" },
    sustained: { type: "string" },
  },
});
const rounds = Number(values.rounds ?? 1);
// --sustained=N: only the large-photo load, N runs back to back per fresh server, peak RSS of each.
const sustained = Number(values.sustained ?? 0);
const only = new Set((values.only ?? "").split(",").filter(Boolean));
const variants = only.size ? [...only].map((n) => VARIANTS.find((v) => v.name === n)!) : VARIANTS;
if (variants.some((v) => !v)) throw new Error(`unknown variant; variants: ${VARIANTS.map((v) => v.name).join(", ")}`);
// A preloaded library that is missing only makes ld.so warn, and the row would measure glibc under its name.
for (const v of variants) {
  const preload = v.env.LD_PRELOAD;
  if (preload && !existsSync(preload))
    throw new Error(
      `variant ${v.name} preloads ${preload}, which is not installed: apt-get install libjemalloc2 libmimalloc2.0`,
    );
}
// --kinds=2: keep-alive bearer and new connection signed only (the cheapest and dearest client).
const kinds = values.kinds === "2" ? [CLIENT_KINDS[0]!, CLIENT_KINDS[3]!] : CLIENT_KINDS;

const corpus = await loadCorpus(WORK, false);
const b = await Bench.start(false, corpus.images, corpus.worst, [corpus.dir, join(WORK, "corpus")]);
const running = new Set<Service>();
const dataDirOf = (v: Variant) => `${b.dataDir}-${v.name}`;
// Variants rotate per round, so none always runs first (or right after a given other).
const orderOf = (round: number) => variants.map((_, k) => variants[(k + round) % variants.length]!);
const stopAll = async () => {
  for (const s of running) await s.stop();
  running.clear();
};
process.on(
  "SIGTERM",
  () =>
    void stopAll()
      .then(() => b.close())
      .then(() => process.exit(1)),
);
try {
  const thumbs = (await loadThumbs(b.images, WORK))
    .flatMap((t) => [t, t])
    .sort((x, y) => y.width * y.height - x.width * x.height);
  const keys = await b.keys();
  await b.releaseService();
  const jobs = b.jobsOf(b.images, 2);
  const rows = new Map<string, Row>(
    variants.map((v) => [
      v.name,
      {
        large: [],
        largeCpu: [],
        largePeak: [],
        thumbs: {},
        thumbsCpu: [],
        thumbsFaults: [],
        after: [],
        big: [],
        failed: 0,
      },
    ]),
  );
  const pools = { large: [] as number[], thumbs: [] as number[], thumbsFaults: [] as number[] };
  // A data folder has one server (src/server/pidfile.ts), and the variants' servers run side by side: each
  // gets its own copy of the folder that issued the keys.
  for (const v of variants) cpSync(b.dataDir, dataDirOf(v), { recursive: true });
  const start = async (v: Variant) => {
    const s = await startService({ kind: "source", dataDir: dataDirOf(v), env: v.env, entry: v.entry });
    running.add(s);
    return s;
  };
  const stop = async (s: Service) => {
    running.delete(s);
    await s.stop();
  };
  if (sustained > 0) {
    // Peak RSS per run of a fresh server under the large-photo load repeated back to back: what a
    // busy server settles at, where the table below measures a server's first bursts.
    const peaks = new Map<string, string[]>(variants.map((v) => [v.name, []]));
    for (let round = 0; round < rounds; round++) {
      for (const v of orderOf(round)) {
        const svc = await start(v);
        for (let run = 1; run <= sustained; run++) {
          const r = await b.runService(svc, keys, jobs, `${v.name} (sustained ${run}/${sustained})`);
          peaks.get(v.name)!.push(`${Math.round(r.peakKiB / 1024)}`);
        }
        peaks.get(v.name)!.push("/");
        await stop(svc);
      }
    }
    console.log(
      `\nPeak RSS (MiB) of each run of ${jobs.length} large photos, ${sustained} runs back to back per fresh server, ${rounds} round(s) ("/" between servers)\n\n` +
        table(
          ["variant", "peaks"],
          variants.map((v) => [v.label, peaks.get(v.name)!.join(" ")]),
        ),
    );
  }
  for (let round = 0; round < (sustained > 0 ? 0 : rounds); round++) {
    const order = orderOf(round);
    const servers = new Map<string, Service>();
    for (const v of order) servers.set(v.name, await start(v));
    // Large photos: the pool of 2 right before each variant.
    for (const v of order) {
      const row = rows.get(v.name)!;
      const svc = servers.get(v.name)!;
      const [pool, poolCpu] = await withCpuAndFaults(b.ref.pid, jobs.length, () =>
        b.runPool(b.ref, jobs, 2, "in-process pool of 2 (large)"),
      );
      pools.large.push(poolCpu);
      const [run, cpu] = await withCpuAndFaults(svc.pid, jobs.length, () =>
        b.runService(svc, keys, jobs, `${v.name} (large)`),
      );
      row.large.push(run.ips / pool.ips);
      row.largeCpu.push(cpu);
      row.largePeak.push(run.peakKiB);
      progress(
        `  ${v.name} large ×${fmt(run.ips / pool.ips, 3)}, CPU ${fmt(cpu, 0)} vs ${fmt(poolCpu, 0)} ms/img, peak ${MiB(run.peakKiB)}`,
      );
    }
    // Thumbnails: the pool of 4 right before each variant and client kind.
    for (const kind of kinds) {
      for (const v of order) {
        const row = rows.get(v.name)!;
        const svc = servers.get(v.name)!;
        const target = { base: svc.base, ca: svc.ca, keys };
        const uploads = thumbs.map((j) => prepare(target, kind, j, b.bytesOf(j)));
        const [tpool, poolCpu, poolFaults] = await withCpuAndFaults(b.ref.pid, thumbs.length, () =>
          poolRate(b.ref, thumbs, 4),
        );
        pools.thumbs.push(poolCpu);
        pools.thumbsFaults.push(poolFaults);
        const [ips, cpu, faults] = await withCpuAndFaults(svc.pid, thumbs.length, () =>
          saturate(target, kind.keepAlive, uploads, 4),
        );
        (row.thumbs[kindLabel(kind)] ??= []).push(ips / tpool);
        row.thumbsCpu.push(cpu);
        row.thumbsFaults.push(faults);
        progress(
          `  ${v.name} thumbs ${kindLabel(kind)} ×${fmt(ips / tpool, 3)}, CPU ${fmt(cpu, 1)} vs ${fmt(poolCpu, 1)} ms/job, minor faults ${fmt(faults, 0)} vs ${fmt(poolFaults, 0)} per job`,
        );
      }
    }
    for (const v of order) rows.get(v.name)!.after.push((await idleRss(servers.get(v.name)!.pid)).VmRSS ?? NaN);
    await stopAll();
    // 8 × 20 MB, a fresh server each.
    for (const v of order) {
      const row = rows.get(v.name)!;
      const svc = await start(v);
      const reqs = Array.from({ length: 8 }, (_, i) => b.worst[i % b.worst.length]!).map((f) =>
        signedConvert(keys, b.bytesOf(f), filename(f)),
      );
      const peak = new PeakRss(svc.pid).start();
      const replies = await Promise.all(reqs.map((r) => send(svc, r)));
      row.big.push(peak.stop());
      row.failed += replies.filter((r) => r.status !== 200).length;
      progress(`  ${v.name} 8 × 20 MB peak ${MiB(row.big.at(-1)!)}`);
      await stop(svc);
    }
  }
  if (sustained === 0)
    console.log(
      `\n${rounds} round(s); in-process CPU per job (glibc defaults): large ${fmt(median(pools.large), 0)} ms, thumbs ${fmt(median(pools.thumbs), 1)} ms and ${fmt(median(pools.thumbsFaults), 0)} minor page faults; load average now ${readFileSync("/proc/loadavg", "utf8").trim()}\n\n` +
        table(
          [
            "variant",
            "large ÷ pool of 2",
            "large CPU ms/img",
            "peak RSS (large)",
            "RSS after",
            "peak RSS (8 × 20 MB)",
            ...kinds.map((k) => `thumbs ${kindLabel(k)}`),
            "thumbs CPU ms/job",
            "thumbs minor faults/job",
            "failed",
          ],
          variants.map((v) => {
            const r = rows.get(v.name)!;
            return [
              v.label,
              fmt(median(r.large), 3),
              fmt(median(r.largeCpu), 0),
              MiB(Math.max(...r.largePeak)),
              MiB(median(r.after)),
              MiB(Math.max(...r.big)),
              ...kinds.map((k) => fmt(median(r.thumbs[kindLabel(k)]!), 3)),
              fmt(median(r.thumbsCpu), 1),
              fmt(median(r.thumbsFaults), 0),
              r.failed,
            ];
          }),
        ),
    );
  if (sustained === 0) console.log(JSON.stringify({ pools, rows: Object.fromEntries(rows) }));
} finally {
  await stopAll();
  await b.close();
  for (const dir of [b.dataDir, ...variants.map(dataDirOf)]) rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
