// Section "overhead": per-image latency of the service, one client, against the same conversion in-process.
import { filename, SERVICE_MALLOPT } from "../lib/context.ts";
import type { Image } from "../lib/corpus.ts";
import { figure, type Section } from "../lib/figures.ts";
import { send, signedConvert } from "../lib/service.ts";
import { fmt, fmtMs, geomean, median, progress, sum, table } from "../lib/util.ts";

interface Row {
  image: Image;
  svc: number[];
  ref: number[];
  /** In-process with the service's malloc settings. */
  tuned: number[];
  svcBytes: number;
  refBytes: number;
}

/** The overhead section; also records each image's in-process time, which orders the saturated runs. */
export const overhead: Section = {
  name: "overhead",
  async run(b) {
    const [svc, keys] = [await b.service(), await b.keys()];
    const { ref, refTuned } = b;
    // Warm-up: JIT, TLS session, first libvips use in both processes.
    const small = [...b.images].sort((x, y) => x.mp - y.mp)[0]!;
    await send(svc, signedConvert(keys, b.bytesOf(small), filename(small)));
    await ref.call({ op: "convert", path: small.path, format: "webp" });
    await refTuned.call({ op: "convert", path: small.path, format: "webp" });
    const rows: Row[] = b.images.map((image) => ({ image, svc: [], ref: [], tuned: [], svcBytes: 0, refBytes: 0 }));
    for (let r = 0; r < b.P.overheadReps; r++) {
      for (const [i, row] of rows.entries()) {
        const doSvc = async () => {
          const reply = await send(svc, signedConvert(keys, b.bytesOf(row.image), filename(row.image)));
          if (reply.status !== 200)
            throw new Error(`service answered ${reply.status} for ${row.image.name}: ${reply.error}`);
          row.svc.push(reply.ms);
          row.svcBytes = reply.bytes;
        };
        const doRef = async () => {
          const out = await ref.call<{ ms: number; bytes: number }>({
            op: "convert",
            path: row.image.path,
            format: "webp",
          });
          row.ref.push(out.ms);
          row.refBytes = out.bytes;
        };
        const doTuned = async () =>
          void row.tuned.push(
            (await refTuned.call<{ ms: number }>({ op: "convert", path: row.image.path, format: "webp" })).ms,
          );
        // Rotate which goes first, so drift on the machine falls on every side alike.
        const order = [doRef, doSvc, doTuned];
        for (let k = 0; k < order.length; k++) await order[(k + r + i) % order.length]!();
        progress(
          `overhead ${r + 1}/${b.P.overheadReps} ${row.image.name}: service ${fmtMs(row.svc.at(-1)!)}, in-process ${fmtMs(row.ref.at(-1)!)} (with the service's malloc settings ${fmtMs(row.tuned.at(-1)!)})`,
        );
      }
    }
    for (const r of rows) b.costs.set(r.image.path, median(r.ref));
    const svcTotal = sum(rows.map((r) => median(r.svc)));
    const refTotal = sum(rows.map((r) => median(r.ref)));
    const tunedTotal = sum(rows.map((r) => median(r.tuned)));
    const ratio = svcTotal / refTotal;
    const gm = geomean(rows.map((r) => median(r.svc) / median(r.ref)));
    const sameBytes = rows.every((r) => r.svcBytes === r.refBytes);
    const f = figure({
      figure: "overhead",
      measured: `Σ median latency ${fmtMs(svcTotal)} service vs ${fmtMs(refTotal)} in-process over ${rows.length} images (geometric mean of per-image ratios ${fmt(gm)}; against in-process with the service's malloc settings, ${fmtMs(tunedTotal)}: ${fmt(svcTotal / tunedTotal, 3)})`,
      ratio,
      against: "the same sharp conversion in-process",
      target: "≤ 1.05",
      met: ratio <= 1.05,
    });
    const markdown =
      "## Overhead: one client, sequential, WebP lossy\n\n" +
      `Per image: the service's latency (HTTPS POST, signed multipart, request start → last byte of the reply; the client builds and signs the body before the clock starts) ` +
      `against the same conversion called in-process (the reference worker: the service's own convertImage with its presets, same environment), alternating which runs first, ${b.P.overheadReps} rep(s), medians. ` +
      `Output bytes identical between the two: ${sameBytes ? "yes" : "NO"}.\n\n` +
      `The third column is the same in-process conversion in a worker with the service's malloc settings (${SERVICE_MALLOPT}, as src/main.ts sets them): it splits the ratio into the allocator's share (freshly mmapped buffers are page-faulted for every image) and the service's own.\n\n` +
      table(
        [
          "image",
          "MP",
          "input bytes",
          "service",
          "in-process",
          "in-process, service's malloc",
          "ratio",
          "ratio vs service's malloc",
          "difference",
        ],
        rows.map((r) => [
          r.image.name,
          fmt(r.image.mp, 1),
          r.image.bytes,
          fmtMs(median(r.svc)),
          fmtMs(median(r.ref)),
          fmtMs(median(r.tuned)),
          fmt(median(r.svc) / median(r.ref)),
          fmt(median(r.svc) / median(r.tuned)),
          fmtMs(median(r.svc) - median(r.ref)),
        ]),
      ) +
      `\n\nTotal: ${fmtMs(svcTotal)} / ${fmtMs(refTotal)} = **${fmt(ratio, 3)}** (geometric mean of the per-image ratios ${fmt(gm, 3)}); against the in-process conversion with the service's malloc settings ${fmtMs(svcTotal)} / ${fmtMs(tunedTotal)} = ${fmt(svcTotal / tunedTotal, 3)}.`;
    return {
      figures: [f],
      markdown,
      raw: { overhead: rows.map((r) => ({ image: r.image.name, svc: r.svc, ref: r.ref, tuned: r.tuned })) },
    };
  },
};
