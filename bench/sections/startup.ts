// Section "startup": exec → first /health = 200 of the compiled binary (first and warm starts) and of `bun src/main.ts`.
import { existsSync, rmSync } from "node:fs";
import { type Bench, idleRss, MiB } from "../lib/context.ts";
import { type Figure, figure, type Section } from "../lib/figures.ts";
import { BINARY, startService, tempDir } from "../lib/service.ts";
import { fmtMs, median, mib, progress, table } from "../lib/util.ts";

/** Start-up times in ms (`first`/`warm` of the binary, `src` of the source) and the binary's idle RSS. */
async function measure(b: Bench) {
  const once = async (
    kind: "binary" | "source",
    dataDir: string,
    cacheDir?: string,
    idle?: (rss: Record<string, number>) => void,
  ) => {
    const s = await startService({ kind, dataDir, cacheDir });
    if (idle) idle(await idleRss(s.pid));
    await s.stop();
    return s.startMs;
  };
  let idleFirst: Record<string, number> | undefined;
  let idleWarm: Record<string, number> | undefined;
  const first: number[] = [];
  const warm: number[] = [];
  if (existsSync(BINARY)) {
    progress(`start-up: compiled binary, ${b.P.firstStarts} first starts (empty extraction cache and data dir)…`);
    for (let i = 0; i < b.P.firstStarts; i++) {
      const data = tempDir("first");
      const cache = tempDir("cache");
      first.push(await once("binary", data, cache, i === 0 ? (rss) => (idleFirst = rss) : undefined));
      rmSync(data, { recursive: true, force: true });
      rmSync(cache, { recursive: true, force: true });
    }
    progress(`start-up: compiled binary, ${b.P.warmStarts} warm starts…`);
    const data = tempDir("warm");
    const cache = tempDir("cache");
    await once("binary", data, cache); // prime: extraction, certificate, database
    for (let i = 0; i < b.P.warmStarts; i++)
      warm.push(await once("binary", data, cache, i === 0 ? (rss) => (idleWarm = rss) : undefined));
    rmSync(data, { recursive: true, force: true });
    rmSync(cache, { recursive: true, force: true });
  }
  progress("start-up: `bun src/main.ts` for comparison…");
  const data = tempDir("src");
  const src: number[] = [];
  for (let i = 0; i < Math.max(2, b.P.warmStarts - 4); i++) src.push(await once("source", data));
  rmSync(data, { recursive: true, force: true });
  return { first, warm, src, idleFirst, idleWarm };
}

/** The start-up section. */
export const startup: Section = {
  name: "startup",
  async run(b) {
    const { first, warm, src, idleFirst, idleWarm } = await measure(b);
    const figures: Figure[] = [];
    const rows: (string | number)[][] = [];
    const lines: string[] = [];
    if (first.length) {
      rows.push(["compiled binary, first start", fmtMs(median(first)), first.map((x) => x.toFixed(0)).join(", ")]);
      rows.push(["compiled binary, warm", fmtMs(median(warm)), warm.map((x) => x.toFixed(0)).join(", ")]);
      figures.push(
        figure({
          figure: "start-up (warm)",
          measured: `${fmtMs(median(warm))} median of ${warm.length}`,
          ratio: median(warm) / 150,
          against: "target 150 ms",
          target: "≤ 1.00 (150 ms)",
          met: median(warm) <= 150,
        }),
      );
      figures.push(
        figure({
          figure: "start-up (first)",
          measured: `${fmtMs(median(first))} median of ${first.length}`,
          ratio: median(first) / 300,
          against: "target 300 ms",
          target: "≤ 1.00 (300 ms)",
          met: median(first) <= 300,
        }),
      );
      if (idleWarm?.VmRSS) {
        b.idleBinary = idleWarm;
        figures.push(
          figure({
            figure: "idle (binary)",
            measured: `${MiB(idleWarm.VmRSS)} (anon ${MiB(idleWarm.RssAnon!)}, file ${MiB(idleWarm.RssFile!)})`,
            ratio: mib(idleWarm.VmRSS) / 120,
            against: "target 120 MiB",
            target: "≤ 1.00 (120 MiB)",
            met: mib(idleWarm.VmRSS) <= 120,
          }),
        );
      }
    } else {
      lines.push(
        `dist/imgpress does not exist: run \`npm run build\` first to measure the compiled binary's start-up.`,
      );
      figures.push({
        figure: "start-up",
        measured: "not measured (no dist/imgpress)",
        ratio: NaN,
        against: "",
        target: "≤ 150 / 300 ms",
        met: false,
        tried: "run `npm run build` before the bench",
      });
    }
    rows.push([
      "`bun src/main.ts` (first is the first start, rest warm)",
      fmtMs(median(src.slice(1))),
      src.map((x) => x.toFixed(0)).join(", "),
    ]);
    const markdown =
      "## Start-up\n\nExec → first `/health` = 200 over HTTPS (the bench spawns the process, waits for its listening line and requests /health). " +
      "First start = empty extraction cache (IMGPRESS_CACHE_DIR) and empty data dir (database created and migrated, certificate generated); warm = both kept. " +
      "The OS page cache is warm in both cases (the binary was just built or run). " +
      (idleFirst
        ? `Idle RSS after a first start: ${MiB(idleFirst.VmRSS ?? NaN)} (file-backed ${MiB(idleFirst.RssFile ?? NaN)}: the extraction reads the embedded libvips and addons out of the executable), after a warm start: ${MiB(idleWarm?.VmRSS ?? NaN)}.`
        : "") +
      "\n\n" +
      [...lines, table(["", "median", "samples (ms)"], rows)].join("\n");
    return {
      figures,
      markdown,
      raw: { startup: { first, warm, src }, idleBinaryFirst: idleFirst, idleBinary: idleWarm },
    };
  },
};
