// Generates clients/wordpress/imgpress/languages/imgpress.pot from the plugin's PHP: every call of
// WordPress's translation functions with the text domain 'imgpress' and literal strings, with the
// `translators:` comment before it and each place it is used. `--check` exits 1 when the file
// differs (test/wordpress/pot.test.ts runs the same check).
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

const ROOT = join(import.meta.dir, "..");
const PLUGIN = join(ROOT, "clients/wordpress/imgpress");
export const POT_FILE = join(PLUGIN, "languages/imgpress.pot");

/** Which arguments of each function are the message, the plural, the context and the text domain (0-based). */
const FUNCTIONS: Record<string, { msgid: number; plural?: number; context?: number; domain: number }> = {
  __: { msgid: 0, domain: 1 },
  _e: { msgid: 0, domain: 1 },
  esc_html__: { msgid: 0, domain: 1 },
  esc_html_e: { msgid: 0, domain: 1 },
  esc_attr__: { msgid: 0, domain: 1 },
  esc_attr_e: { msgid: 0, domain: 1 },
  _x: { msgid: 0, context: 1, domain: 2 },
  _ex: { msgid: 0, context: 1, domain: 2 },
  esc_html_x: { msgid: 0, context: 1, domain: 2 },
  esc_attr_x: { msgid: 0, context: 1, domain: 2 },
  _n: { msgid: 0, plural: 1, domain: 3 },
  _nx: { msgid: 0, plural: 1, context: 3, domain: 4 },
  _n_noop: { msgid: 0, plural: 1, domain: 2 },
  _nx_noop: { msgid: 0, plural: 1, context: 2, domain: 3 },
};

interface Entry {
  msgid: string;
  plural?: string;
  context?: string;
  refs: string[];
  comments: string[];
}

function phpFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return phpFiles(path);
      return name.endsWith(".php") ? [path] : [];
    });
}

/** Reads one PHP string literal at `i` (single or double quoted); returns its value and the index after it. */
function literal(src: string, i: number): { value: string; end: number } | null {
  const quote = src[i];
  if (quote !== "'" && quote !== '"') return null;
  let value = "";
  let j = i + 1;
  while (j < src.length && src[j] !== quote) {
    if (src[j] === "\\") {
      const next = src[j + 1]!;
      if (quote === "'") value += next === "'" || next === "\\" ? next : `\\${next}`;
      else
        value +=
          ({ n: "\n", t: "\t", r: "\r", "\\": "\\", '"': '"', $: "$" } as Record<string, string>)[next] ?? `\\${next}`;
      j += 2;
      continue;
    }
    if (quote === '"' && src[j] === "$") return null; // interpolation: not a literal
    value += src[j];
    j++;
  }
  return { value, end: j + 1 };
}

/** The call's arguments as literals (null where an argument is not one literal). */
function callArguments(src: string, open: number): (string | null)[] {
  const args: (string | null)[] = [];
  let i = open + 1;
  let depth = 0;
  let current: string | null = null;
  let pure = true;
  const skip = () => {
    while (/\s/.test(src[i] ?? "")) i++;
  };
  for (;;) {
    skip();
    const ch = src[i];
    if (ch === undefined) break;
    if (depth === 0 && (ch === "'" || ch === '"')) {
      const lit = literal(src, i);
      if (lit && current === null && pure) {
        current = lit.value;
        i = lit.end;
        continue;
      }
      pure = false;
      i = lit ? lit.end : i + 1;
      continue;
    }
    if (ch === "(" || ch === "[") depth++;
    if ((ch === ")" || ch === "]") && depth > 0) {
      depth--;
      i++;
      continue;
    }
    if (depth === 0 && (ch === "," || ch === ")")) {
      args.push(pure ? current : null);
      current = null;
      pure = true;
      i++;
      if (ch === ")") break;
      continue;
    }
    pure = false;
    i++;
  }
  return args;
}

/** Every translatable string of the plugin, in the order first met. */
export function extract(): Entry[] {
  const entries = new Map<string, Entry>();
  const names = Object.keys(FUNCTIONS)
    .sort((a, b) => b.length - a.length)
    .join("|");
  const call = new RegExp(`(?<![\\w>$:])(${names})\\s*\\(`, "g");
  for (const file of phpFiles(PLUGIN)) {
    const src = readFileSync(file, "utf8");
    const rel = relative(join(PLUGIN, ".."), file);
    for (const m of src.matchAll(call)) {
      const spec = FUNCTIONS[m[1]!]!;
      const args = callArguments(src, m.index! + m[0].length - 1);
      const msgid = args[spec.msgid];
      if (typeof msgid !== "string" || args[spec.domain] !== "imgpress") continue;
      const line = src.slice(0, m.index!).split("\n").length;
      const before = src.slice(Math.max(0, m.index! - 400), m.index!);
      const comment = /\/\*\s*(translators:[^*]*?)\s*\*\/[^;{}'"]*$/s.exec(before)?.[1]?.replace(/\s+/g, " ");
      const context = spec.context !== undefined ? (args[spec.context] ?? undefined) : undefined;
      const plural = spec.plural !== undefined ? (args[spec.plural] ?? undefined) : undefined;
      const key = `${context ?? ""}\u0004${msgid}`;
      const entry = entries.get(key) ?? { msgid, plural, context, refs: [], comments: [] };
      entry.refs.push(`${rel}:${line}`);
      if (comment && !entry.comments.includes(comment)) entry.comments.push(comment);
      entries.set(key, entry);
    }
  }
  return [...entries.values()];
}

function quote(text: string): string {
  const escaped = text.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\t/g, "\\t").replace(/\r/g, "\\r");
  const lines = escaped.split("\n");
  if (lines.length === 1) return `"${escaped}"`;
  return ['""', ...lines.map((l, i) => `"${l}${i < lines.length - 1 ? "\\n" : ""}"`).filter((l) => l !== '""')].join(
    "\n",
  );
}

/** The .pot text (no creation date, so it only changes when the strings do). */
export function render(): string {
  const header = [
    "# Copyright (C) imgpress contributors",
    "# This file is distributed under the same license as the imgpress plugin (MIT).",
    "# Generated by scripts/wordpress-pot.ts from the plugin's sources: do not edit by hand.",
    'msgid ""',
    'msgstr ""',
    '"Project-Id-Version: imgpress\\n"',
    '"MIME-Version: 1.0\\n"',
    '"Content-Type: text/plain; charset=UTF-8\\n"',
    '"Content-Transfer-Encoding: 8bit\\n"',
    '"X-Domain: imgpress\\n"',
    '"Plural-Forms: nplurals=INTEGER; plural=EXPRESSION;\\n"',
    "",
  ];
  const body = extract().map((e) => {
    const out = [...e.comments.map((c) => `#. ${c}`), `#: ${e.refs.join(" ")}`];
    if (/%(\d+\$)?[sdf]/.test(e.msgid)) out.push("#, php-format");
    if (e.context !== undefined) out.push(`msgctxt ${quote(e.context)}`);
    out.push(`msgid ${quote(e.msgid)}`);
    if (e.plural !== undefined) out.push(`msgid_plural ${quote(e.plural)}`, 'msgstr[0] ""', 'msgstr[1] ""');
    else out.push('msgstr ""');
    return `${out.join("\n")}\n`;
  });
  return `${header.join("\n")}\n${body.join("\n")}`;
}

/** Whether the committed .pot is what the sources generate. */
export function potIsCurrent(): boolean {
  try {
    return readFileSync(POT_FILE, "utf8") === render();
  } catch {
    return false;
  }
}

if (import.meta.main) {
  if (process.argv.includes("--check")) {
    if (!potIsCurrent()) {
      console.error(`${relative(ROOT, POT_FILE)} is stale: run \`bun scripts/wordpress-pot.ts\``);
      process.exit(1);
    }
    console.log("pot: up to date");
  } else {
    writeFileSync(POT_FILE, render());
    console.log(`pot: ${extract().length} strings → ${relative(ROOT, POT_FILE)}`);
  }
}
