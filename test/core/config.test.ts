/**
 * Configuration: defaults, every invalid value refused with a message naming its variable (or
 * flag) and what is allowed, flags over env, the TLS pair rule, and the master key.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { availableParallelism, hostname, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  ConfigError,
  flagName,
  ineffectiveSettings,
  loadConfig,
  settings,
  unknownSettings,
} from "../../src/core/config.ts";
import { loadMasterKey } from "../../src/server/masterkey.ts";

/** The ConfigError `fn` throws (fails the test when it throws nothing or something else). */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error("expected a ConfigError, but nothing was thrown");
}

describe("defaults (no variables set)", () => {
  const config = loadConfig({});
  test.each([
    ["host", "0.0.0.0"],
    ["port", 8443],
    ["dataDir", resolve("imgpress-data")],
    ["databaseUrl", `file:${join(resolve("imgpress-data"), "imgpress.db")}`],
    ["databaseAuthToken", undefined],
    ["databasePoolSize", 10],
    // The embedded file's: the longest a request's write waits for another process's lock.
    ["databaseTimeoutS", 5],
    ["tlsCert", undefined],
    ["tlsKey", undefined],
    ["behindProxy", false],
    ["smtpUrl", undefined],
    ["mailFrom", `imgpress@${hostname() || "localhost"}`],
    ["allowedEmails", ["*"]],
    ["masterKey", undefined],
    ["concurrency", availableParallelism()],
    ["queueSize", 4 * availableParallelism()],
    ["authSchemes", ["bearer", "signed"]],
    ["signatureBody", "lenient"],
    ["signatureToleranceS", 300],
    ["internalAllow", ["127.0.0.1", "::1"]],
    ["logLevel", "info"],
    ["usageFlushS", 5],
    ["staffEmails", []],
    ["staffSessionIdleS", 1800],
    ["staffSessionMaxS", 43_200],
  ] as const)("%s = %p", (key, value) => {
    expect(config[key as keyof typeof config]).toEqual(value as never);
  });

  test("the result is frozen", () => {
    expect(Object.isFrozen(config)).toBe(true);
  });

  test("an empty variable counts as unset", () => {
    expect(loadConfig({ IMGPRESS_PORT: "", IMGPRESS_LOG_LEVEL: "" })).toMatchObject({ port: 8443, logLevel: "info" });
  });

  test("the database defaults into the configured data folder", () => {
    const dir = join(tmpdir(), "imgpress-config-test");
    expect(loadConfig({ IMGPRESS_DATA_DIR: dir }).databaseUrl).toBe(`file:${join(dir, "imgpress.db")}`);
  });

  test("the queue defaults to four times the configured concurrency", () => {
    expect(loadConfig({ IMGPRESS_CONCURRENCY: "3" }).queueSize).toBe(12);
  });
});

describe("accepted values", () => {
  test.each([
    ["IMGPRESS_PORT", "0", "port", 0],
    ["IMGPRESS_PORT", "65535", "port", 65535],
    ["IMGPRESS_BEHIND_PROXY", "TRUE", "behindProxy", true],
    ["IMGPRESS_BEHIND_PROXY", "yes", "behindProxy", true],
    ["IMGPRESS_BEHIND_PROXY", "1", "behindProxy", true],
    ["IMGPRESS_BEHIND_PROXY", "off", "behindProxy", false],
    [
      "IMGPRESS_SMTP_URL",
      "smtps://user:pass@mail.example.com:465",
      "smtpUrl",
      "smtps://user:pass@mail.example.com:465",
    ],
    ["IMGPRESS_DATABASE_URL", "libsql://db.example.com", "databaseUrl", "libsql://db.example.com"],
    [
      "IMGPRESS_DATABASE_URL",
      "postgres://db.example.com/imgpress",
      "databaseUrl",
      "postgres://db.example.com/imgpress",
    ],
    [
      "IMGPRESS_DATABASE_URL",
      "postgresql://u:p@db.example.com:5432/imgpress?sslmode=require",
      "databaseUrl",
      "postgresql://u:p@db.example.com:5432/imgpress?sslmode=require",
    ],
    ["IMGPRESS_DATABASE_URL", "file:./data/imgpress.db?mode=ro", "databaseUrl", "file:./data/imgpress.db?mode=ro"],
    ["IMGPRESS_DATABASE_POOL_SIZE", "25", "databasePoolSize", 25],
    ["IMGPRESS_DATABASE_TIMEOUT_S", "2.5", "databaseTimeoutS", 2.5],
    // A database server gets its own default: a connection attempt or a statement may take longer.
    ["IMGPRESS_DATABASE_URL", "postgres://db.example.com/imgpress", "databaseTimeoutS", 10],
    [
      "IMGPRESS_ALLOWED_EMAILS",
      " Boss@Corp.example , @Team.example ,,",
      "allowedEmails",
      ["boss@corp.example", "@team.example"],
    ],
    [
      "IMGPRESS_ALLOWED_EMAILS",
      "@Bücher.example,Anna@bücher.example",
      "allowedEmails",
      ["@xn--bcher-kva.example", "anna@xn--bcher-kva.example"],
    ],
    ["IMGPRESS_AUTH_SCHEMES", "signed,signed", "authSchemes", ["signed"]],
    ["IMGPRESS_CONVERT_TIMEOUT_S", "0.5", "convertTimeoutS", 0.5],
    ["IMGPRESS_HOST", " 127.0.0.1 ", "host", "127.0.0.1"],
  ] as const)("%s=%p → %s", (variable, value, key, expected) => {
    expect(loadConfig({ [variable]: value })[key as keyof ReturnType<typeof loadConfig>]).toEqual(expected as never);
  });
});

describe("an invalid value stops with a message naming the variable and what is allowed", () => {
  test.each([
    ["IMGPRESS_HOST", "   "],
    ["IMGPRESS_PORT", "abc"],
    ["IMGPRESS_PORT", "-1"],
    ["IMGPRESS_PORT", "65536"],
    ["IMGPRESS_PORT", "1e3"],
    ["IMGPRESS_PORT", "80.5"],
    ["IMGPRESS_DATA_DIR", "  "],
    ["IMGPRESS_DATABASE_URL", "mysql://db.example.com/imgpress"],
    ["IMGPRESS_DATABASE_URL", "not a url"],
    ["IMGPRESS_DATABASE_AUTH_TOKEN", "  "],
    ["IMGPRESS_DATABASE_POOL_SIZE", "0"],
    ["IMGPRESS_DATABASE_POOL_SIZE", "ten"],
    ["IMGPRESS_DATABASE_POOL_SIZE", "1001"],
    ["IMGPRESS_DATABASE_TIMEOUT_S", "0"],
    ["IMGPRESS_DATABASE_TIMEOUT_S", "0.5"],
    ["IMGPRESS_DATABASE_TIMEOUT_S", "forever"],
    ["IMGPRESS_TLS_CERT", "  "],
    ["IMGPRESS_TLS_KEY", "  "],
    ["IMGPRESS_BEHIND_PROXY", "maybe"],
    ["IMGPRESS_SMTP_URL", "http://mail.example.com"],
    ["IMGPRESS_SMTP_URL", "mail.example.com:25"],
    ["IMGPRESS_MAIL_FROM", "nobody"],
    ["IMGPRESS_MAIL_FROM", "Name <a@b.example>"],
    ["IMGPRESS_ALLOWED_EMAILS", "not an address"],
    ["IMGPRESS_ALLOWED_EMAILS", "@nodot"],
    ["IMGPRESS_ALLOWED_EMAILS", " , "],
    ["IMGPRESS_MASTER_KEY", "  "],
    ["IMGPRESS_MAX_PIXELS", "0"],
    // Above a million megapixels (sharp's limit takes at most 2^53 − 1: every conversion answered 500).
    ["IMGPRESS_MAX_PIXELS", "99999999999999999999"],
    ["IMGPRESS_MAX_PIXELS", "1000000000001"],
    ["IMGPRESS_CONVERT_TIMEOUT_S", "0"],
    ["IMGPRESS_CONVERT_TIMEOUT_S", "-5"],
    // A day at most: beyond ~24.8 days setTimeout would fire at once (every conversion a 504).
    ["IMGPRESS_CONVERT_TIMEOUT_S", "3000000"],
    ["IMGPRESS_UPLOAD_TIMEOUT_S", "86401"],
    ["IMGPRESS_UPLOAD_TIMEOUT_S", "soon"],
    ["IMGPRESS_CONCURRENCY", "0"],
    ["IMGPRESS_CONCURRENCY", "257"],
    ["IMGPRESS_QUEUE_SIZE", "-1"],
    ["IMGPRESS_QUEUE_SIZE", "10001"],
    ["IMGPRESS_QUEUE_TIMEOUT_S", "0"],
    ["IMGPRESS_QUEUE_TIMEOUT_S", "86401"],
    ["IMGPRESS_AUTH_SCHEMES", "basic"],
    ["IMGPRESS_AUTH_SCHEMES", "bearer,oauth"],
    ["IMGPRESS_SIGNATURE_BODY", "loose"],
    ["IMGPRESS_SIGNATURE_TOLERANCE_S", "0"],
    ["IMGPRESS_SIGNATURE_TOLERANCE_S", "86401"],
    ["IMGPRESS_LOG_LEVEL", "verbose"],
    ["IMGPRESS_INTERNAL_ALLOW", "localhost"],
    ["IMGPRESS_USAGE_FLUSH_S", "0"],
    ["IMGPRESS_USAGE_FLUSH_S", "86401"],
    ["IMGPRESS_SHUTDOWN_TIMEOUT_S", "0"],
    ["IMGPRESS_SHUTDOWN_TIMEOUT_S", "never"],
    ["IMGPRESS_SHUTDOWN_TIMEOUT_S", "86401"],
    ["IMGPRESS_DRAIN_DELAY_S", "-1"],
    ["IMGPRESS_DRAIN_DELAY_S", "601"],
    ["IMGPRESS_INTERNAL_ALLOW", "127.0.0.1,10.0.0.0/33"],
    ["IMGPRESS_INTERNAL_ALLOW", "fd00::/129"],
    ["IMGPRESS_INTERNAL_ALLOW", "10.0.0.0/8/8"],
    ["IMGPRESS_TRUSTED_PROXIES", "proxy.local"],
    ["IMGPRESS_MEMORY_BUDGET_MB", "63"],
    ["IMGPRESS_KEY_MAX_ADMITTED", "0"],
    ["IMGPRESS_UPLOAD_MIN_RATE_KIB", "1.5"],
    ["IMGPRESS_UPLOAD_BUDGET_MB", "20"],
    ["IMGPRESS_CLIENT_IPV6_PREFIX", "15"],
    ["IMGPRESS_CLIENT_IPV6_PREFIX", "129"],
    ["IMGPRESS_MEMORY_BUDGET_MB", "1.5"],
    ["IMGPRESS_TRUSTED_PROXIES", ","],
    ["IMGPRESS_STAFF_EMAILS", "@example.com"],
    ["IMGPRESS_STAFF_EMAILS", "*"],
    ["IMGPRESS_STAFF_SESSION_IDLE_S", "30"],
    ["IMGPRESS_STAFF_SESSION_MAX_S", "0"],
    ["IMGPRESS_QUALITY_GUARD", "webp"],
  ])("%s=%p", (variable, value) => {
    const err = configError(() => loadConfig({ [variable]: value }));
    expect(err.message).toContain(variable);
    expect(err.message).toMatch(/expected .+/);
  });

  test.each([
    ["IMGPRESS_CONVERT_TIMEOUT_S", "3000000", "expected a positive number up to 86400."],
    ["IMGPRESS_CONVERT_TIMEOUT_S", "0", "expected a positive number up to 86400."],
    ["IMGPRESS_CONVERT_TIMEOUT_S", "-1", "expected a positive number up to 86400."],
    ["IMGPRESS_DRAIN_DELAY_S", "5s", "expected a number from 0 to 600."],
    ["IMGPRESS_DRAIN_DELAY_S", "601", "expected a number from 0 to 600."],
    ["IMGPRESS_AUDIT_RETENTION_DAYS", "-1", "expected a whole number from 0 to 36500."],
    ["IMGPRESS_AUDIT_RETENTION_DAYS", "36501", "expected a whole number from 0 to 36500."],
    ["IMGPRESS_DATABASE_TIMEOUT_S", "0.5", "expected a number from 1 to 600."],
    ["IMGPRESS_PORT", "-1", "expected a whole number from 0 to 65535."],
    [
      "IMGPRESS_SMTP_URL",
      "smtp://u:p@[bad",
      "expected a URL starting with smtp: or smtps: that is well formed (check the host, port and %-encoding of the password).",
    ],
    ["IMGPRESS_SMTP_URL", "ftp://mail.example.com", "expected a URL starting with smtp: or smtps:."],
    ["IMGPRESS_DATA_DIR", "~/imgpress-data", "expected a full path (~ is expanded by a shell only: write /home/…)."],
    ["IMGPRESS_TLS_KEY", "~", "expected a full path (~ is expanded by a shell only: write /home/…)."],
    [
      "IMGPRESS_METRICS_TOKEN",
      "ünïcödé-tökén-ünïcödé",
      "expected a token of at least 16 characters, printable ASCII only.",
    ],
    ["IMGPRESS_SMTP_URL", "smtp://", "expected an smtp: or smtps: URL with a host (smtp://user:pass@host:587)."],
    // Passwords starting with digits and holding an unencoded # / ?: the parser reads another host, a port and no password.
    [
      "IMGPRESS_SMTP_URL",
      "smtp://user:2024#Summer@smtp.example.com:587",
      `expected a URL starting with smtp: or smtps: whose password is %-encoded (an "@" after the host: write a / ? # or @ in the password as %2F %3F %23 %40).`,
    ],
    [
      "IMGPRESS_DATABASE_URL",
      "postgres://imgpress:5432/Summer@db.example/x",
      `expected a URL starting with ${"file:, postgres:, postgresql:, libsql:, http:, https:, ws:, wss:".split(", ").join(" or ")} whose password is %-encoded (an "@" after the host: write a / ? # or @ in the password as %2F %3F %23 %40).`,
    ],
    [
      "IMGPRESS_DATABASE_URL",
      "postgres://admin:123?Secret@h.example/db",
      `expected a URL starting with ${"file:, postgres:, postgresql:, libsql:, http:, https:, ws:, wss:".split(", ").join(" or ")} whose password is %-encoded (an "@" after the host: write a / ? # or @ in the password as %2F %3F %23 %40).`,
    ],
    [
      "IMGPRESS_DATABASE_URL",
      "postgres:///imgpress",
      "expected a postgres: URL with a host (postgres://user:pass@host:5432/db).",
    ],
    [
      "IMGPRESS_STAFF_EMAILS",
      "not-an-email",
      "expected exact e-mail addresses (bad entry: not-an-email; expected exactly one @ with text before it).",
    ],
    // Entries no normalised address could ever match: refused, not silently matching nobody.
    [
      "IMGPRESS_STAFF_EMAILS",
      "boss@example.com.",
      "expected exact e-mail addresses (bad entry: boss@example.com.; the domain is not valid).",
    ],
    [
      "IMGPRESS_ALLOWED_EMAILS",
      "a..b@example.com",
      "expected *, addresses or @domain entries (bad entry: a..b@example.com; misplaced dot before @).",
    ],
    [
      "IMGPRESS_ALLOWED_EMAILS",
      "@example.com.",
      "expected *, addresses or @domain entries (bad entry: @example.com.; the domain is not valid).",
    ],
    [
      "IMGPRESS_ALLOWED_EMAILS",
      "*@example.com",
      "expected *, addresses or @domain entries (bad entry: *@example.com; a whole domain is written @example.com).",
    ],
    [
      "IMGPRESS_DATABASE_URL",
      "postgres://u:a%zz@db.example/x",
      "expected a PostgreSQL URL whose user name and password are %-encoded (a % in them is written %25).",
    ],
    [
      "IMGPRESS_DATABASE_URL",
      "postgres://u:p@db.example/x?sslmode=verify-ca",
      "expected a PostgreSQL URL whose sslmode is one of disable, prefer, require, verify-full (got verify-ca).",
    ],
    [
      "IMGPRESS_DATABASE_URL",
      "postgresql://u:p@localhost/x?host=/run/postgresql&port=5433",
      "expected a PostgreSQL URL with the host and port in its address (postgres://user:pass@host:5432/db): ?host= and Unix sockets are not supported.",
    ],
    // libSQL would open these in memory: a service that forgets every key at its next start.
    [
      "IMGPRESS_DATABASE_URL",
      "file:",
      "expected a file: URL naming a database file (file:./imgpress-data/imgpress.db), not an empty path or :memory: (the data would be lost at every stop).",
    ],
    [
      "IMGPRESS_DATABASE_URL",
      "file:  ",
      "expected a file: URL naming a database file (file:./imgpress-data/imgpress.db), not an empty path or :memory: (the data would be lost at every stop).",
    ],
    [
      "IMGPRESS_DATABASE_URL",
      "file::memory:",
      "expected a file: URL naming a database file (file:./imgpress-data/imgpress.db), not an empty path or :memory: (the data would be lost at every stop).",
    ],
    [
      "IMGPRESS_DATABASE_URL",
      "file:imgpress.db?mode=memory",
      "expected a file: URL naming a database file (file:./imgpress-data/imgpress.db), not an empty path or :memory: (the data would be lost at every stop).",
    ],
    [
      "IMGPRESS_DATABASE_URL",
      "file:///srv/imgpress/",
      "expected a file: URL naming a database file (file:./imgpress-data/imgpress.db), not a folder.",
    ],
    [
      "IMGPRESS_DATABASE_URL",
      "file://nas/share/imgpress.db",
      "expected a file: URL of a file on this machine (file:/path/imgpress.db or file:///path/imgpress.db, no host).",
    ],
    [
      "IMGPRESS_DATABASE_URL",
      "FILE:imgpress.db",
      "expected a file: URL with its scheme in lower case (file:./imgpress-data/imgpress.db).",
    ],
    [
      "IMGPRESS_DATABASE_URL",
      "file:/srv/100%/imgpress.db",
      "expected a file: URL whose % signs each start an escape (write % itself as %25: file:/srv/100%25/imgpress.db).",
    ],
    [
      "IMGPRESS_TLS_NAMES",
      "nas.local,-nas.lan",
      "expected DNS names (nas.local, *.example.lan) and IP addresses (bad entry: -nas.lan).",
    ],
    [
      "IMGPRESS_TLS_NAMES",
      "nas.local:8443",
      "expected DNS names (nas.local, *.example.lan) and IP addresses (bad entry: nas.local:8443; a name is written without a port).",
    ],
    // Clients read a name ending in digits as an IPv4 address (10.1.2 is 10.1.0.2), never as this name.
    [
      "IMGPRESS_TLS_NAMES",
      "10.1.2",
      "expected DNS names (nas.local, *.example.lan) and IP addresses (bad entry: 10.1.2).",
    ],
    ["IMGPRESS_TLS_NAMES", "*", "expected DNS names (nas.local, *.example.lan) and IP addresses (bad entry: *)."],
    // OpenSSL clients match a wildcard over two labels or more only: *.local matches no NAS.
    [
      "IMGPRESS_TLS_NAMES",
      "*.local",
      "expected DNS names (nas.local, *.example.lan) and IP addresses (bad entry: *.local; a wildcard stands for one label under a name of two labels or more (*.example.lan): name the host itself).",
    ],
    [
      "IMGPRESS_TLS_NAMES",
      "0.0.0.0",
      "expected DNS names (nas.local, *.example.lan) and IP addresses (bad entry: 0.0.0.0; no client connects to this address).",
    ],
    [
      "IMGPRESS_TLS_NAMES",
      "nas.local 192.168.1.10",
      "expected DNS names (nas.local, *.example.lan) and IP addresses (bad entry: nas.local 192.168.1.10; separate names with commas).",
    ],
    [
      "IMGPRESS_TLS_NAMES",
      "fe80::1%eth0",
      "expected DNS names (nas.local, *.example.lan) and IP addresses (bad entry: fe80::1%eth0; a certificate cannot hold an IPv6 zone such as %eth0).",
    ],
  ])("%s=%p says what is allowed, bounds included", (variable, value, expected) => {
    expect(configError(() => loadConfig({ [variable]: value })).message).toBe(`${variable} is invalid: ${expected}`);
  });

  test("every setting in the table is covered above", () => {
    // A new setting with a parser that can refuse should get a row in the table above.
    const refusable = settings.filter((s) => {
      try {
        s.parse("  definitely not valid  ");
        return false;
      } catch {
        return true;
      }
    });
    const covered = new Set([
      "IMGPRESS_HOST",
      "IMGPRESS_PORT",
      "IMGPRESS_DATA_DIR",
      "IMGPRESS_DATABASE_URL",
      "IMGPRESS_DATABASE_AUTH_TOKEN",
      "IMGPRESS_DATABASE_POOL_SIZE",
      "IMGPRESS_DATABASE_TIMEOUT_S",
      "IMGPRESS_TLS_CERT",
      "IMGPRESS_TLS_KEY",
      "IMGPRESS_TLS_NAMES",
      "IMGPRESS_BEHIND_PROXY",
      "IMGPRESS_TRUSTED_PROXIES",
      "IMGPRESS_SMTP_URL",
      "IMGPRESS_MAIL_FROM",
      "IMGPRESS_ALLOWED_EMAILS",
      "IMGPRESS_MASTER_KEY",
      "IMGPRESS_MAX_PIXELS",
      "IMGPRESS_MEMORY_BUDGET_MB",
      "IMGPRESS_CONVERT_TIMEOUT_S",
      "IMGPRESS_UPLOAD_TIMEOUT_S",
      "IMGPRESS_CONCURRENCY",
      "IMGPRESS_QUEUE_SIZE",
      "IMGPRESS_QUEUE_TIMEOUT_S",
      "IMGPRESS_KEY_MAX_ADMITTED",
      "IMGPRESS_UPLOAD_MIN_RATE_KIB",
      "IMGPRESS_UPLOAD_BUDGET_MB",
      "IMGPRESS_CLIENT_IPV6_PREFIX",
      "IMGPRESS_AUTH_SCHEMES",
      "IMGPRESS_SIGNATURE_BODY",
      "IMGPRESS_SIGNATURE_TOLERANCE_S",
      "IMGPRESS_LOG_LEVEL",
      "IMGPRESS_INTERNAL_ALLOW",
      "IMGPRESS_USAGE_FLUSH_S",
      "IMGPRESS_SHUTDOWN_TIMEOUT_S",
      "IMGPRESS_DRAIN_DELAY_S",
      "IMGPRESS_STAFF_EMAILS",
      "IMGPRESS_STAFF_SESSION_IDLE_S",
      "IMGPRESS_STAFF_SESSION_MAX_S",
      "IMGPRESS_AUDIT_RETENTION_DAYS",
      "IMGPRESS_QUALITY_GUARD",
    ]);
    expect(refusable.map((s) => s.env).filter((e) => !covered.has(e))).toEqual([]);
  });
});

describe("command-line flags", () => {
  test("mirror the variables by name", () => {
    expect(flagName("IMGPRESS_DATA_DIR")).toBe("data-dir");
    expect(flagName("IMGPRESS_SIGNATURE_TOLERANCE_S")).toBe("signature-tolerance-s");
  });

  test("win over the environment", () => {
    const config = loadConfig(
      { IMGPRESS_PORT: "1111", IMGPRESS_LOG_LEVEL: "debug", IMGPRESS_BEHIND_PROXY: "false" },
      { port: "2222", "behind-proxy": "true" },
    );
    expect(config).toMatchObject({ port: 2222, behindProxy: true, logLevel: "debug" });
  });

  test("an invalid flag is named as the flag", () => {
    const err = configError(() => loadConfig({ IMGPRESS_PORT: "1111" }, { port: "nope" }));
    expect(err.message).toContain("--port");
  });

  test("a valid flag hides an invalid variable", () => {
    expect(loadConfig({ IMGPRESS_PORT: "nope" }, { port: "3333" }).port).toBe(3333);
  });
});

describe("TLS certificate and key", () => {
  test.each([
    { name: "certificate without key", env: { IMGPRESS_TLS_CERT: "/etc/ssl/cert.pem" } },
    { name: "key without certificate", env: { IMGPRESS_TLS_KEY: "/etc/ssl/key.pem" } },
  ])("$name is refused", ({ env }) => {
    const err = configError(() => loadConfig(env));
    expect(err.message).toContain("IMGPRESS_TLS_CERT");
    expect(err.message).toContain("IMGPRESS_TLS_KEY");
  });

  test("both together are accepted", () => {
    expect(loadConfig({ IMGPRESS_TLS_CERT: "/c.pem", IMGPRESS_TLS_KEY: "/k.pem" })).toMatchObject({
      tlsCert: "/c.pem",
      tlsKey: "/k.pem",
    });
  });

  test("IMGPRESS_TLS_NAMES: names as a certificate holds them (lower case, no trailing dot, IPv6 short), each once", () => {
    expect(loadConfig({}).tlsNames).toEqual([]);
    // An IPv4-mapped address is the IPv4 address clients compare; a non-ASCII name its xn-- form, as clients send it.
    expect(
      loadConfig({
        IMGPRESS_TLS_NAMES:
          " NAS.local, 192.168.1.10,*.Example.LAN,nas.local., 2001:DB8:0:0::1 ,::ffff:10.0.0.1,bücher.local,ＮＡＳ２.local",
      }).tlsNames,
    ).toEqual([
      "nas.local",
      "192.168.1.10",
      "*.example.lan",
      "2001:db8::1",
      "10.0.0.1",
      "xn--bcher-kva.local",
      "nas2.local",
    ]);
    expect(
      configError(() =>
        loadConfig({ IMGPRESS_TLS_NAMES: Array.from({ length: 101 }, (_, i) => `h${i}.example.lan`).join(",") }),
      ).message,
    ).toBe("IMGPRESS_TLS_NAMES is invalid: expected at most 100 names (got 101).");
  });
});

describe("master key", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "imgpress-mk-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test.each([
    { name: "64 hex digits", value: "ab".repeat(32), bytes: Buffer.from("ab".repeat(32), "hex") },
    { name: "base64", value: Buffer.alloc(32, 9).toString("base64"), bytes: Buffer.alloc(32, 9) },
    { name: "base64url", value: Buffer.alloc(32, 251).toString("base64url"), bytes: Buffer.alloc(32, 251) },
  ])("IMGPRESS_MASTER_KEY as $name", async ({ value, bytes }) => {
    const key = await loadMasterKey(loadConfig({ IMGPRESS_DATA_DIR: dir, IMGPRESS_MASTER_KEY: value }));
    expect(Buffer.from(key)).toEqual(bytes);
  });

  test.each([
    { name: "too short", value: "abcd" },
    { name: "31 bytes of hex", value: "ab".repeat(31) },
    { name: "33 bytes of base64", value: Buffer.alloc(33, 1).toString("base64") },
    // Buffer's decoder would skip the characters it cannot read and give another 32-byte key.
    { name: "base64 with a stray character", value: `${Buffer.alloc(32, 9).toString("base64")}!!!` },
    { name: "base64 with a mistyped character", value: Buffer.alloc(32, 9).toString("base64").replace(/^./, "*") },
  ])("IMGPRESS_MASTER_KEY $name is refused, naming the variable", async ({ value }) => {
    const pending = loadMasterKey(loadConfig({ IMGPRESS_DATA_DIR: dir, IMGPRESS_MASTER_KEY: value }));
    await expect(pending).rejects.toBeInstanceOf(ConfigError);
    await expect(pending).rejects.toThrow("IMGPRESS_MASTER_KEY");
  });

  test("a hex key cut short is refused as such, even at 43 digits (which would read as another base64 key)", async () => {
    for (const length of [43, 63]) {
      const pending = loadMasterKey(
        loadConfig({ IMGPRESS_DATA_DIR: dir, IMGPRESS_MASTER_KEY: "ab".repeat(32).slice(0, length) }),
      );
      await expect(pending).rejects.toThrow(
        `IMGPRESS_MASTER_KEY is invalid: it has ${length} hex digits, and a master key in hex has 64`,
      );
    }
  });

  test("without the variable a key file is generated once (mode 0600) and reused", async () => {
    const config = loadConfig({ IMGPRESS_DATA_DIR: dir });
    const first = await loadMasterKey(config);
    const second = await loadMasterKey(config);
    expect(first.length).toBe(32);
    expect(Buffer.from(second)).toEqual(Buffer.from(first));
    const file = join(dir, "master.key");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await readFile(file, "utf8")).trim()).toBe(Buffer.from(first).toString("hex"));
  });
});

describe("ineffectiveSettings", () => {
  test("names settings that do nothing beside the others, and nothing for the defaults", () => {
    expect(ineffectiveSettings(loadConfig({ IMGPRESS_MAIL_FROM: "imgpress@example.com" }))).toEqual([]);
    const said = ineffectiveSettings(
      loadConfig({
        IMGPRESS_BEHIND_PROXY: "true",
        IMGPRESS_TLS_CERT: "/etc/ssl/cert.pem",
        IMGPRESS_TLS_KEY: "/etc/ssl/key.pem",
        IMGPRESS_CONCURRENCY: "1",
        IMGPRESS_QUEUE_SIZE: "0",
        IMGPRESS_KEY_MAX_ADMITTED: "5",
        IMGPRESS_STAFF_SESSION_IDLE_S: "3600",
        IMGPRESS_STAFF_SESSION_MAX_S: "600",
        IMGPRESS_MAIL_FROM: "imgpress@example.com",
      }),
    );
    expect(said).toEqual([
      "IMGPRESS_TLS_CERT and IMGPRESS_TLS_KEY are not used with IMGPRESS_BEHIND_PROXY: the proxy terminates TLS and this instance speaks plain HTTP to it",
      "IMGPRESS_KEY_MAX_ADMITTED (5) is more than the 1 places there are (IMGPRESS_CONCURRENCY + IMGPRESS_QUEUE_SIZE): one key may take them all",
      "IMGPRESS_STAFF_SESSION_IDLE_S (3600) is not below IMGPRESS_STAFF_SESSION_MAX_S (600): sessions end at the maximum before they can go idle",
    ]);
    expect(
      ineffectiveSettings(
        loadConfig({
          IMGPRESS_TLS_NAMES: "nas.local",
          IMGPRESS_TLS_CERT: "/c.pem",
          IMGPRESS_TLS_KEY: "/k.pem",
          IMGPRESS_MAIL_FROM: "imgpress@example.com",
        }),
      ),
    ).toEqual([
      "IMGPRESS_TLS_NAMES is used only for the generated certificate: the certificate in IMGPRESS_TLS_CERT holds its own names",
    ]);
    expect(
      ineffectiveSettings(
        loadConfig({
          IMGPRESS_TLS_NAMES: "nas.local",
          IMGPRESS_BEHIND_PROXY: "true",
          IMGPRESS_MAIL_FROM: "imgpress@example.com",
        }),
      ),
    ).toEqual([
      "IMGPRESS_TLS_NAMES is used only for the generated certificate: behind IMGPRESS_BEHIND_PROXY the proxy's certificate is the one clients see",
    ]);
    expect(
      ineffectiveSettings(
        loadConfig({ IMGPRESS_TRUSTED_PROXIES: "10.0.0.5", IMGPRESS_MAIL_FROM: "imgpress@example.com" }),
      ),
    ).toEqual([
      "IMGPRESS_TRUSTED_PROXIES is used only with IMGPRESS_BEHIND_PROXY=true: X-Forwarded-* headers are ignored",
    ]);
  });

  test("the default sender on a host without a domain in its name is named once SMTP is set", () => {
    const config = { ...loadConfig({ IMGPRESS_SMTP_URL: "smtp://mail.example.com:587" }), mailFrom: "imgpress@nas" };
    expect(ineffectiveSettings(config)).toEqual([
      "IMGPRESS_MAIL_FROM is not set: mail is sent from imgpress@nas, an address without a domain that many mail servers refuse; set IMGPRESS_MAIL_FROM",
    ]);
    expect(ineffectiveSettings({ ...config, smtpUrl: undefined })).toEqual([]);
  });
});

describe("unknownSettings", () => {
  test("names IMGPRESS_ variables no setting reads (typos), not the settings, the loader's cache folder or other variables", () => {
    const env = {
      IMGPRESS_PROT: "9443",
      IMGPRESS_SMTP_ULR: "smtp://x",
      IMGPRESS_PORT: "1",
      IMGPRESS_CACHE_DIR: "/c",
      PATH: "/bin",
      imgpress_port: "2",
    };
    expect(unknownSettings(env)).toEqual(["IMGPRESS_PROT", "IMGPRESS_SMTP_ULR"]);
    expect(unknownSettings({})).toEqual([]);
  });
});
