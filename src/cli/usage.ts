import { flagName, settings } from "../core/config.ts";
import { version } from "../core/version.ts";

/** One command of `imgpress`: how it is written, what it does, and what it accepts (checked by args.ts). */
export interface Command {
  /** The command's words: "backup", "keys create". */
  name: string;
  /** What follows the name in its usage line: "[FILE|FOLDER/] [--without-key] [--json]". */
  synopsis: string;
  /** One or two lines for the overview of `imgpress --help`. */
  summary: string;
  /** The rest of its own help (`imgpress help NAME`, `imgpress NAME --help`): what it does and what each option means. */
  details: string;
  /** Words after the name: at least, at most. */
  words: [number, number];
  /** The CLI's own options it reads (every command also takes the settings' flags). */
  options: string[];
}

/** Every command, in the order `imgpress --help` lists them. */
export const COMMANDS: readonly Command[] = [
  {
    name: "serve",
    synopsis: "[options]",
    summary: "start the HTTPS service (default)",
    words: [0, 0],
    options: [],
    details: "Starts the service; the options below (or their environment variables) configure it.",
  },
  {
    name: "migrate",
    synopsis: "[options]",
    summary: "apply database migrations and exit",
    words: [0, 0],
    options: [],
    details:
      "Creates the database if needed and applies the migrations this version brings; the server does the same at start.",
  },
  {
    name: "health",
    synopsis: "[--url URL] [--json]",
    summary: "exit 0 if a running instance is ready (GET /health/ready), else 1",
    words: [0, 0],
    options: ["url", "json"],
    details:
      "Asks a running instance whether it is ready, for container health checks. Ready: the answer on stdout, exit 0. Not ready or unreachable: the reason on stderr, exit 1.\n" +
      "  --url URL   the instance's /health/ready (default: this host on IMGPRESS_PORT; http:// for one behind a proxy)\n" +
      "  --json      one object on stdout whatever the outcome: {url, ready, status, body} or {url, ready: false, error}",
  },
  {
    name: "keys list",
    synopsis: "[--all] [--email ADDRESS] [--json]",
    summary: "list active keys (--all: revoked too)",
    words: [0, 0],
    options: ["all", "email", "json"],
    details:
      "Lists key pairs by id and prefix, never a secret.\n  --all              revoked keys too\n  --email ADDRESS    one owner's keys\n  --json             the rows as JSON (byte counts as numbers)",
  },
  {
    name: "keys create",
    synopsis: "--email ADDRESS [--site URL] [--json]",
    summary: "issue a key pair without e-mail (shown once; audited)",
    words: [0, 0],
    options: ["email", "site", "json"],
    details:
      "Issues a key pair for ADDRESS as the e-mailed code would, without SMTP: the keys are printed once, on stdout, and never again. " +
      "The address and the site URL are checked and normalised as the API does; IMGPRESS_ALLOWED_EMAILS does not apply (the operator may give anyone a key). " +
      "An active pair of the same address and site is revoked, as a new code would. No e-mail is sent; the audit trail records key.issued by cli.\n" +
      "  --email ADDRESS   the owner, as on the dashboard and in keys list\n" +
      "  --site URL        the site the key is for (http:// or https://), as site_url in the API\n" +
      "  --json            {id, email, siteUrl, keyPrefix, apiKey, secretKey, replaced}",
  },
  {
    name: "keys revoke",
    synopsis: "ID",
    summary: "revoke one key pair",
    words: [1, 1],
    options: [],
    details:
      "Revokes the key pair whose id (key_…, from imgpress keys list) is ID; it stops working at its next request. An id no active key has: exit 1.",
  },
  {
    name: "keys revoke-email",
    synopsis: "ADDRESS",
    summary: "revoke every active key of an address",
    words: [1, 1],
    options: [],
    details: "Revokes every active key pair of ADDRESS, one audit event each.",
  },
  {
    name: "backup",
    synopsis: "[FILE|FOLDER/] [--without-key] [--json]",
    summary:
      "online snapshot of the embedded database file, with the\nmaster key unless --without-key (keep it like a password)",
    words: [0, 1],
    options: ["without-key", "json"],
    details:
      "Writes a consistent snapshot of the embedded database while the server runs (default: imgpress-backup-<time>.db in the current folder).\n" +
      "  --without-key   leave the master key out (the backup then restores only beside the same key)\n" +
      "  --json          {file, bytes, keyPairs, revokedKeyPairs, withMasterKey, seconds} on stdout; the advice on stderr",
  },
  {
    name: "restore",
    synopsis: "FILE [--json]",
    summary:
      "replace the database file with a verified snapshot (server\nstopped); the old one is kept aside. PostgreSQL: pg_dump\nand pg_restore (docs/scaling.md)",
    words: [1, 1],
    options: ["json"],
    details:
      "Checks FILE, then puts it in place of the embedded database (the server stopped), keeping the old database and a replaced master key aside.\n" +
      "  --json   {restored, into, takenAt, keyPairs, revokedKeyPairs, migrationsApplied, previousDatabase, previousMasterKey} on stdout",
  },
  {
    name: "migrate-data",
    synopsis: "--from URL --to URL [--json]",
    summary:
      "copy the whole database into an empty one (e.g. file:… into\npostgres://…); the new one needs the same master key",
    // Its own usage line names --from and --to when words are left over.
    words: [0, Infinity],
    options: ["from", "to", "json"],
    details:
      "Copies every table of one database into an empty one, in one transaction on the target; progress on stderr.\n" +
      "  --from URL   the database to copy (file:…, postgres://…, libsql://…); a password goes in PGPASSWORD\n" +
      "  --to URL     the empty database to fill\n" +
      "  --json       {target, rows, tables: [{table, source, target}]} on stdout",
  },
  {
    name: "staff list",
    synopsis: "[--json]",
    summary: "staff who may sign in at /internal/login",
    words: [0, 0],
    options: ["json"],
    details: "Lists staff addresses, where each comes from and who added it.\n  --json   the rows as JSON",
  },
  {
    name: "staff add",
    synopsis: "EMAIL",
    summary: "let EMAIL sign in at /internal/login",
    words: [1, 1],
    options: [],
    details: "Adds a staff address (it may come before the first start: the database is created if needed).",
  },
  {
    name: "staff remove",
    synopsis: "EMAIL",
    summary: "remove a staff address and end its sessions",
    words: [1, 1],
    options: [],
    details: "Removes a staff address and ends its sessions; an address that is not staff: exit 1.",
  },
  {
    name: "audit",
    synopsis: "[--since 24h] [--type TYPE] [--json]",
    summary: "the audit trail, newest first (default: last 24 h)",
    words: [0, 0],
    options: ["since", "type", "json"],
    details:
      "Prints the audit trail, newest first, at most 500 events.\n  --since 24h   how far back (90m, 24h, 7d…)\n  --type TYPE   one event type\n  --json        the events as JSON",
  },
  {
    name: "settings",
    synopsis: "[--secrets] [--json]",
    summary: "the effective settings (--secrets: unmasked, audited)",
    words: [0, 0],
    options: ["secrets", "json"],
    details:
      "Prints the effective settings, one VARIABLE=value a line, secrets masked.\n  --secrets   unmasked (recorded in the audit trail)\n  --json      [{env, value}] on stdout",
  },
];

// The first column of the overview: the usage line, and the summary beside it when it fits.
const COLUMN = 35;

/** The text of `imgpress --help`, generated from the commands and the settings table so it cannot drift. */
export function helpText(): string {
  const lines = COMMANDS.flatMap((c) => {
    const usage = `  imgpress ${c.name === "serve" ? "[serve]" : c.name} ${c.synopsis}`;
    const [first = "", ...more] = c.summary.split("\n");
    const head = usage.length < COLUMN ? [`${usage.padEnd(COLUMN)}${first}`] : [usage, `${" ".repeat(COLUMN)}${first}`];
    return [...head, ...more.map((m) => `${" ".repeat(COLUMN)}${m}`)];
  });
  return `imgpress ${version}: JPEG/PNG to WebP/AVIF conversion service

Usage:
${lines.join("\n")}
  imgpress help COMMAND            that command's own usage (also: imgpress COMMAND --help)
  imgpress --version | --help

${optionsText()}`;
}

function optionsText(): string {
  const options = settings.map((s) => `  --${flagName(s.env).padEnd(22)} ${s.env.padEnd(32)} ${s.help}`).join("\n");
  return `Options (each flag mirrors an environment variable; flags win):
${options}

Environment only (compiled executable):
  IMGPRESS_CACHE_DIR   folder where the native libraries are unpacked at start (default
                       $XDG_CACHE_HOME/imgpress or ~/.cache/imgpress, else <data dir>/cache);
                       it must allow executables (not a noexec mount)
`;
}

/** The command named by the first of `words` (two words for keys and staff), or undefined. */
export function findCommand(words: readonly string[]): Command | undefined {
  const [first, second] = words;
  return COMMANDS.find((c) => c.name === `${first} ${second}`) ?? COMMANDS.find((c) => c.name === first);
}

/**
 * The help of the command `words` name (`keys` alone: every keys command), or null when they name
 * none. Each ends by pointing at the settings' flags, which every command takes.
 */
export function commandHelp(words: readonly string[]): string | null {
  const command = findCommand(words);
  const group = command ? [command] : COMMANDS.filter((c) => c.name.startsWith(`${words[0]} `));
  if (group.length === 0) return null;
  const parts = group.map(
    (c) => `Usage: imgpress ${c.name} ${c.synopsis}\n\n${c.details.split("\n").map(wrap).join("\n")}\n`,
  );
  if (command?.name === "serve") return `${parts[0]}\n${optionsText()}`;
  return `${parts.join("\n")}\nEvery command also takes the settings' flags (--data-dir, --database-url…): see imgpress --help.\n`;
}

// A paragraph of prose broken into lines of at most 100 characters; option lines (indented) stay as written.
function wrap(line: string): string {
  if (line.startsWith(" ") || line.length <= 100) return line;
  const out: string[] = [];
  let current = "";
  for (const word of line.split(" ")) {
    if (current && current.length + 1 + word.length > 100) out.push(current), (current = word);
    else current = current ? `${current} ${word}` : word;
  }
  return [...out, current].join("\n");
}
