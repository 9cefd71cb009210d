// deploy/imgpress.env.example, generated from the settings table (src/core/config.ts): every setting,
// commented out, with its help and its default. The .deb installs it as /etc/imgpress/imgpress.env,
// the release ships it beside compose.yaml; test/ops/release.test.ts fails when the committed copy drifts.
//
//   bun scripts/release/env-example.ts            # prints it
//   bun scripts/release/env-example.ts --write    # rewrites deploy/imgpress.env.example
import { join } from "node:path";
import { settings } from "../../src/core/config.ts";

/** The committed file, relative to the project root. */
export const ENV_EXAMPLE = "deploy/imgpress.env.example";

// Defaults that depend on the machine or the folder imgpress starts in: said in words, not computed
// here (the rest are computed from the table, or said by the setting's own help).
const DESCRIBED: Record<string, string> = {
  IMGPRESS_DATA_DIR:
    "./imgpress-data in the folder imgpress starts in; the package's service uses /var/lib/imgpress (the only folder its sandbox lets it write: leave it), the image /data",
  IMGPRESS_DATABASE_URL: "file:<data dir>/imgpress.db",
  IMGPRESS_MAIL_FROM: "imgpress@<this machine's host name>",
};

const WIDTH = 100;

/** Words of `text` as `# ` lines of at most WIDTH characters. */
function comment(text: string): string[] {
  const lines: string[] = [];
  let line = "#";
  for (const word of text.split(/\s+/)) {
    if (line.length > 1 && line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = "#";
    }
    line += ` ${word}`;
  }
  return [...lines, line];
}

/** A default as an env file writes it: lists comma-separated, switches true/false. */
function written(value: unknown): string {
  return Array.isArray(value) ? value.join(",") : String(value);
}

/** The text of the example file. */
export function envExample(): string {
  const out = [
    "# imgpress settings: one KEY=value line each, read as a systemd EnvironmentFile (the .deb's",
    "# /etc/imgpress/imgpress.env) and as a compose env_file (imgpress.env beside compose.yaml).",
    "# Every setting is listed, commented out, with its default: uncomment a line and change it.",
    "# Write values without quotes. Secrets belong here (the password in IMGPRESS_SMTP_URL,",
    "# IMGPRESS_MASTER_KEY): keep the file readable by root and imgpress only.",
    "# Generated from src/core/config.ts (bun scripts/release/env-example.ts); `imgpress --help` lists the same.",
  ];
  const computed: Record<string, unknown> = {};
  for (const s of settings) {
    // Each fallback may read the ones before it, as loadConfig does.
    const value = s.fallback && !DESCRIBED[s.env] ? s.fallback(computed) : undefined;
    computed[s.key] = value;
    out.push("", ...comment(`${s.env}: ${s.help}`));
    if (DESCRIBED[s.env]) out.push(...comment(`default: ${DESCRIBED[s.env]}`));
    // A default the help says in words (CPU count, memory) or no default at all: the bare name.
    const saysDefault = /\(default/.test(s.help);
    out.push(`#${s.env}=${value === undefined || saysDefault ? "" : written(value)}`);
  }
  out.push(
    "",
    ...comment(
      "IMGPRESS_CACHE_DIR: where the executable unpacks its native libraries at start (it must allow running programs: not a noexec mount). The package's service sets /var/cache/imgpress, the image /cache.",
    ),
    "#IMGPRESS_CACHE_DIR=",
  );
  return `${out.join("\n")}\n`;
}

if (import.meta.main) {
  if (process.argv.includes("--write")) await Bun.write(join(import.meta.dir, "..", "..", ENV_EXAMPLE), envExample());
  else process.stdout.write(envExample());
}
