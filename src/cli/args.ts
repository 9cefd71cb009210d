import { type ParseArgsConfig, parseArgs as parseNodeArgs } from "node:util";
import { ConfigSchema, flagName, settings } from "../core/config.ts";
import { findCommand } from "./usage.ts";

/** A parsed command line: the words before flags and `--name value` / `--name=value` / `--switch` flags. */
export interface ParsedArgs {
  words: string[];
  flags: Record<string, string>;
}

/** A command line imgpress cannot read (unknown option, missing value, stray word): exit status 2. */
export class UsageError extends Error {}

type Options = NonNullable<ParseArgsConfig["options"]>;

// The CLI's own switches and options, beside one flag per setting (a boolean setting is a switch).
const OWN: Options = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
  all: { type: "boolean" },
  json: { type: "boolean" },
  "without-key": { type: "boolean" },
  secrets: { type: "boolean" },
  email: { type: "string" },
  site: { type: "string" },
  since: { type: "string" },
  type: { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
  url: { type: "string" },
};
const OPTIONS: Options = {
  ...Object.fromEntries(
    settings.map((s) => [
      flagName(s.env),
      { type: ConfigSchema.properties[s.key].type === "boolean" ? "boolean" : "string" },
    ]),
  ),
  ...OWN,
};

// The words one of the CLI's switches may be given as (`--all=yes`), as the boolean settings accept them.
const SWITCH_VALUES: Record<string, string> = {
  true: "true",
  "1": "true",
  yes: "true",
  on: "true",
  false: "false",
  "0": "false",
  no: "false",
  off: "false",
};

/**
 * Splits argv (without the executable) into words and flags with `node:util` parseArgs. Throws
 * UsageError for an unknown `--option` (a typo must not be read as another option's value, or
 * pass unnoticed), an option without its value, or a switch given a value it cannot mean.
 */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const { tokens } = parseNodeArgs({
    args: [...argv],
    options: OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const words: string[] = [];
  const flags: Record<string, string> = {};
  const wordAt = new Set<number>();
  for (const token of tokens) {
    if (token.kind === "positional") words.push(token.value);
    else if (token.kind === "option-terminator") continue;
    else if (!token.rawName.startsWith("--") && argv[token.index] !== token.rawName) {
      // A short group such as `-hx` is not an option of imgpress: it stays a word (and the command refuses it).
      if (!wordAt.has(token.index)) words.push(argv[token.index]!), wordAt.add(token.index);
    } else if (!(token.name in OPTIONS)) {
      if (token.rawName.startsWith("--")) throw new UsageError(`unknown option ${token.rawName}`);
      words.push(token.rawName);
    } else if (OPTIONS[token.name]!.type === "boolean" && !(token.name in OWN)) {
      // A boolean setting: the config reads the value and names the setting when it is not one.
      flags[token.name] = token.value ?? "true";
    } else if (OPTIONS[token.name]!.type === "boolean") {
      const value = token.value === undefined ? "true" : SWITCH_VALUES[token.value.trim().toLowerCase()];
      if (value === undefined)
        throw new UsageError(`--${token.name} is a switch: give it alone, or as --${token.name}=true or =false`);
      flags[token.name] = value;
    } else if (token.value !== undefined && token.value.trim() !== "") flags[token.name] = token.value;
    else throw new UsageError(`--${token.name} needs a value`);
  }
  return { words, flags };
}

/**
 * Throws UsageError when a known command gets a word too many (`keys revoke A B` would revoke A
 * alone) or a CLI option it does not read (`backup --all`). Unknown commands and sub-commands
 * are left to their own usage lines.
 */
export function checkUsage({ words, flags }: ParsedArgs): void {
  const usage = findCommand(words.length === 0 ? ["serve"] : words);
  if (!usage) return;
  const name = usage.name;
  const rest = words.slice(name.split(" ").length);
  if (rest.length > usage.words[1])
    throw new UsageError(
      `unexpected ${rest.length - usage.words[1] === 1 ? "argument" : "arguments"} after "imgpress ${name}": ${rest.slice(usage.words[1]).join(" ")}`,
    );
  const own = Object.keys(flags).filter(
    (f) => f in OWN && f !== "help" && f !== "version" && !usage.options.includes(f),
  );
  if (own.length > 0) throw new UsageError(`"imgpress ${name}" does not take ${own.map((f) => `--${f}`).join(", ")}`);
}
