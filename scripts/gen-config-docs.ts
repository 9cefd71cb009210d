/**
 * Writes docs/configuration.md from the settings table of src/core/config.ts, the table that also
 * drives parsing and `imgpress --help` (`npm run docs:generate`). test/docs/configuration.test.ts
 * fails when the committed page differs from what this writes.
 */
import { writeFileSync } from "node:fs";
import { allowedBy, ConfigSchema, flagName, settings } from "../src/core/config.ts";

/** Where the page is written, from the checkout's root. */
export const CONFIGURATION_PAGE = new URL("../docs/configuration.md", import.meta.url);

// Defaults that depend on the machine (CPUs, memory, host name, working folder), are made at first
// start, or mean something when unset (no SMTP: the log transport): written in words, so the page
// says what happens and is the same wherever it is generated.
const DEFAULT_IN_WORDS: Record<string, string> = {
  IMGPRESS_DATA_DIR: "`./imgpress-data`",
  IMGPRESS_DATABASE_URL: "`file:<data dir>/imgpress.db`",
  IMGPRESS_TLS_CERT: "generated self-signed pair",
  IMGPRESS_TLS_KEY: "generated self-signed pair",
  IMGPRESS_SMTP_URL: "— (log transport)",
  IMGPRESS_MAIL_FROM: "`imgpress@<hostname>`",
  IMGPRESS_MASTER_KEY: "generated `<data dir>/master.key` (mode 0600)",
  IMGPRESS_MEMORY_BUDGET_MB:
    "3/4 of the machine's memory, or of the container's limit when lower (at least 256; 2048 under Deno without `--allow-sys=systemMemoryInfo`)",
  IMGPRESS_CONCURRENCY: "CPU count",
  IMGPRESS_QUEUE_SIZE: "`4 × concurrency`",
  IMGPRESS_KEY_MAX_ADMITTED: "every place but `IMGPRESS_CONCURRENCY` of them (at least half): 8 of 10 on 2 cores",
  IMGPRESS_METRICS_TOKEN: "— (allowlist alone)",
  IMGPRESS_STAFF_EMAILS: "— (no staff)",
};

// What the one-line help (shared with --help) has no room for: operator detail, with links.
const NOTES: Record<string, string> = {
  IMGPRESS_HOST: "listen address (`0.0.0.0`: every IPv4 interface; `::`: every interface, IPv6 and IPv4)",
  IMGPRESS_PORT: "listen port (`0` = any free port)",
  IMGPRESS_DATA_DIR:
    "database, generated certificate, master key; on a local disk, not a network share (NFS, SMB/CIFS): SQLite's write-ahead log needs shared memory those do not provide reliably, and the check for a running server sees one machine only",
  IMGPRESS_DATABASE_URL:
    "the embedded file; `postgres://user:pass@host:5432/db` (or `postgresql://`, `sslmode` honoured) for PostgreSQL shared by several instances ([scaling.md](scaling.md)); `libsql://…` / `http(s)://…` for a libSQL server (not tested by the project). A `file:` URL must name a file: an empty path, `:memory:` or `?mode=memory` is refused (the data would be lost at every stop)",
  IMGPRESS_DATABASE_AUTH_TOKEN: "token for a remote libSQL server",
  IMGPRESS_DATABASE_POOL_SIZE:
    "PostgreSQL: most connections this instance opens (pool size × instances ≤ the server's `max_connections`)",
  IMGPRESS_DATABASE_TIMEOUT_S:
    "PostgreSQL: longest connection attempt and longest statement; past it the request gets `503 STORAGE_UNAVAILABLE`",
  IMGPRESS_TLS_CERT:
    "PEM files (both or neither); the certificate file holds the whole chain (certbot's `fullchain.pem`; a file without the intermediate is warned about); read at start only: restart after a renewal ([operations.md](operations.md#tls-certificates))",
  IMGPRESS_TLS_KEY: "see [`IMGPRESS_TLS_CERT`](#imgpress_tls_cert)",
  IMGPRESS_TLS_NAMES:
    "more DNS names and IP addresses for the generated certificate, the ones clients on other machines connect to (`nas.local,192.168.1.10`); a name the certificate lacks makes a new one at start, keeping the old names",
  IMGPRESS_BEHIND_PROXY:
    "serve plain HTTP for a TLS-terminating proxy; every request must then come from `IMGPRESS_TRUSTED_PROXIES` and carry `X-Forwarded-Proto: https`, else `403 HTTPS_REQUIRED`",
  IMGPRESS_TRUSTED_PROXIES:
    "with `IMGPRESS_BEHIND_PROXY`: addresses and CIDR ranges of your proxy (a proxy on another machine: its address; loopback and the listen address stay trusted, for `imgpress health`); only their `X-Forwarded-For` / `X-Forwarded-Proto` are believed (the client is the right-most `X-Forwarded-For` entry: the one your proxy appended), any other peer gets `403 HTTPS_REQUIRED` ([scaling.md](scaling.md))",
  IMGPRESS_SMTP_URL:
    "`smtps://user:pass@host:465`, or `smtp://user:pass@host:587`, which must upgrade with STARTTLS before the login (the password and the codes never go in clear; a relay on a loopback address (`smtp://127.0.0.1:25`; not the name `localhost`) is exempt, and `?requireTLS=false` opts out on a network you trust, with a warning at start)",
  IMGPRESS_MAIL_FROM: "sender address",
  IMGPRESS_ALLOWED_EMAILS: "comma list of addresses and `@domain` entries allowed to obtain keys",
  IMGPRESS_MASTER_KEY: "32 bytes (64 hex or base64) that encrypt stored secrets; **back it up with the database**",
  IMGPRESS_MAX_PIXELS: "largest decoded image (width × height), at most 1000000000000",
  IMGPRESS_MEMORY_BUDGET_MB:
    "memory the running conversions may take together, by an estimate read from the header (lossy AVIF ≈ 30 MB per output megapixel, lossy WebP ≈ 18; more with alpha, or for a progressive JPEG or interlaced PNG); a conversion waits until it fits, and one estimated above the whole budget gets `422 IMAGE_TOO_LARGE` ([api.md](api.md#limits))",
  IMGPRESS_CONVERT_TIMEOUT_S:
    "time limit of one conversion (`504 CONVERSION_TIMEOUT`); an encoder still running 5 × this later is presumed hung and its slot given back ([operations.md](operations.md#hung-conversions))",
  IMGPRESS_UPLOAD_TIMEOUT_S:
    "time limit for receiving one upload (`408 REQUEST_TIMEOUT`; a JSON or form body has 10 s), and for the client to take a result over 1 MiB (then the connection is closed)",
  IMGPRESS_CONCURRENCY:
    "conversion slots: conversions running at once; a lossy conversion of an image up to 2048 × 2048 takes half a slot",
  IMGPRESS_QUEUE_SIZE:
    "requests admitted beyond `IMGPRESS_CONCURRENCY` (uploading, waiting, or small conversions running in half slots); more get `503 SERVER_BUSY`",
  IMGPRESS_QUEUE_TIMEOUT_S: "longest wait for room to convert, a slot and memory (`503 SERVER_BUSY`)",
  IMGPRESS_KEY_MAX_ADMITTED:
    "most requests one API key, or one client address whatever its keys, may have admitted at once (uploading, waiting or converting); more get `429 TOO_MANY_IN_PROGRESS`, so one client's stalled or bursting uploads leave the others room to convert",
  IMGPRESS_AUTH_SCHEMES: "accepted credentials: `bearer,signed`, `signed` or `bearer`",
  IMGPRESS_SIGNATURE_BODY:
    "`strict`: only the raw body hash; `lenient` also accepts the empty-string hash on multipart requests",
  IMGPRESS_SIGNATURE_TOLERANCE_S: "allowed clock difference of `x-timestamp`",
  IMGPRESS_INTERNAL_ALLOW:
    "addresses and CIDR ranges (IPv4 and IPv6, e.g. `192.168.1.0/24,fd00::/8`) allowed on `/internal/`; everyone else gets the ordinary 404. A TCP forwarder on this machine (socat, `ssh -R`, nginx `stream`) makes every client it carries loopback: see [internal.md](internal.md)",
  IMGPRESS_LOG_LEVEL:
    "`debug`, `info`, `warn`, `error`; the start-up lines (where it listens, the certificate's fingerprint, migrations applied, warnings about the configuration) are written at any level",
  IMGPRESS_USAGE_FLUSH_S:
    "seconds between writes of the usage counters and hourly buckets; a crash loses at most this much counting ([usage.md](usage.md))",
  IMGPRESS_SHUTDOWN_TIMEOUT_S:
    "on SIGTERM/SIGINT/SIGHUP, longest wait for accepted uploads and conversions before they are cut (exit 1); see [operations](operations.md#stopping-and-draining)",
  IMGPRESS_DRAIN_DELAY_S:
    "on SIGTERM/SIGINT/SIGHUP, seconds the listener stays open (serving as usual) while `/health/ready` answers 503, so a load balancer stops routing here before connections are refused; the shutdown timeout starts after it ([operations](operations.md#stopping-and-draining))",
  IMGPRESS_METRICS_TOKEN:
    "at least 16 characters, printable ASCII; `GET /internal/metrics` then also requires `Authorization: Bearer <token>` ([operations.md](operations.md#metrics))",
  IMGPRESS_STAFF_EMAILS: "comma list of exact staff addresses, besides those added with `imgpress staff add`",
  IMGPRESS_STAFF_SESSION_IDLE_S: "a staff session ends after this many seconds without a request",
  IMGPRESS_STAFF_SESSION_MAX_S: "a staff session ends this many seconds after sign-in, however active",
  IMGPRESS_QUALITY_GUARD:
    "per-image quality for lossy output: `off`, `avif`, or `all` (AVIF and WebP); raises the quality when the preset would look worse than WebP q80, within 1.5× the preset's time ([api.md](api.md#quality-guard))",
};

const INTRO = `# Configuration

<!-- Generated by \`npm run docs:generate\` (scripts/gen-config-docs.ts) from the settings table in
src/core/config.ts: edit that table or the script, not this page. -->

Every setting is an environment variable with a matching flag (\`IMGPRESS_DATA_DIR\` ⇔
\`--data-dir\`; a flag wins over the variable), except \`IMGPRESS_CACHE_DIR\`, which the executable
reads before it parses its flags. \`imgpress --help\` (or \`npm start -- --help\`) lists the same
variables and flags from the same table.

- An invalid value stops start-up (exit 2) with a message naming the variable or flag and what is allowed.
- Durations are seconds, decimals allowed, except \`IMGPRESS_SIGNATURE_TOLERANCE_S\` and the two staff
  session lengths (whole seconds). The ranges below are the ones enforced.
- A variable starting with \`IMGPRESS_\` that is none of these (a typo such as \`IMGPRESS_PROT\`) is
  named in a warning at start and otherwise ignored. So is a setting that does nothing beside the
  others: TLS files behind a proxy (the proxy terminates TLS), \`IMGPRESS_TRUSTED_PROXIES\` without
  \`IMGPRESS_BEHIND_PROXY\`, a per-key share above every place there is, a staff idle limit not below
  the session maximum, and the default sender when this machine's name has no domain (many mail
  servers refuse \`imgpress@nas\`: set \`IMGPRESS_MAIL_FROM\`).
- Under Bun, keep \`IMGPRESS_QUEUE_TIMEOUT_S\` + \`IMGPRESS_CONVERT_TIMEOUT_S\` within 255 s: Bun closes a
  connection that has been silent that long, so a request that waits and converts longer gets no
  answer (a warning at start says so), and a stalled upload is closed there without its 408.
- Lose the master key and every stored secret key becomes useless (clients must get new keys; the
  server refuses that database, and [operations](operations.md#the-master-key) says how to start
  over); the database alone is useless to a thief for the same reason. The database remembers which
  key it was created with: started with another key, imgpress refuses with a message naming the
  key's origin.
`;

const CACHE_DIR = `### \`IMGPRESS_CACHE_DIR\`

- flag: none (environment only: read by the compiled executable's loader before any flag)
- default: \`$XDG_CACHE_HOME/imgpress\`, else \`~/.cache/imgpress\`, else \`<data dir>/cache\`
- allowed: a folder that allows running programs (not on a \`noexec\` mount)

Compiled executable only: where its native libraries (≈ 28 MiB per version) are unpacked, once per
version. On a \`noexec\` mount imgpress stops with "…mounted noexec…; set IMGPRESS_CACHE_DIR…"; old
versions are not deleted automatically: empty the folder while imgpress is stopped.
`;

/** A default value as the page shows it: lists comma-joined, an unset optional setting as "unset". */
function shown(value: unknown): string {
  if (value === undefined) return "unset";
  return `\`${Array.isArray(value) ? value.join(",") : String(value)}\``;
}

/** The defaults of every setting, in words where they depend on the machine. */
function defaults(): Map<string, string> {
  const parsed: Record<string, unknown> = {};
  const out = new Map<string, string>();
  for (const s of settings) {
    // Later fallbacks may read earlier ones (the queue from the concurrency), as loadConfig does.
    parsed[s.key] = s.fallback?.(parsed);
    out.set(s.env, DEFAULT_IN_WORDS[s.env] ?? shown(parsed[s.key]));
  }
  return out;
}

/** A table cell: pipes escaped so a value cannot split the row. */
const cell = (text: string) => text.replaceAll("|", "\\|");

// Values no setting accepts: a home-relative path, a blank value and a malformed one. A setting's parser answers them with
// the words loadConfig shows an operator who wrote a bad value ("a URL starting with smtp: or smtps:").
const REFUSED_PROBES = ["~/x", " ", "%%bad entry%%"];

/** What a setting accepts, in the words of its refusal: the schema's range for numbers, as loadConfig says it. */
function allowed(s: (typeof settings)[number]): string {
  const schema = ConfigSchema.properties[s.key];
  if (schema.type === "integer" || schema.type === "number" || schema.anyOf) return allowedBy(schema);
  for (const probe of REFUSED_PROBES) {
    try {
      s.parse(probe);
    } catch (why) {
      if (typeof why !== "string") continue;
      const words = why.replace(/\s*\(bad entry: [^)]*\)/, "");
      if (schema.type !== "array") return words;
      return `a comma list${schema.minItems ? ` of at least ${schema.minItems} entry` : ""}: ${words}`;
    }
  }
  return allowedBy(schema);
}

/** One setting's row: variable (linking to its details), flag, default, allowed values, the help line of --help. */
function row(s: (typeof settings)[number], fallback: string): string {
  return `| [\`${s.env}\`](#${s.env.toLowerCase()}) | \`--${flagName(s.env)}\` | ${cell(fallback)} | ${cell(allowed(s))} | ${cell(s.help)} |`;
}

/** One setting's details: what the help line has no room for. */
function details(s: (typeof settings)[number]): string {
  const note = NOTES[s.env] ?? s.help;
  return `### \`${s.env}\`\n\n${note.charAt(0).toUpperCase()}${note.slice(1)}.\n`;
}

/** Variables named in the notes or defaults that the settings table no longer has (to fail the test). */
export function staleNames(): string[] {
  const known = new Set(settings.map((s) => s.env));
  return [...Object.keys(NOTES), ...Object.keys(DEFAULT_IN_WORDS)].filter((env) => !known.has(env));
}

/** The full text of docs/configuration.md. */
export function configurationPage(): string {
  const fallbacks = defaults();
  const table = [
    "| variable | flag | default | allowed | what (as `--help` says it) |",
    "|---|---|---|---|---|",
    ...settings.map((s) => row(s, fallbacks.get(s.env)!)),
    "| [`IMGPRESS_CACHE_DIR`](#imgpress_cache_dir) | none | see below | a folder that allows running programs | where the executable unpacks its native libraries |",
  ].join("\n");
  const body = settings.map(details).join("\n");
  return `${INTRO}\n## Settings\n\n${table}\n\n## Details\n\n${body}\n${CACHE_DIR}`;
}

if (import.meta.main) {
  writeFileSync(CONFIGURATION_PAGE, configurationPage());
  console.log("wrote docs/configuration.md");
}
