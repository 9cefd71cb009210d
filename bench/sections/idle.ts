// Section "idle": RSS of a freshly started `bun src/main.ts`, where it goes, and after one conversion.
import { join } from "node:path";
import { filename, IDLE_SETTLE_MS, idleRss, MiB } from "../lib/context.ts";
import { figure, type Section } from "../lib/figures.ts";
import { ROOT, send, signedConvert } from "../lib/service.ts";
import { fmt, mib, table } from "../lib/util.ts";

/** Idle RSS of partial processes (bench/lib/idle-probe.ts): where the server's idle RSS goes. */
async function breakdown(): Promise<string> {
  const probe = join(import.meta.dir, "..", "lib", "idle-probe.ts");
  const rows: [string, Record<string, number>][] = [];
  for (const [label, parts] of [
    ["Bun runtime alone", ""],
    ["+ sharp loaded", "sharp"],
    ["+ sharp after one tiny conversion (libvips initialised)", "sharp-init"],
    ["Elysia alone", "elysia"],
    ["libSQL + drizzle alone", "db"],
    ["the whole app's modules, not booted (src/app.ts)", "app"],
    ["app modules + sharp initialised", "app,sharp-init"],
  ] as const) {
    const p = Bun.spawn([process.execPath, probe, parts], { cwd: ROOT, stdout: "pipe", stderr: "inherit" });
    const reader = p.stdout.getReader();
    await reader.read();
    rows.push([label, await idleRss(p.pid)]);
    p.kill();
    await p.exited;
  }
  return table(
    ["process", "RSS", "anonymous", "file-backed"],
    rows.map(([l, s]) => [l, MiB(s.VmRSS ?? NaN), MiB(s.RssAnon ?? NaN), MiB(s.RssFile ?? NaN)]),
  );
}

/** The idle-memory section (uses the run's shared server, which must be fresh: it runs before any section that converts). */
export const idle: Section = {
  name: "idle",
  async run(b) {
    const svc = await b.service();
    const rss = await idleRss(svc.pid);
    const f = figure({
      figure: "idle (source)",
      measured: `${MiB(rss.VmRSS!)} (anon ${MiB(rss.RssAnon!)}, file ${MiB(rss.RssFile!)}) ${IDLE_SETTLE_MS / 1000} s after /health = 200`,
      ratio: mib(rss.VmRSS!) / 120,
      against: "target 120 MiB",
      target: "≤ 1.00 (120 MiB)",
      met: mib(rss.VmRSS!) <= 120,
    });
    const parts = await breakdown();
    // What "idle" looks like once the server has worked: libvips/glibc keep freed memory.
    const keys = await b.keys();
    const largest = [...b.images].sort((x, y) => y.mp - x.mp)[0]!;
    await send(svc, signedConvert(keys, b.bytesOf(largest), filename(largest)));
    const after = await idleRss(svc.pid);
    const markdown =
      "## Idle memory\n\n" +
      `RSS ${IDLE_SETTLE_MS / 1000} s after the first /health = 200, before any other request: \`bun src/main.ts\` ${MiB(rss.VmRSS!)}` +
      (b.idleBinary ? `, compiled binary ${MiB(b.idleBinary.VmRSS!)}` : "") +
      ". (The server process alone: under `npm start`, npm's own Node process adds ~59 MiB to the process tree, which is where an idle figure of ~150 MiB comes from.) " +
      "Where it goes — processes that load only part of the server, measured the same way:\n\n" +
      parts +
      `\n\nAfter one WebP conversion of ${largest.name} (${fmt(largest.mp, 1)} MP) the same server idles at ${MiB(after.VmRSS ?? NaN)} (anon ${MiB(after.RssAnon ?? NaN)}).`;
    return { figures: [f], markdown, raw: { idleSource: rss, idleAfterOne: after } };
  },
};
