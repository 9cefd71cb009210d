// RESULTS.md: the summary of every figure, the machine, the corpus, then each section's markdown.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release, totalmem } from "node:os";
import { join } from "node:path";
import type { Image } from "./corpus.ts";
import type { Figure } from "./figures.ts";
import type { Reference } from "./reference.ts";
import { ROOT } from "./service.ts";
import { fmt, sum, table } from "./util.ts";

/** The machine table (CPU, OS, versions, load) and its raw values. */
export async function machineInfo(
  ref: Reference,
  quick: boolean,
): Promise<{ markdown: string; raw: Record<string, unknown> }> {
  const info = await ref.call<{ concurrency: number; versions: Record<string, string>; bun: string }>({ op: "info" });
  const ipxVersion = JSON.parse(readFileSync(join(ROOT, "node_modules", "ipx", "package.json"), "utf8")).version;
  const node = Bun.spawnSync(["node", "--version"]).stdout.toString().trim();
  const distro =
    /PRETTY_NAME="([^"]+)"/.exec(existsSync("/etc/os-release") ? readFileSync("/etc/os-release", "utf8") : "")?.[1] ??
    "unknown";
  const raw = {
    cpu: cpus()[0]?.model,
    cores: cpus().length,
    memory: totalmem(),
    kernel: release(),
    distro,
    bun: Bun.version,
    sharp: info.versions.sharp,
    vips: info.versions.vips,
    concurrency: info.concurrency,
  };
  const markdown = table(
    ["", ""],
    [
      ["CPU", `${cpus()[0]?.model ?? "unknown"} × ${cpus().length} cores`],
      ["memory", `${fmt(totalmem() / 2 ** 30, 1)} GiB`],
      ["OS", `${distro}, Linux ${release()}`],
      ["Bun", `${Bun.version} (${Bun.revision.slice(0, 9)})`],
      [
        "sharp / libvips",
        `${info.versions.sharp} / ${info.versions.vips} (aom ${info.versions.aom}, libwebp ${info.versions.webp})`,
      ],
      [
        "libvips threads per conversion",
        `${info.concurrency} (sharp's default for this environment; MALLOC_ARENA_MAX ${process.env.MALLOC_ARENA_MAX ? "set" : "unset"})`,
      ],
      ["peer", `ipx ${ipxVersion} under Node ${node}, same sharp package`],
      [
        "load average at start",
        loadavg()
          .map((x) => fmt(x))
          .join(" / "),
      ],
      ["date", new Date().toISOString()],
      ["mode", quick ? "--quick (smoke run: too short for conclusions)" : "full"],
    ],
  );
  return { markdown, raw };
}

/** The corpus paragraph and table. */
export function corpusMarkdown(images: Image[], worst: Image[]): string {
  const all = [...images, ...worst];
  return [
    `Fixed subset of Debian's \`mate-backgrounds\` and \`lomiri-wallpapers\` (${images.length} files, ${fmt(sum(images.map((i) => i.mp)), 1)} MP, mean ${fmt(
      sum(images.map((i) => i.mp)) / images.length,
      1,
    )} MP; ${images.filter((i) => i.format === "png").length} PNGs, ${images.filter((i) => i.alpha === "real").length} with real transparency) plus two generated 20 MB worst cases. ` +
      "The wallpapers do include real alpha (mate/abstract PNGs reach alpha 0), so no RGBA file had to be derived for that; the PNG worst case is RGBA anyway. " +
      "Paths are under /usr/share/backgrounds; the worst cases are generated deterministically into bench/.work/corpus/worst.",
    "",
    table(
      ["file", "package", "class", "format", "size", "MP", "bytes", "alpha", "note"],
      all.map((i) => [
        i.rel,
        i.pkg,
        i.size,
        i.format,
        `${i.width}×${i.height}`,
        fmt(i.mp, 1),
        i.bytes,
        i.alpha,
        i.note,
      ]),
    ),
  ].join("\n");
}

/** The "Dashboard" section that bench/dashboard.ts writes into RESULTS.md (it needs a browser and data of its own, so `npm run bench` keeps it as it is). */
export const DASHBOARD_BLOCK = /<!-- dashboard bench: start[^>]*-->[\s\S]*?<!-- dashboard bench: end -->/;

/** The "Quality guard" section that bench/quality-guard.ts writes into RESULTS.md (kept by `npm run bench` for the same reason). */
export const QUALITY_GUARD_BLOCK = /<!-- quality-guard:start[^>]*-->[\s\S]*?<!-- quality-guard:end -->/;

/** The "PostgreSQL vs the embedded file" section that bench/postgres.ts writes (it starts its own PostgreSQL cluster). */
export const POSTGRES_BLOCK = /<!-- postgres bench:start[^>]*-->[\s\S]*?<!-- postgres bench:end -->/;

/** The "CPU profile of a 300 px request" section that bench/profile.ts writes (a profiled server per client kind). */
export const PROFILE_BLOCK = /<!-- profile bench:start[^>]*-->[\s\S]*?<!-- profile bench:end -->/;

/** The "A locked database" section that bench/lock.ts writes (a server while the sqlite3 CLI holds the file's lock). */
export const LOCK_BLOCK = /<!-- lock bench:start[^>]*-->[\s\S]*?<!-- lock bench:end -->/;
/** The "Slow uploads" section that bench/slow-uploads.ts writes (its own servers under attack). */
export const SLOW_UPLOADS_BLOCK = /<!-- slow uploads bench:start[^>]*-->[\s\S]*?<!-- slow uploads bench:end -->/;
/** The "WordPress plugin bulk run" section that bench/wordpress.ts writes (it starts its own WordPress). */
export const WORDPRESS_BLOCK = /<!-- wordpress bench:start[^>]*-->[\s\S]*?<!-- wordpress bench:end -->/;

/** Replaces the `block` section of bench/RESULTS.md with `markdown` (which carries its own markers), or appends it; returns the file's path. */
export function writeSection(block: RegExp, markdown: string): string {
  const file = join(ROOT, "bench", "RESULTS.md");
  const text = existsSync(file) ? readFileSync(file, "utf8") : "";
  // A replacer function: the markdown may hold `$1`-like text (SQL placeholders) that a replacement string would expand.
  writeFileSync(file, block.test(text) ? text.replace(block, () => markdown) : `${text.trimEnd()}\n\n${markdown}\n`);
  return file;
}

/** The sections of RESULTS.md that standalone scripts write and `npm run bench` carries over unchanged, in this order. */
export const KEPT_BLOCKS = [
  QUALITY_GUARD_BLOCK,
  PROFILE_BLOCK,
  DASHBOARD_BLOCK,
  POSTGRES_BLOCK,
  LOCK_BLOCK,
  SLOW_UPLOADS_BLOCK,
  WORDPRESS_BLOCK,
];

/** The whole of RESULTS.md. */
export function resultsMarkdown(o: {
  quick: boolean;
  figures: Figure[];
  machine: string;
  corpus: string;
  sections: string[];
  history: string;
}): string {
  const summary = summaryTable(o.figures);
  const missed = o.figures.filter((f) => !f.met);
  return [
    "# imgpress benchmark results",
    "",
    `Written by \`npm run bench\`${o.quick ? " --quick" : ""} (bench/run.ts). Every figure is a ratio against a reference measured in the same run, side by side; ` +
      "absolute times on this shared machine drift between runs, the ratios hold better. How each figure is measured: bench/README.md.",
    "",
    "## Summary",
    "",
    summary,
    "",
    missed.length
      ? `### Missed targets: what was found and tried\n\n${missedNotes(missed).join("\n")}`
      : "All targets met.",
    "",
    "## Machine",
    "",
    o.machine,
    `| load average at end | ${loadavg()
      .map((x) => fmt(x))
      .join(" / ")} |`,
    "",
    "## Corpus",
    "",
    o.corpus,
    "",
    ...o.sections.flatMap((s) => [s, ""]),
    ...(o.history ? [o.history, ""] : []),
  ].join("\n");
}

/** The summary table of every figure. */
export function summaryTable(figures: Figure[]): string {
  return table(
    ["figure", "measured", "ratio", "against", "target", "result"],
    figures.map((f) => [
      f.figure,
      f.measured,
      fmt(f.ratio, f.figure === "auth cost" ? 4 : 3),
      f.against,
      f.target,
      f.met ? "met" : "**missed**",
    ]),
  );
}

/** Shortest shared ending (in characters) that is quoted once rather than under every figure that ends with it. */
const SHARED_NOTE_MIN = 200;

/**
 * One bullet per missed figure with what was found and tried. Figures that share a note (the four
 * thumbnail client kinds) print their own findings and then refer to the first figure that printed
 * the shared part, instead of repeating several hundred words four times.
 */
export function missedNotes(missed: readonly Figure[]): string[] {
  const printed: Figure[] = [];
  return missed.map((f) => {
    const text = f.tried ?? "see the section below.";
    for (const earlier of printed) {
      const shared = sharedSentences(text, earlier.tried ?? "");
      if (shared >= SHARED_NOTE_MIN) {
        const own = text.slice(0, text.length - shared).trim();
        return `- **${f.figure}**: ${own ? `${own} ` : ""}The rest as for **${earlier.figure}**.`;
      }
    }
    printed.push(f);
    return `- **${f.figure}**: ${text}`;
  });
}

/** Length of the longest common ending of `a` and `b` that starts at a sentence start in `a`. */
function sharedSentences(a: string, b: string): number {
  let n = 0;
  while (n < a.length && n < b.length && a[a.length - 1 - n] === b[b.length - 1 - n]) n++;
  // Move the start forward to the first sentence that lies wholly inside the common ending.
  const start = a.length - n;
  if (start === 0 || (start >= 2 && a.slice(start - 2, start) === ". ")) return n;
  const next = a.indexOf(". ", start);
  return next < 0 ? 0 : a.length - (next + 2);
}
