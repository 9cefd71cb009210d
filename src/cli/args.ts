/** A parsed command line: the words before flags and `--name value` / `--name=value` / `--switch` flags. */
export interface ParsedArgs {
  words: string[];
  flags: Record<string, string>;
}

const SWITCHES = new Set(["help", "version", "all", "json", "behind-proxy", "without-key"]);

/** Splits argv (without the executable) into words and flags. */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const words: string[] = [];
  const flags: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "-h") flags.help = "true";
    else if (arg === "-v") flags.version = "true";
    else if (arg.startsWith("--")) {
      const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
      if (inline !== undefined) flags[name] = inline;
      else if (SWITCHES.has(name)) flags[name] = "true";
      else if (i + 1 < argv.length) flags[name] = argv[++i]!;
      else throw new Error(`--${name} needs a value`);
    } else words.push(arg);
  }
  return { words, flags };
}
