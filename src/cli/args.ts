import { parseArgs as parseNodeArgs, type ParseArgsConfig } from "node:util";
import { ConfigSchema, flagName, settings } from "../config.ts";

/** A parsed command line: the words before flags and `--name value` / `--name=value` / `--switch` flags. */
export interface ParsedArgs {
  words: string[];
  flags: Record<string, string>;
}

type Options = NonNullable<ParseArgsConfig["options"]>;

// The CLI's own switches and options, beside one flag per setting (a boolean setting is a switch).
const OWN: Options = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
  all: { type: "boolean" },
  json: { type: "boolean" },
  "without-key": { type: "boolean" },
  email: { type: "string" },
  since: { type: "string" },
  type: { type: "string" },
  secrets: { type: "boolean" },
  from: { type: "string" },
  to: { type: "string" },
};
const OPTIONS: Options = {
  ...Object.fromEntries(settings.map((s) => [flagName(s.env), { type: ConfigSchema.properties[s.key].type === "boolean" ? "boolean" : "string" }])),
  ...OWN,
};

/** Splits argv (without the executable) into words and flags with `node:util` parseArgs. */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  // An unknown `--name` takes the next argument as its value, as a known one does.
  const unknown = argv.filter((a) => a.startsWith("--") && a.length > 2).map((a) => a.slice(2).split("=", 1)[0]!).filter((n) => !(n in OPTIONS));
  const options: Options = { ...OPTIONS, ...Object.fromEntries(unknown.map((n) => [n, { type: "string" as const }])) };
  const { tokens } = parseNodeArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const words: string[] = [];
  const flags: Record<string, string> = {};
  const wordAt = new Set<number>();
  for (const token of tokens) {
    if (token.kind === "positional") words.push(token.value);
    else if (token.kind === "option-terminator") continue;
    else if (!token.rawName.startsWith("--") && argv[token.index] !== token.rawName) {
      // A short group such as `-hx` is not an option of imgpress: it stays a word, as it always was.
      if (!wordAt.has(token.index)) words.push(argv[token.index]!), wordAt.add(token.index);
    } else if (!(token.name in options)) words.push(token.rawName);
    else if (token.value !== undefined) flags[token.name] = token.value;
    else if (options[token.name]!.type === "boolean") flags[token.name] = "true";
    else throw new Error(`--${token.name} needs a value`);
  }
  return { words, flags };
}
