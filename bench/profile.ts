// `bun bench/profile.ts` — where the server's JS thread spends its time on a 300 px thumbnail
// (issue 14's fixed cost): a CPU profile (`bun --cpu-prof`) of a fresh server per client kind under
// sequential uploads, split into the request's parts (bench/lib/cpu-profile.ts), per request.
// The conversion's pixel work runs on libvips' threads and is not in the profile.
//
//   bun bench/profile.ts                     this tree, 400 requests per client kind (~1–2 min)
//   bun bench/profile.ts --before=/other/checkout/src/main.ts   another tree side by side ("before → after")
//   --requests=N (400)  --interval=µs (250)  --write (replace its section of bench/RESULTS.md)
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startSmtpSink } from "../test/support/smtp.ts";
import { smallImages } from "./lib/corpus.ts";
import { cpuByPart, PARTS } from "./lib/cpu-profile.ts";
import { PROFILE_BLOCK, writeSection } from "./lib/results.ts";
import { obtainKeys, startService, tempDir } from "./lib/service.ts";
import { CLIENT_KINDS, type ClientKind, kindLabel, post, prepare } from "./lib/thumb-client.ts";
import { loadThumbs } from "./lib/thumbs.ts";
import { fmt, median, progress, table } from "./lib/util.ts";

const { values: opt } = parseArgs({
  options: {
    requests: { type: "string", default: "400" },
    interval: { type: "string", default: "250" },
    before: { type: "string" },
    write: { type: "boolean", default: false },
  },
});
const REQUESTS = Number(opt.requests);
const INTERVAL_US = Number(opt.interval);
/** Requests before the measured ones: first-call compilation and caches. */
const WARM_UP = 20;

const sink = await startSmtpSink();
const thumbs = await loadThumbs(await smallImages(), join(import.meta.dir, ".work"));
const thumb = { ...thumbs.find((t) => t.width === 300 && t.path.endsWith(".jpg"))!, format: "webp" as const };
const bytes = new Uint8Array(await Bun.file(thumb.path).arrayBuffer());

interface Measured {
  parts: Record<string, number>;
  total: number;
  p50: number;
}

/** A fresh server of `entry` under the profiler, `REQUESTS` sequential uploads of `kind`, its profile split into parts. */
async function profiled(entry: string | undefined, kind: ClientKind): Promise<Measured> {
  const dir = tempDir("profile");
  const svc = await startService({
    kind: "source",
    entry,
    dataDir: join(dir, "data"),
    sink,
    env: { BUN_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-interval=${INTERVAL_US}` },
  });
  const target = { base: svc.base, ca: svc.ca, keys: await obtainKeys(svc) };
  const ms: number[] = [];
  for (let i = 0; i < WARM_UP + REQUESTS; i++) {
    const took = await post(target, kind.keepAlive, "/v1/plugin/convert", {
      method: "POST",
      ...prepare(target, kind, thumb, bytes),
    });
    if (i >= WARM_UP) ms.push(took);
  }
  // The profile is written when the process exits.
  await svc.stop();
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
  if (!file) throw new Error(`no .cpuprofile in ${dir}: does this Bun support --cpu-prof?`);
  const split = cpuByPart(join(dir, file), INTERVAL_US, WARM_UP + REQUESTS, /src\/convert\/service\.ts/);
  rmSync(dir, { recursive: true, force: true });
  return { ...split, p50: median(ms) };
}

const trees: [string, string | undefined][] = opt.before
  ? [
      ["before", opt.before],
      ["after", undefined],
    ]
  : [["this tree", undefined]];
const results = new Map<string, Measured>();
for (const kind of CLIENT_KINDS) {
  for (const [label, entry] of trees) {
    progress(`profile: ${label}, ${kindLabel(kind)}, ${REQUESTS} requests…`);
    const m = await profiled(entry, kind);
    results.set(`${label}|${kindLabel(kind)}`, m);
    progress(
      `profile: ${label}, ${kindLabel(kind)}: JS thread ${fmt(m.total, 3)} ms per request, p50 ${fmt(m.p50, 2)} ms`,
    );
  }
}
await sink.close();

const cell = (kind: ClientKind, pick: (m: Measured) => number, digits = 3) =>
  trees.map(([label]) => fmt(pick(results.get(`${label}|${kindLabel(kind)}`)!), digits)).join(" → ");
const markdown =
  "<!-- profile bench:start (written by bench/profile.ts --write) -->\n" +
  "## CPU profile of a 300 px request\n\n" +
  `\`bun bench/profile.ts${opt.before ? " --before=…" : ""}\` (${new Date().toISOString().slice(0, 16)} UTC): a fresh server per client kind started with \`bun --cpu-prof\` (sampling every ${INTERVAL_US} µs), ` +
  `${WARM_UP} + ${REQUESTS} sequential uploads of ${thumb.name} (${thumb.bytes} bytes) → WebP lossy; the JS thread's samples from the first request to the last, split by the frames on their stack, per request. ` +
  "Bun samples the JS thread only while it runs, so these are CPU milliseconds of that thread; the pixels are processed on libvips' threads, outside the profile, and so is most of Bun's native HTTP and TLS work (the TLS handshake of a new connection hardly shows: the thumbs section's CPU table from /proc has it). " +
  "The pipeline's JS runs in the in-process reference too; the rows above it in the table below are what the service adds on its JS thread." +
  (opt.before ? ` Cells read "before → after": before is ${opt.before}, run in the same session.` : "") +
  "\n\n" +
  table(
    ["part (JS thread, ms per request)", ...CLIENT_KINDS.map(kindLabel)],
    [
      ...PARTS.map((p) => [p.name, ...CLIENT_KINDS.map((k) => cell(k, (m) => m.parts[p.name]!))]),
      ["**all of the JS thread**", ...CLIENT_KINDS.map((k) => `**${cell(k, (m) => m.total)}**`)],
      ["p50 request start → last byte (client)", ...CLIENT_KINDS.map((k) => `${cell(k, (m) => m.p50, 2)} ms`)],
    ],
  ) +
  "\n<!-- profile bench:end -->";
console.log(markdown);
if (opt.write) progress(`wrote its section of ${writeSection(PROFILE_BLOCK, markdown)}`);
process.exit(0);
