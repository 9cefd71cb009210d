// Section "allocator": before/after of the glibc malloc tuning in src/main.ts.
import { join } from "node:path";
import { CLIENTS, filename, idleRss, MiB } from "../lib/context.ts";

/** RSS "after the run" is read this long after the load: past src/conversion/idle.ts's 2 s, when the server has trimmed, as in the throughput section. */
const AFTER_LOAD_SETTLE_MS = 5000;

import type { Section } from "../lib/figures.ts";
import { type ServiceOptions, send, signedConvert, startService } from "../lib/service.ts";
import { fmt, fmtMs, median, PeakRss, progress, table } from "../lib/util.ts";

interface Row {
  ips: number[];
  ratio: number[];
  peak: number[];
  after: number[];
  big: number[];
  failed: number;
  avif?: number;
}

/**
 * Before/after of the glibc malloc tuning in src/main.ts (mallopt: 2 arenas, fixed 16 MiB mmap
 * threshold, before sharp loads; malloc_trim once conversions pause): the server as it is, the same server without the tuning
 * (bench/lib/entry-untuned.ts), and with MALLOC_ARENA_MAX in the environment (sharp then runs
 * libvips threads = cores). Fresh servers per variant; variants alternate within a round; the
 * in-process pool of 2 (glibc defaults) runs in each round for the ratio. No figure of its own.
 */
export const allocator: Section = {
  name: "allocator",
  async run(b) {
    const keys = await b.keys();
    await b.releaseService();
    const variants: [string, ServiceOptions["env"], string | undefined][] = [
      [
        "glibc defaults (src/main.ts without its mallopt calls)",
        {},
        join(import.meta.dir, "..", "lib", "entry-untuned.ts"),
      ],
      ["src/main.ts as is: 2 arenas, 16 MiB mmap threshold, trim when idle, 1 libvips thread", {}, undefined],
      ["as is + MALLOC_ARENA_MAX=2 in the environment (libvips threads = cores)", { MALLOC_ARENA_MAX: "2" }, undefined],
    ];
    const jobs = b.jobsOf(b.images, 2);
    const rounds = b.quick ? 1 : 2;
    const biggest = [...b.images].sort((x, y) => y.mp - x.mp)[0]!;
    const rows: Row[] = variants.map(() => ({ ips: [], ratio: [], peak: [], after: [], big: [], failed: 0 }));
    for (let round = 0; round < rounds; round++) {
      const pool = await b.runPool(b.ref, jobs, 2);
      for (let k = 0; k < variants.length; k++) {
        const v = (k + round) % variants.length;
        const [label, env, entry] = variants[v]!;
        const row = rows[v]!;
        progress(`allocator round ${round + 1}/${rounds}: ${label}`);
        const svc = await startService({ kind: "source", dataDir: b.dataDir, env, entry });
        if (round === 0)
          row.avif = (await send(svc, signedConvert(keys, b.bytesOf(biggest), filename(biggest), "avif"))).ms;
        const run = await b.runService(svc, keys, jobs, label);
        row.ips.push(run.ips);
        row.ratio.push(run.ips / pool.ips);
        row.peak.push(run.peakKiB);
        row.after.push((await idleRss(svc.pid, AFTER_LOAD_SETTLE_MS)).VmRSS ?? NaN);
        await svc.stop();
        const svc2 = await startService({ kind: "source", dataDir: b.dataDir, env, entry });
        const files = Array.from({ length: b.P.bigUploads }, (_, i) => b.worst[i % b.worst.length]!);
        const reqs = files.map((f) => signedConvert(keys, b.bytesOf(f), filename(f)));
        const peak = new PeakRss(svc2.pid).start();
        const replies = await Promise.all(reqs.map((r) => send(svc2, r)));
        row.big.push(peak.stop());
        row.failed += replies.filter((r) => r.status !== 200).length;
        await svc2.stop();
      }
    }
    const [def, rec] = rows as [Row, Row];
    const markdown =
      "## Allocator settings: before/after\n\n" +
      "src/main.ts calls mallopt() before sharp loads (2 malloc arenas, fixed 16 MiB mmap threshold) and the server calls malloc_trim(0) 2 s after conversions pause. The 'glibc defaults' row runs the same server from bench/lib/entry-untuned.ts, src/main.ts without those calls. " +
      `Fresh servers per variant, ${jobs.length} jobs with ${CLIENTS} clients (throughput and peak RSS, then RSS ${AFTER_LOAD_SETTLE_MS / 1000} s later), then a fresh server for ${b.P.bigUploads} × 20 MB uploads; ` +
      `${rounds} round(s), variants in rotating order, the in-process pool of 2 (glibc defaults) re-measured each round for the ratio; medians (peaks: maximum). ` +
      `Single-request AVIF latency of ${biggest.name} (${fmt(biggest.mp, 1)} MP) from round 1.\n\n` +
      table(
        [
          "environment",
          "images/s",
          "÷ in-process pool of 2",
          "peak RSS (4 clients)",
          "RSS after the run",
          `peak RSS (${b.P.bigUploads} × 20 MB)`,
          "failed",
          "AVIF latency",
        ],
        variants.map(([label], i) => {
          const r = rows[i]!;
          return [
            label,
            fmt(median(r.ips)),
            fmt(median(r.ratio)),
            MiB(Math.max(...r.peak)),
            MiB(median(r.after)),
            MiB(Math.max(...r.big)),
            r.failed,
            fmtMs(r.avif ?? NaN),
          ];
        }),
      ) +
      `\n\nAs is vs glibc defaults: peak RSS under load ${MiB(Math.max(...def.peak))} → ${MiB(Math.max(...rec.peak))}, after the run ${MiB(median(def.after))} → ${MiB(median(rec.after))}, ` +
      `${b.P.bigUploads} × 20 MB ${MiB(Math.max(...def.big))} → ${MiB(Math.max(...rec.big))}, throughput ×${fmt(median(rec.ips) / median(def.ips))}.`;
    return { figures: [], markdown, raw: { allocator: variants.map(([label], i) => ({ label, ...rows[i] })) } };
  },
};
