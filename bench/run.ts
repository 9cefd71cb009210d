// `npm run bench` — measures imgpress the way a user feels it and writes bench/RESULTS.md.
// Every figure is a ratio against a reference measured in the same run, side by side: this
// machine is shared and noisy, absolute times drift, ratios hold.
//
//   bun bench/run.ts            full run (~10–15 min on 2 cores), writes bench/RESULTS.md
//   bun bench/run.ts --quick    smoke run (~2 min), writes bench/.work/RESULTS.quick.md
//   --only=a,b                  run only some sections (names in SECTIONS below)
//
// Each section is a file in bench/sections/ returning its figures and markdown; bench/README.md
// says what each figure means, how it is measured, and how to add a section.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Bench } from "./lib/context.ts";
import { loadCorpus } from "./lib/corpus.ts";
import { type Figure, type Section, triedNotes, withTried } from "./lib/figures.ts";
import { corpusMarkdown, KEPT_BLOCKS, machineInfo, resultsMarkdown, summaryTable } from "./lib/results.ts";
import { progress } from "./lib/util.ts";
import { allocator } from "./sections/allocator.ts";
import { auth } from "./sections/auth.ts";
import { avif } from "./sections/avif.ts";
import { idle } from "./sections/idle.ts";
import { memory } from "./sections/memory.ts";
import { overhead } from "./sections/overhead.ts";
import { startup } from "./sections/startup.ts";
import { throughput } from "./sections/throughput.ts";
import { thumbs } from "./sections/thumbs.ts";

/** Every section, in the order they run (idle needs a fresh server; overhead's timings order throughput's jobs). */
const SECTIONS: Section[] = [startup, idle, overhead, throughput, thumbs, memory, auth, avif, allocator];

const WORK = join(import.meta.dir, ".work");

/** The command line: `--quick` and `--only=a,b`. */
function options(): { quick: boolean; only: Set<string> } {
  const { values } = parseArgs({ options: { quick: { type: "boolean" }, only: { type: "string" } } });
  const only = new Set((values.only ?? "").split(",").filter(Boolean));
  const unknown = [...only].filter((n) => !SECTIONS.some((s) => s.name === n));
  if (unknown.length)
    throw new Error(`unknown section(s) ${unknown.join(", ")}; sections: ${SECTIONS.map((s) => s.name).join(", ")}`);
  return { quick: values.quick ?? false, only };
}

/** Runs the chosen sections and writes RESULTS.md (or the quick/partial copy under bench/.work) and results.json. */
async function main(): Promise<void> {
  const { quick, only } = options();
  const chosen = SECTIONS.filter((s) => only.size === 0 || only.has(s.name));
  const out =
    quick || only.size
      ? join(WORK, quick ? "RESULTS.quick.md" : "RESULTS.partial.md")
      : join(import.meta.dir, "RESULTS.md");
  mkdirSync(WORK, { recursive: true });
  progress(`imgpress bench (${quick ? "quick" : "full"}${only.size ? `, only ${[...only].join(",")}` : ""}) → ${out}`);
  progress("corpus…");
  const corpus = await loadCorpus(WORK, quick);
  const bench = await Bench.start(quick, corpus.images, corpus.worst, [corpus.dir, join(WORK, "corpus")]);
  const notes = triedNotes();
  const figures: Figure[] = [];
  const sections: string[] = [];
  const raw: Record<string, unknown> = {};
  let machine: string;
  try {
    const m = await machineInfo(bench.ref, quick);
    machine = m.markdown;
    raw.machine = m.raw;
    for (const section of chosen) {
      const result = await section.run(bench);
      figures.push(...result.figures.map((f) => withTried(f, notes)));
      sections.push(result.markdown);
      Object.assign(raw, result.raw);
    }
  } finally {
    await bench.close();
    rmSync(bench.dataDir, { recursive: true, force: true });
  }
  const historyFile = join(import.meta.dir, "HISTORY.md");
  const history = existsSync(historyFile) ? readFileSync(historyFile, "utf8").trim() : "";
  const previous = existsSync(out) ? readFileSync(out, "utf8") : "";
  const kept = KEPT_BLOCKS.map((block) => block.exec(previous)?.[0]).filter((text) => text !== undefined);
  const results = resultsMarkdown({
    quick,
    figures,
    machine,
    corpus: corpusMarkdown(corpus.images, corpus.worst),
    sections,
    history,
  });
  writeFileSync(out, `${[results.trimEnd(), ...kept].join("\n\n")}\n`);
  writeFileSync(join(WORK, quick ? "results.quick.json" : "results.json"), JSON.stringify({ figures, raw }, null, 1));
  progress(`wrote ${out}`);
  console.log(`\n${summaryTable(figures)}`);
}

await main();
process.exit(0);
