// What a bench section returns, and the "what was tried" notes kept as prose in bench/README.md.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fmt, progress } from "./util.ts";

/** One headline figure: a ratio against a reference of the same run, and its target. */
export interface Figure {
  figure: string;
  measured: string;
  ratio: number;
  /** What the ratio is taken against. */
  against: string;
  target: string;
  met: boolean;
  /** Shown when missed, before the notes of bench/README.md: what this run found. */
  finding?: string;
  /** Shown when missed: what was found and tried (filled in from bench/README.md). */
  tried?: string;
}

/** What one section measured: its figures, its part of RESULTS.md, and its raw numbers for results.json. */
export interface SectionResult {
  figures: Figure[];
  markdown: string;
  raw?: Record<string, unknown>;
}

/** A figure, with a progress line saying whether it met its target. */
export function figure(f: Figure): Figure {
  progress(
    `FIGURE ${f.figure}: ${f.measured} → ratio ${fmt(f.ratio)} (target ${f.target}) ${f.met ? "met" : "MISSED"}`,
  );
  return f;
}

/**
 * The notes under "## Missed targets: what was tried" in bench/README.md, by figure: each
 * `### <figure>` heading and the paragraph(s) under it.
 */
export function triedNotes(
  readme = readFileSync(join(import.meta.dir, "..", "README.md"), "utf8"),
): Record<string, string> {
  const start = readme.indexOf("\n## Missed targets: what was tried");
  if (start < 0) return {};
  const end = readme.indexOf("\n## ", start + 1);
  const part = readme.slice(start, end < 0 ? undefined : end);
  const notes: Record<string, string> = {};
  for (const block of part.split("\n### ").slice(1)) {
    const [heading, ...body] = block.split("\n");
    notes[heading!.trim()] = body
      .join("\n")
      .trim()
      .replace(/\s*\n\s*/g, " ");
  }
  return notes;
}

/** The figure with its `tried` text when it missed its target. */
export function withTried(f: Figure, notes: Record<string, string>): Figure {
  if (f.met) return f;
  const text = [f.finding, f.tried ?? notes[f.figure]].filter(Boolean).join(" ");
  return text ? { ...f, tried: text } : f;
}

/** One part of the bench: `--only=<name>` selects it; `run` measures and returns figures and markdown. */
export interface Section {
  name: string;
  run(bench: import("./context.ts").Bench): Promise<SectionResult>;
}
