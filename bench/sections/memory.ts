// Section "memory": a fresh server receiving 8 concurrent 20 MB uploads, against the in-process pool and ipx.
import { filename, MiB } from "../lib/context.ts";
import { figure, type Section } from "../lib/figures.ts";
import { ipxGet } from "../lib/peer.ts";
import { send, signedConvert, startService } from "../lib/service.ts";
import { fmt, fmtMs, mib, PeakRss, progress, table } from "../lib/util.ts";

/** The big-uploads section (stops the shared server first: the fresh one has the machine to itself). */
export const memory: Section = {
  name: "memory",
  async run(b) {
    const [keys, peer] = [await b.keys(), await b.peer()];
    await b.releaseService();
    const { worst, ref } = b;
    const svc = await startService({ kind: "source", dataDir: b.dataDir });
    const files = Array.from({ length: b.P.bigUploads }, (_, i) => worst[i % worst.length]!);
    const reqs = files.map((f) => signedConvert(keys, b.bytesOf(f), filename(f)));
    progress(`memory: ${files.length} concurrent ~20 MB uploads to a fresh server…`);
    const peak = new PeakRss(svc.pid).start();
    const t0 = performance.now();
    const replies = await Promise.all(reqs.map((r) => send(svc, r)));
    const wall = performance.now() - t0;
    const svcPeak = peak.stop();
    await svc.stop();
    const errors = replies.filter((r) => r.status !== 200);
    progress(`memory: service peak ${MiB(svcPeak)} in ${fmtMs(wall)}; ${errors.length} errors`);

    const refPeak = new PeakRss(ref.pid).start();
    const refRun = await ref.call<{ ms: number }>({
      op: "pool",
      paths: files.map((f) => f.path),
      size: 2,
      format: "webp",
    });
    const refKiB = refPeak.stop();
    const ipxPeak = new PeakRss(peer.pid).start();
    const ipxT0 = performance.now();
    const ipxReplies = await Promise.all(files.map((f) => ipxGet(peer, f.rel)));
    const ipxWall = performance.now() - ipxT0;
    const ipxKiB = ipxPeak.stop();
    progress(
      `memory: in-process pool of 2 peak ${MiB(refKiB)}; ipx (${files.length} concurrent GETs) peak ${MiB(ipxKiB)}`,
    );
    await b.releasePeer();
    const f = figure({
      figure: "memory (8 × 20 MB)",
      measured: `${files.length} uploads: peak RSS ${MiB(svcPeak)} (in-process pool of 2 on the same files ${MiB(refKiB)}, ipx ${MiB(ipxKiB)})${errors.length ? `; ${errors.length} requests failed: ${errors[0]!.status} ${errors[0]!.error}` : ""}`,
      ratio: mib(svcPeak) / 1536,
      against: "target 1.5 GiB",
      target: "≤ 1.00 (1.5 GiB)",
      met: mib(svcPeak) <= 1536 && errors.length === 0,
    });
    const markdown =
      `## Memory: ${files.length} concurrent 20 MB uploads\n\n` +
      `A fresh server receives ${files.length} signed uploads at once, alternating the two generated worst cases (${worst.map((w) => `${w.name}: ${w.bytes} bytes, ${fmt(w.mp, 1)} MP`).join("; ")}), WebP lossy. ` +
      `For scale, the same ${files.length} conversions in the in-process reference (pool of 2, the server's concurrency) and through ipx (${files.length} concurrent GETs).\n\n` +
      table(
        ["process", "peak RSS", "wall time", "statuses"],
        [
          ["service", MiB(svcPeak), fmtMs(wall), replies.map((r) => r.status).join(" ")],
          ["in-process pool of 2", MiB(refKiB), fmtMs(refRun.ms), ""],
          ["ipx", MiB(ipxKiB), fmtMs(ipxWall), ipxReplies.map((r) => r.status).join(" ")],
        ],
      );
    return {
      figures: [f],
      markdown,
      raw: { bigUploads: { svcPeak, wall, replies, refKiB, refMs: refRun.ms, ipxKiB, ipxWall } },
    };
  },
};
