import { availableParallelism, hostname, totalmem } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { type Static, type TSchema, Type as t } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { FILE_DEFAULTS, fileUrl, isPostgresUrl, localPath, POSTGRES_DEFAULTS } from "../data/db/location.ts";
import { certificateName } from "../server/tls/names.ts";
import { normalizeEmail } from "./email.ts";
import { parseAllowEntry } from "./ipallow.ts";
import { credentialsPastAuthority } from "./redact.ts";

/** Most names IMGPRESS_TLS_NAMES may list. */
const MAX_TLS_NAMES = 100;

/** The memory budget where the runtime may not read the machine's memory (Deno without --allow-sys=systemMemoryInfo). */
const FALLBACK_MEMORY_BUDGET_MB = 2048;

/** The memory this process may use: the machine's, or its cgroup's limit when lower (a container); undefined when the runtime may not tell. */
function availableMemoryBytes(): number | undefined {
  try {
    const total = totalmem();
    // Bun reports the machine's memory without a limit, Deno 2^63.
    const limit = (process as { constrainedMemory?: () => number | undefined }).constrainedMemory?.() ?? 0;
    return limit > 0 && limit < total ? limit : total;
  } catch {
    return undefined;
  }
}

/** Every setting of the service with its bounds (the only place they are written); checked by `loadConfig`. */
export const ConfigSchema = t.Object({
  host: t.String(),
  port: t.Integer({ minimum: 0, maximum: 65535 }),
  dataDir: t.String(),
  databaseUrl: t.String(),
  databaseAuthToken: t.Optional(t.String()),
  databasePoolSize: t.Integer({ minimum: 1, maximum: 1000 }),
  databaseTimeoutS: t.Number({ minimum: 1, maximum: 600 }),
  tlsCert: t.Optional(t.String()),
  tlsKey: t.Optional(t.String()),
  tlsNames: t.Array(t.String()),
  behindProxy: t.Boolean(),
  smtpUrl: t.Optional(t.String()),
  mailFrom: t.String(),
  allowedEmails: t.Array(t.String(), { minItems: 1 }),
  masterKey: t.Optional(t.String()),
  maxPixels: t.Integer({ minimum: 1, maximum: 1_000_000_000_000 }),
  memoryBudgetMb: t.Integer({ minimum: 64, maximum: 16 * 1024 * 1024 }),
  // At most a day: these become timers, and setTimeout fires at once beyond ~24.8 days.
  convertTimeoutS: t.Number({ exclusiveMinimum: 0, maximum: 86_400 }),
  uploadTimeoutS: t.Number({ exclusiveMinimum: 0, maximum: 86_400 }),
  concurrency: t.Integer({ minimum: 1, maximum: 256 }),
  queueSize: t.Integer({ minimum: 0, maximum: 10_000 }),
  queueTimeoutS: t.Number({ exclusiveMinimum: 0, maximum: 86_400 }),
  keyMaxAdmitted: t.Integer({ minimum: 1, maximum: 10_256 }),
  uploadMinRateKib: t.Integer({ minimum: 0, maximum: 1024 * 1024 }),
  uploadBudgetMb: t.Integer({ minimum: 21, maximum: 16 * 1024 * 1024 }),
  clientIpv6Prefix: t.Integer({ minimum: 16, maximum: 128 }),
  authSchemes: t.Array(t.Union([t.Literal("bearer"), t.Literal("signed")]), { minItems: 1 }),
  signatureBody: t.Union([t.Literal("lenient"), t.Literal("strict")]),
  signatureToleranceS: t.Integer({ minimum: 1, maximum: 86_400 }),
  internalAllow: t.Array(t.String()),
  trustedProxies: t.Array(t.String(), { minItems: 1 }),
  logLevel: t.Union([t.Literal("debug"), t.Literal("info"), t.Literal("warn"), t.Literal("error")]),
  usageFlushS: t.Number({ exclusiveMinimum: 0, maximum: 86_400 }),
  shutdownTimeoutS: t.Number({ exclusiveMinimum: 0, maximum: 86_400 }),
  drainDelayS: t.Number({ minimum: 0, maximum: 600 }),
  metricsToken: t.Optional(t.String()),
  staffEmails: t.Array(t.String()),
  staffSessionIdleS: t.Integer({ minimum: 60, maximum: 86_400 }),
  staffSessionMaxS: t.Integer({ minimum: 60, maximum: 30 * 86_400 }),
  auditRetentionDays: t.Integer({ minimum: 0, maximum: 36_500 }),
  qualityGuard: t.Union([t.Literal("off"), t.Literal("avif"), t.Literal("all")]),
});

/** The frozen, validated settings. */
export type Config = Readonly<Static<typeof ConfigSchema>>;

type Key = keyof Static<typeof ConfigSchema>;

/** The groups the staff settings page shows the settings in, in its order. */
export const SETTING_GROUPS = ["server", "security", "mail", "storage", "limits", "staff"] as const;

/** Which group of the staff settings page a setting is shown in. */
export type SettingGroup = (typeof SETTING_GROUPS)[number];

/** How one setting is read: its variable, its group and help line, and how a raw string becomes a value. */
interface Setting {
  key: Key;
  env: string;
  group: SettingGroup;
  help: string;
  /** Turns the raw string into a value of the field's type, or throws a string saying what is allowed; bounds are ConfigSchema's. */
  parse: (raw: string) => unknown;
  /** Default when the variable is unset; may depend on settings parsed before it. */
  fallback?: (c: Partial<Record<Key, unknown>>) => unknown;
}

const text = (raw: string) => {
  if (raw.trim() === "") throw "a non-empty string";
  return raw.trim();
};
// A path as written: an env file or a service manager never expands ~ (it would name a folder "~" here).
const path = (raw: string) => {
  const value = text(raw);
  if (value === "~" || value.startsWith("~/")) throw "a full path (~ is expanded by a shell only: write /home/…)";
  return value;
};
// Numbers are read as plain decimals ("1e3", "0x10" and signs are refused); their range is ConfigSchema's.
const integer = (raw: string) => {
  if (!/^\d+$/.test(raw.trim())) throw "a whole number";
  return Number(raw);
};
const seconds = (raw: string) => {
  if (!/^\d+(\.\d+)?$/.test(raw.trim())) throw "a number of seconds";
  return Number(raw);
};
const bool = (raw: string) => {
  const v = raw.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["0", "false", "no", "off", ""].includes(v)) return false;
  throw "true/false (also 1/0, yes/no, on/off)";
};
const list = (raw: string) =>
  raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
const word = (raw: string) => raw.trim();
// `check` sees the parsed URL of an accepted scheme (and the text it came from) and throws what is wrong with it.
const urlWith = (schemes: string[], check?: (url: URL, raw: string) => void) => (raw: string) => {
  const url = URL.parse(raw.trim());
  const wanted = `a URL starting with ${schemes.join(" or ")}`;
  // It would parse, as another host with no password, and the password would be shown as the host.
  if (url && url.protocol !== "file:" && credentialsPastAuthority(raw.trim())) {
    throw `${wanted} whose password is %-encoded (an "@" after the host: write a / ? # or @ in the password as %2F %3F %23 %40)`;
  }
  // A URL of the right scheme that does not parse (a bad port, an unclosed [): say so, not which schemes.
  if (!url)
    throw schemes.some((s) => raw.trim().toLowerCase().startsWith(s))
      ? `${wanted} that is well formed (check the host, port and %-encoding of the password)`
      : wanted;
  if (!schemes.includes(url.protocol)) throw wanted;
  check?.(url, raw.trim());
  return raw.trim();
};
// The sslmode values the PostgreSQL driver (postgres.js) gives libpq's meaning; any other word it
// would read as verify-full. Host and port in the query (libpq's socket form) it ignores, and
// would connect to localhost:5432 instead: refused rather than followed somewhere else.
const SSL_MODES = ["disable", "prefer", "require", "verify-full"];
function checkPostgresUrl(parsed: URL): void {
  try {
    decodeURIComponent(parsed.username);
    decodeURIComponent(parsed.password);
  } catch {
    throw "a PostgreSQL URL whose user name and password are %-encoded (a % in them is written %25)";
  }
  const sslmode = parsed.searchParams.get("sslmode");
  if (sslmode !== null && !SSL_MODES.includes(sslmode))
    throw `a PostgreSQL URL whose sslmode is one of ${SSL_MODES.join(", ")} (got ${sslmode})`;
  for (const name of ["host", "hostaddr", "port"]) {
    if (parsed.searchParams.has(name))
      throw `a PostgreSQL URL with the host and port in its address (postgres://user:pass@host:5432/db): ?${name}= and Unix sockets are not supported`;
  }
}
// libSQL reads `file:` with no path, `file::memory:` and `?mode=memory` as a database in memory:
// the service would run, and every key it issued would be gone at the next start.
function checkFileUrl(parsed: URL, raw: string): void {
  if (!raw.startsWith("file:")) throw "a file: URL with its scheme in lower case (file:./imgpress-data/imgpress.db)";
  let path: string;
  try {
    // localPath is not null here (the scheme is file:); it throws for a file URL with a host.
    path = localPath(raw)!.trim();
  } catch {
    throw "a file: URL of a file on this machine (file:/path/imgpress.db or file:///path/imgpress.db, no host)";
  }
  if (path === "" || path === ":memory:" || parsed.searchParams.get("mode") === "memory") {
    throw "a file: URL naming a database file (file:./imgpress-data/imgpress.db), not an empty path or :memory: (the data would be lost at every stop)";
  }
  if (path.endsWith("/")) throw "a file: URL naming a database file (file:./imgpress-data/imgpress.db), not a folder";
  // libSQL decodes %-escapes in the path and refuses the URL when one is not an escape.
  if (/%(?![0-9a-f]{2})/i.test(raw))
    throw "a file: URL whose % signs each start an escape (write % itself as %25: file:/srv/100%25/imgpress.db)";
}

/** The database URL schemes the service opens: the embedded file, PostgreSQL, a libSQL server. */
const DATABASE_SCHEMES = ["file:", "postgres:", "postgresql:", "libsql:", "http:", "https:", "ws:", "wss:"];

/**
 * Checks a database URL as IMGPRESS_DATABASE_URL is checked (also migrate-data's --from and --to);
 * returns it trimmed, or throws a string saying what is allowed.
 */
export const parseDatabaseUrl = urlWith(DATABASE_SCHEMES, (url, raw) => {
  // postgres.js and libSQL would go to localhost instead.
  if (url.protocol !== "file:" && url.hostname === "")
    throw `a ${url.protocol.slice(0, -1)}: URL with a host (postgres://user:pass@host:5432/db)`;
  if (url.protocol === "postgres:" || url.protocol === "postgresql:") checkPostgresUrl(url);
  if (url.protocol === "file:") checkFileUrl(url, raw);
});

// Why an entry of IMGPRESS_TLS_NAMES is refused is said by `certificateName`, after what is allowed.
function tlsName(entry: string): string {
  try {
    return certificateName(entry);
  } catch (why) {
    throw `DNS names (nas.local, *.example.lan) and IP addresses (bad entry: ${entry}${why ? `; ${why}` : ""})`;
  }
}

const emailPattern = /^[^\s@<>(),;:"[\]\\]+@[^\s@<>(),;:"[\]\\]+\.[^\s@<>(),;:"[\]\\]+$/;

// Allowlist entries are compared with normalised addresses, so they are normalised by the same rules:
// an entry no address can match (a trailing dot, `a..b@`) is refused rather than matching nobody.
function allowlistEntry(entry: string, allowed = "*, addresses or @domain entries"): string {
  if (entry === "*") return entry;
  if (/^\*@/.test(entry)) throw `${allowed} (bad entry: ${entry}; a whole domain is written @${entry.slice(2)})`;
  try {
    return entry.startsWith("@") ? normalizeEmail(`x${entry}`).slice(1) : normalizeEmail(entry);
  } catch (err) {
    throw `${allowed} (bad entry: ${entry}; ${(err as Error).message.replace(/^email is not a valid address: |\.$/g, "")})`;
  }
}

/** The settings table: the single source for parsing, `--help` and the docs. */
export const settings: readonly Setting[] = [
  {
    key: "host",
    env: "IMGPRESS_HOST",
    group: "server",
    help: "listen address",
    parse: text,
    fallback: () => "0.0.0.0",
  },
  {
    key: "port",
    env: "IMGPRESS_PORT",
    group: "server",
    help: "listen port (0 = any free port)",
    parse: integer,
    fallback: () => 8443,
  },
  {
    key: "dataDir",
    env: "IMGPRESS_DATA_DIR",
    group: "storage",
    help: "folder for the database, the generated certificate and the master key",
    parse: (raw) => resolve(path(raw)),
    fallback: () => resolve("imgpress-data"),
  },
  {
    key: "databaseUrl",
    env: "IMGPRESS_DATABASE_URL",
    group: "storage",
    help: "file:… (embedded, default), postgres://user:pass@host:5432/db (shared by several instances; sslmode honoured), or a libSQL server libsql://…, http(s)://…",
    parse: parseDatabaseUrl,
    fallback: (c) => fileUrl(join(c.dataDir as string, "imgpress.db")),
  },
  {
    key: "databaseAuthToken",
    env: "IMGPRESS_DATABASE_AUTH_TOKEN",
    group: "storage",
    help: "token for a remote libSQL server",
    parse: text,
  },
  {
    key: "databasePoolSize",
    env: "IMGPRESS_DATABASE_POOL_SIZE",
    group: "storage",
    help: "PostgreSQL: most connections this instance opens",
    parse: integer,
    fallback: () => POSTGRES_DEFAULTS.poolSize,
  },
  {
    key: "databaseTimeoutS",
    env: "IMGPRESS_DATABASE_TIMEOUT_S",
    group: "storage",
    help: "seconds a request's database work may wait before 503 STORAGE_UNAVAILABLE: on PostgreSQL a connection attempt or one statement (default 10); on the embedded file a write waiting for another process's lock (default 5)",
    parse: seconds,
    fallback: (c) => (isPostgresUrl(c.databaseUrl as string) ? POSTGRES_DEFAULTS.timeoutS : FILE_DEFAULTS.timeoutS),
  },
  {
    key: "tlsCert",
    env: "IMGPRESS_TLS_CERT",
    group: "server",
    help: "PEM certificate file (default: generated self-signed)",
    parse: path,
  },
  {
    key: "tlsKey",
    env: "IMGPRESS_TLS_KEY",
    group: "server",
    help: "PEM private key file (default: generated)",
    parse: path,
  },
  {
    key: "tlsNames",
    env: "IMGPRESS_TLS_NAMES",
    group: "server",
    help: "more names for the generated certificate: the DNS names and IP addresses clients on other machines use (comma list, e.g. nas.local,192.168.1.10); a name it lacks makes a new certificate",
    parse: (raw) => {
      const names = [...new Set(list(raw).map(tlsName))];
      // Past a few thousand names the handshake outgrows what OpenSSL clients accept (curl, PHP): far below that.
      if (names.length > MAX_TLS_NAMES) throw `at most ${MAX_TLS_NAMES} names (got ${names.length})`;
      return names;
    },
    fallback: () => [],
  },
  {
    key: "behindProxy",
    env: "IMGPRESS_BEHIND_PROXY",
    group: "server",
    help: "serve plain HTTP behind a TLS-terminating proxy that sets X-Forwarded-Proto: https",
    parse: bool,
    fallback: () => false,
  },
  {
    key: "trustedProxies",
    env: "IMGPRESS_TRUSTED_PROXIES",
    group: "server",
    help: "with IMGPRESS_BEHIND_PROXY: the proxy's addresses and CIDR ranges (comma list; loopback is always trusted); other peers get 403 HTTPS_REQUIRED",
    parse: (raw) => list(raw).map(parseAllowEntry),
    fallback: () => ["127.0.0.1", "::1"],
  },
  {
    key: "smtpUrl",
    env: "IMGPRESS_SMTP_URL",
    group: "mail",
    help: "smtp://user:pass@host:587 or smtps://… (default: log transport)",
    // nodemailer would send to localhost:587 instead (a template's empty placeholder: smtp://${HOST}).
    parse: urlWith(["smtp:", "smtps:"], (url) => {
      if (url.hostname === "") throw "an smtp: or smtps: URL with a host (smtp://user:pass@host:587)";
    }),
  },
  {
    key: "mailFrom",
    env: "IMGPRESS_MAIL_FROM",
    group: "mail",
    help: "sender address of OTP and notice e-mails",
    parse: (raw) => {
      if (!emailPattern.test(raw.trim())) throw "an e-mail address";
      return raw.trim();
    },
    fallback: () => `imgpress@${hostname() || "localhost"}`,
  },
  {
    key: "allowedEmails",
    env: "IMGPRESS_ALLOWED_EMAILS",
    group: "security",
    help: "comma list of addresses and @domain entries allowed to obtain keys; * = anyone",
    parse: (raw) => list(raw).map((entry) => allowlistEntry(entry)),
    fallback: () => ["*"],
  },
  {
    key: "masterKey",
    env: "IMGPRESS_MASTER_KEY",
    group: "security",
    help: "32-byte key (64 hex or base64) that encrypts stored secrets (default: generated file in the data dir)",
    parse: text,
  },
  {
    key: "maxPixels",
    env: "IMGPRESS_MAX_PIXELS",
    group: "limits",
    help: "largest decoded image (width × height) accepted",
    parse: integer,
    fallback: () => 100_000_000,
  },
  {
    key: "memoryBudgetMb",
    env: "IMGPRESS_MEMORY_BUDGET_MB",
    group: "limits",
    help: "memory the running conversions may take together, by estimate (MiB); a conversion estimated above it gets 422 IMAGE_TOO_LARGE (default: 3/4 of the machine's or the container's memory)",
    parse: integer,
    fallback: () => {
      const bytes = availableMemoryBytes();
      return bytes === undefined ? FALLBACK_MEMORY_BUDGET_MB : Math.max(256, Math.floor((bytes * 3) / 4 / 2 ** 20));
    },
  },
  {
    key: "convertTimeoutS",
    env: "IMGPRESS_CONVERT_TIMEOUT_S",
    group: "limits",
    help: "time limit of one conversion",
    parse: seconds,
    fallback: () => 60,
  },
  {
    key: "uploadTimeoutS",
    env: "IMGPRESS_UPLOAD_TIMEOUT_S",
    group: "limits",
    help: "time limit for receiving one upload (a JSON or form body has 10 s), and for the client to take a result over 1 MiB",
    parse: seconds,
    fallback: () => 60,
  },
  {
    key: "concurrency",
    env: "IMGPRESS_CONCURRENCY",
    group: "limits",
    help: "conversion slots: conversions running at once, a small lossy one (≤ 2048×2048) taking half a slot (default: CPU count)",
    parse: integer,
    fallback: () => Math.min(availableParallelism(), 256),
  },
  {
    key: "queueSize",
    env: "IMGPRESS_QUEUE_SIZE",
    group: "limits",
    help: "requests admitted beyond IMGPRESS_CONCURRENCY (uploading, waiting, or small conversions in half slots); more get 503 SERVER_BUSY (default: 4 × concurrency)",
    parse: integer,
    fallback: (c) => 4 * (c.concurrency as number),
  },
  {
    key: "queueTimeoutS",
    env: "IMGPRESS_QUEUE_TIMEOUT_S",
    group: "limits",
    help: "longest wait for room to convert (a slot, and memory) before 503 SERVER_BUSY",
    parse: seconds,
    fallback: () => 30,
  },
  {
    key: "keyMaxAdmitted",
    env: "IMGPRESS_KEY_MAX_ADMITTED",
    group: "limits",
    help: "most requests one API key, and one client address, may have admitted at once (received and waiting, converting, or handing over a result); more get 429 TOO_MANY_IN_PROGRESS (default: every place but IMGPRESS_CONCURRENCY of them, and at least half)",
    parse: integer,
    // Others keep `concurrency` places (enough to run), or half when there are fewer places than that.
    // Uploads being received hold no place (the upload budget bounds them), so slow ones cannot use this share.
    fallback: (c) => {
      const places = (c.concurrency as number) + (c.queueSize as number);
      return Math.max(1, Math.ceil(places / 2), places - (c.concurrency as number));
    },
  },
  {
    key: "uploadMinRateKib",
    env: "IMGPRESS_UPLOAD_MIN_RATE_KIB",
    group: "limits",
    help: "slowest accepted upload, KiB/s averaged from 5 s after its start; slower gets 408 REQUEST_TIMEOUT (0: only IMGPRESS_UPLOAD_TIMEOUT_S)",
    parse: integer,
    fallback: () => 16,
  },
  {
    key: "uploadBudgetMb",
    env: "IMGPRESS_UPLOAD_BUDGET_MB",
    group: "limits",
    help: "uploads received at once, by their Content-Length (a chunked one counts 20 MiB), MiB; one client address may hold an eighth (at least one upload of any size); beyond: 503 SERVER_BUSY, 429 for the client (default: 20 MiB per place)",
    parse: integer,
    fallback: (c) => Math.ceil((20 + 1 / 16) * ((c.concurrency as number) + (c.queueSize as number))),
  },
  {
    key: "clientIpv6Prefix",
    env: "IMGPRESS_CLIENT_IPV6_PREFIX",
    group: "limits",
    help: "IPv6 clients count as one for the conversion shares per this prefix length (a subscriber commonly holds a /56 or a /48); rate limits count /64s",
    parse: integer,
    fallback: () => 48,
  },
  {
    key: "authSchemes",
    env: "IMGPRESS_AUTH_SCHEMES",
    group: "security",
    help: "accepted credentials on /plugin/convert: bearer,signed | signed | bearer",
    parse: (raw) => [...new Set(list(raw))],
    fallback: () => ["bearer", "signed"],
  },
  {
    key: "signatureBody",
    env: "IMGPRESS_SIGNATURE_BODY",
    group: "security",
    help: "lenient: also accept the empty-body hash on multipart requests; strict: raw body hash only",
    parse: word,
    fallback: () => "lenient",
  },
  {
    key: "signatureToleranceS",
    env: "IMGPRESS_SIGNATURE_TOLERANCE_S",
    group: "security",
    help: "allowed clock difference of x-timestamp",
    parse: integer,
    fallback: () => 300,
  },
  {
    key: "internalAllow",
    env: "IMGPRESS_INTERNAL_ALLOW",
    group: "security",
    help: "client addresses and CIDR ranges allowed on /internal/ (comma list, IPv4 and IPv6)",
    parse: (raw) => list(raw).map(parseAllowEntry),
    fallback: () => ["127.0.0.1", "::1"],
  },
  {
    key: "logLevel",
    env: "IMGPRESS_LOG_LEVEL",
    group: "server",
    help: "debug | info | warn | error",
    parse: word,
    fallback: () => "info",
  },
  // usage over time (buckets for the dashboard)
  {
    key: "usageFlushS",
    env: "IMGPRESS_USAGE_FLUSH_S",
    group: "storage",
    help: "seconds between writes of the usage counters (a crash loses at most this much counting)",
    parse: seconds,
    fallback: () => 5,
  },
  // operations: draining
  {
    key: "shutdownTimeoutS",
    env: "IMGPRESS_SHUTDOWN_TIMEOUT_S",
    group: "server",
    help: "on SIGTERM/SIGINT/SIGHUP, longest wait for accepted requests to finish before they are cut",
    parse: seconds,
    fallback: () => 30,
  },
  {
    key: "drainDelayS",
    env: "IMGPRESS_DRAIN_DELAY_S",
    group: "server",
    help: "on SIGTERM/SIGINT/SIGHUP, seconds the listener stays open answering /health/ready with 503 (so a load balancer stops routing here) before it closes",
    parse: seconds,
    fallback: () => 0,
  },
  // Metrics and readiness (issue 13)
  {
    key: "metricsToken",
    env: "IMGPRESS_METRICS_TOKEN",
    group: "security",
    help: "bearer token GET /internal/metrics also requires (default: the /internal/ allowlist alone)",
    parse: (raw) => {
      // A header carries ASCII: a token with other characters reaches the server as other bytes and never matches.
      if (raw.trim().length < 16 || !/^[\x20-\x7e]+$/.test(raw.trim()))
        throw "a token of at least 16 characters, printable ASCII only";
      return raw.trim();
    },
  },
  // Staff access under /internal/ (src/staff/).
  {
    key: "staffEmails",
    env: "IMGPRESS_STAFF_EMAILS",
    group: "staff",
    help: "comma list of staff addresses (exact); `imgpress staff add` adds more in the database",
    parse: (raw) =>
      list(raw).map((entry) => {
        const email = allowlistEntry(entry, "exact e-mail addresses");
        if (email.startsWith("@") || email === "*") throw `exact e-mail addresses (bad entry: ${entry})`;
        return email;
      }),
    fallback: () => [],
  },
  {
    key: "staffSessionIdleS",
    env: "IMGPRESS_STAFF_SESSION_IDLE_S",
    group: "staff",
    help: "staff session ends after this many seconds without a request",
    parse: integer,
    fallback: () => 1800,
  },
  {
    key: "staffSessionMaxS",
    env: "IMGPRESS_STAFF_SESSION_MAX_S",
    group: "staff",
    help: "staff session ends this many seconds after sign-in, however active",
    parse: integer,
    fallback: () => 43_200,
  },
  {
    key: "auditRetentionDays",
    env: "IMGPRESS_AUDIT_RETENTION_DAYS",
    group: "staff",
    help: "audit events older than this many days are deleted (at start, then every minute; each deletion is itself audited); 0 keeps every event",
    parse: integer,
    fallback: () => 0,
  },
  // Quality guard (issue 16)
  {
    key: "qualityGuard",
    env: "IMGPRESS_QUALITY_GUARD",
    group: "limits",
    help: "lossy outputs whose quality is raised per image to reach WebP q80's SSIM: off | avif | all",
    parse: word,
    fallback: () => "avif",
  },
];

/** Raised when a setting is invalid; main prints it and exits with status 2. */
export class ConfigError extends Error {}

/** Read by the compiled executable's loader before any of this runs, so not among the settings. */
const LOADER_VARIABLES = ["IMGPRESS_CACHE_DIR"];

/** `IMGPRESS_*` variables in `env` that no setting reads (a typo such as IMGPRESS_PROT), sorted. */
export function unknownSettings(env: Record<string, string | undefined>): string[] {
  const known = new Set([...settings.map((s) => s.env), ...LOADER_VARIABLES]);
  return Object.keys(env)
    .filter((name) => name.startsWith("IMGPRESS_") && !known.has(name))
    .sort();
}

/**
 * Settings that are valid alone but do nothing, or less than they say, beside the others: one
 * sentence each, for a warning at start (an operator would otherwise believe them in force).
 */
export function ineffectiveSettings(config: Config): string[] {
  const said: string[] = [];
  if (config.behindProxy && config.tlsCert) {
    said.push(
      "IMGPRESS_TLS_CERT and IMGPRESS_TLS_KEY are not used with IMGPRESS_BEHIND_PROXY: the proxy terminates TLS and this instance speaks plain HTTP to it",
    );
  }
  if (config.tlsNames.length > 0 && (config.behindProxy || config.tlsCert)) {
    said.push(
      `IMGPRESS_TLS_NAMES is used only for the generated certificate: ${config.behindProxy ? "behind IMGPRESS_BEHIND_PROXY the proxy's certificate is the one clients see" : "the certificate in IMGPRESS_TLS_CERT holds its own names"}`,
    );
  }
  if (!config.behindProxy && config.trustedProxies.some((p) => p !== "127.0.0.1" && p !== "::1")) {
    said.push(
      "IMGPRESS_TRUSTED_PROXIES is used only with IMGPRESS_BEHIND_PROXY=true: X-Forwarded-* headers are ignored",
    );
  }
  const places = config.concurrency + config.queueSize;
  if (config.keyMaxAdmitted > places) {
    said.push(
      `IMGPRESS_KEY_MAX_ADMITTED (${config.keyMaxAdmitted}) is more than the ${places} places there are (IMGPRESS_CONCURRENCY + IMGPRESS_QUEUE_SIZE): one key may take them all`,
    );
  }
  if (config.staffSessionIdleS >= config.staffSessionMaxS) {
    said.push(
      `IMGPRESS_STAFF_SESSION_IDLE_S (${config.staffSessionIdleS}) is not below IMGPRESS_STAFF_SESSION_MAX_S (${config.staffSessionMaxS}): sessions end at the maximum before they can go idle`,
    );
  }
  // The default sender is imgpress@<hostname>; a host name without a dot makes an address many mail servers refuse.
  if (config.smtpUrl && !config.mailFrom.slice(config.mailFrom.lastIndexOf("@") + 1).includes(".")) {
    said.push(
      `IMGPRESS_MAIL_FROM is not set: mail is sent from ${config.mailFrom}, an address without a domain that many mail servers refuse; set IMGPRESS_MAIL_FROM`,
    );
  }
  return said;
}

/**
 * Builds the configuration from environment variables, overridden by `--flag value` pairs whose
 * names mirror the variables (`IMGPRESS_DATA_DIR` ⇔ `--data-dir`).
 */
export function loadConfig(env: Record<string, string | undefined>, flags: Record<string, string> = {}): Config {
  const out: Partial<Record<Key, unknown>> = {};
  const origins: Partial<Record<Key, string>> = {};
  for (const s of settings) {
    const flag = flagName(s.env);
    const raw = flags[flag] ?? env[s.env];
    origins[s.key] = flags[flag] !== undefined ? `--${flag}` : s.env;
    if (raw === undefined || raw === "") {
      if (s.fallback) out[s.key] = s.fallback(out);
      continue;
    }
    try {
      out[s.key] = s.parse(raw);
    } catch (allowed) {
      // A number's parser knows its form, the schema its range: "-1" is told both.
      const schema = ConfigSchema.properties[s.key];
      const expected = schema.type === "integer" || schema.type === "number" ? allowedBy(schema) : allowed;
      throw new ConfigError(`${origins[s.key]} is invalid: expected ${expected}.`);
    }
  }
  // Check first: the first walk for errors costs ~5 ms more than a check (bench/README.md,
  // "Start-up"), and only a refused setting needs its error named.
  const error = Value.Check(ConfigSchema, out) ? undefined : Value.Errors(ConfigSchema, out).First();
  if (error) {
    const key = error.path.split("/")[1] as Key;
    throw new ConfigError(`${origins[key] ?? key} is invalid: expected ${allowedBy(ConfigSchema.properties[key])}.`);
  }
  if (Boolean(out.tlsCert) !== Boolean(out.tlsKey)) {
    throw new ConfigError("IMGPRESS_TLS_CERT and IMGPRESS_TLS_KEY must be set together.");
  }
  // Deeply: the lists (allowed e-mails, proxies, allowlist…) are shared by every service.
  for (const value of Object.values(out)) if (Array.isArray(value)) Object.freeze(value);
  return Object.freeze(out as Static<typeof ConfigSchema>);
}

/** What a field of ConfigSchema accepts, in words, for the error message and docs/configuration.md. */
export function allowedBy(schema: TSchema): string {
  if (schema.anyOf) return `one of ${(schema.anyOf as TSchema[]).map((s) => s.const).join(", ")}`;
  if (schema.type === "array")
    return `a comma list${schema.minItems ? ` of at least ${schema.minItems} entry` : ""}, each ${allowedBy(schema.items)}`;
  if (schema.type === "integer")
    return schema.maximum === undefined
      ? `a whole number of at least ${schema.minimum}`
      : `a whole number from ${schema.minimum} to ${schema.maximum}`;
  if (schema.type === "number") {
    const upTo = schema.maximum === undefined ? "" : ` to ${schema.maximum}`;
    return schema.exclusiveMinimum === 0
      ? `a positive number${upTo && ` up${upTo}`}`
      : `a number from ${schema.minimum ?? 0}${upTo}`;
  }
  if (schema.type === "boolean") return "true or false";
  return "a string";
}

/** `IMGPRESS_DATA_DIR` → `data-dir`. */
export function flagName(env: string): string {
  return env
    .replace(/^IMGPRESS_/, "")
    .toLowerCase()
    .replaceAll("_", "-");
}
