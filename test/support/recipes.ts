/**
 * The fenced recipes of a Markdown file: every ```bash, ```sh and ```js block, unless the line
 * directly above its opening fence is exactly `<!-- recipe: skip -->`. Other languages (json, ini,
 * php) and untagged fences show output or formats, not something to run.
 */

/** Fence languages that are run by test/docs/recipes.test.ts. */
export const RECIPE_LANGUAGES = ["bash", "sh", "js"] as const;

/** The opt-out marker, alone on the line directly above a fence. */
export const SKIP_MARKER = "<!-- recipe: skip -->";

/** One fenced block. */
export interface Fence {
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  code: string;
  skipped: boolean;
}

/** Every fenced block of `markdown`, in order. */
export function fences(markdown: string): Fence[] {
  const lines = markdown.split("\n");
  const out: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```([\w-]*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    if (end < 0) throw new Error(`line ${i + 1}: fence never closed`);
    out.push({
      line: i + 1,
      lang: open[1]!,
      code: lines.slice(i + 1, end).join("\n"),
      skipped: lines[i - 1]?.trim() === SKIP_MARKER,
    });
    i = end;
  }
  return out;
}

/** The fences to run. */
export function recipes(markdown: string): Fence[] {
  return fences(markdown).filter((f) => !f.skipped && (RECIPE_LANGUAGES as readonly string[]).includes(f.lang));
}

/** Lines holding the skip marker that is not directly above a fence (a typo would silently run nothing). */
export function strayMarkers(markdown: string): number[] {
  const lines = markdown.split("\n");
  return lines.flatMap((l, i) => (l.trim() === SKIP_MARKER && !/^```/.test(lines[i + 1] ?? "") ? [i + 1] : []));
}
