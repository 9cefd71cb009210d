/**
 * The docs describe the tree as it is: the map of src/ in docs/development.md names every root
 * file and every folder (two levels deep) of src/ and nothing else, and every relative link of the
 * README, the changelog, docs/*.md and the bench's notes reaches an existing file, and an existing
 * heading when it names one.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
const MAP_MARKER = "<!-- src-map -->";
const LINKED_DOCS = [
  "README.md",
  "CHANGELOG.md",
  "bench/README.md",
  "bench/HISTORY.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** Root files of src/ and its folders two levels deep, as the map writes them (`src/api/convert/`). */
function srcEntries(): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, "src"))) {
    if (!statSync(join(ROOT, "src", name)).isDirectory()) {
      out.push(`src/${name}`);
      continue;
    }
    out.push(`src/${name}/`);
    for (const sub of readdirSync(join(ROOT, "src", name))) {
      if (statSync(join(ROOT, "src", name, sub)).isDirectory()) out.push(`src/${name}/${sub}/`);
    }
  }
  return out.sort();
}

/** The first word of each line of the fenced block after the map marker. */
function mapEntries(): string[] {
  const doc = readFileSync(join(ROOT, "docs/development.md"), "utf8");
  const at = doc.indexOf(MAP_MARKER);
  if (at < 0) throw new Error(`docs/development.md has no ${MAP_MARKER}`);
  const block = /```\n([\s\S]*?)\n```/.exec(doc.slice(at));
  if (!block) throw new Error("no fenced block after the map marker");
  return block[1]!
    .split("\n")
    .map((line) => line.split(/\s+/)[0]!)
    .filter(Boolean)
    .sort();
}

/** The lines of a Markdown file outside fenced blocks (a heading or link inside one is an example). */
function prose(markdown: string): string[] {
  let fenced = false;
  return markdown.split("\n").filter((line) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    return !fenced && !/^\s*```/.test(line);
  });
}

/** GitHub's anchor for a heading: link text kept, lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor a Markdown file has: its headings', numbered as GitHub numbers repeats (`-1`, `-2`), and explicit ones. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(markdown)) {
    // An explicit anchor (`<a id="signing"></a>`) keeps old links working when a heading is reworded.
    for (const m of line.matchAll(/<a id="([^"]+)"><\/a>/g)) out.add(m[1]!);
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Relative links (and images) of a Markdown file: target path and anchor, with the line they are on. */
function links(markdown: string): { target: string; line: string }[] {
  const out: { target: string; line: string }[] = [];
  for (const line of prose(markdown)) {
    // Inline code shows syntax, not links.
    const text = line.replace(/`[^`]*`/g, "");
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (!/^[a-z][a-z0-9+.-]*:/i.test(m[1]!)) out.push({ target: m[1]!, line });
    }
  }
  return out;
}

describe("the map of src/ in docs/development.md", () => {
  test("names every root file and folder of src/ (two levels deep)", () => {
    const mapped = new Set(mapEntries());
    expect(srcEntries().filter((e) => !mapped.has(e))).toEqual([]);
  });

  test("names nothing that does not exist", () => {
    const actual = new Set(srcEntries());
    expect(mapEntries().filter((e) => !actual.has(e))).toEqual([]);
  });
});

test("docs/README.md, the index, links every doc of docs/", () => {
  const index = readFileSync(join(ROOT, "docs/README.md"), "utf8");
  const listed = new Set(links(index).map(({ target }) => target.split("#")[0]));
  const docs = LINKED_DOCS.filter((d) => d.startsWith("docs/") && d !== "docs/README.md").map((d) => d.slice(5));
  expect(docs.filter((d) => !listed.has(d))).toEqual([]);
});

describe("relative links of the docs", () => {
  test.each(LINKED_DOCS)("%s: every link reaches a file, and its heading when it names one", (doc) => {
    const broken: string[] = [];
    for (const { target, line } of links(readFileSync(join(ROOT, doc), "utf8"))) {
      const [path, anchor] = target.split("#") as [string, string | undefined];
      const file = path === "" ? join(ROOT, doc) : join(ROOT, dirname(doc), decodeURIComponent(path));
      if (!existsSync(file)) {
        broken.push(`${target} (no such file): ${line.trim()}`);
        continue;
      }
      if (anchor && !anchors(readFileSync(file, "utf8")).has(anchor))
        broken.push(`${target} (no such heading): ${line.trim()}`);
    }
    expect(broken).toEqual([]);
  });

  test("the anchors are GitHub's", () => {
    expect(slug("`IMGPRESS_HOST`")).toBe("imgpress_host");
    expect(slug("1. The network door: `IMGPRESS_INTERNAL_ALLOW`")).toBe("1-the-network-door-imgpress_internal_allow");
    expect(slug("Durability: what a crash can lose")).toBe("durability-what-a-crash-can-lose");
    expect([...anchors("## A\n```\n## B\n```\n## A\n")]).toEqual(["a", "a-1"]);
  });
});
