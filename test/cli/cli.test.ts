/**
 * The `imgpress` command line, run as a real process (`bun src/main.ts …`, or the runtime chosen by
 * E2E_RUNTIME) against a database in a temporary data folder.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import pkg from "../../package.json" with { type: "json" };
import { migrateReport } from "../../src/cli/index.ts";
import { settings } from "../../src/core/config.ts";
import { readableByOthers } from "../../src/core/files.ts";
import { sqliteMigrations } from "../../src/data/db/migrations.gen.ts";
import type { IssuedKey } from "../../src/data/keys/service.ts";
import { boot } from "../../src/server/boot.ts";
import { secretFlags } from "../../src/staff/settings-view.ts";
import { type CliResult, e2eRuntime, runCli, startServer } from "../support/server.ts";

let dir: string;
let env: Record<string, string>;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "imgpress-cli-"));
  env = { IMGPRESS_DATA_DIR: dir };
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Issues keys straight into the data folder's database, as the server would, then closes it. */
async function seedKeys(owners: { email: string; site?: string }[]): Promise<IssuedKey[]> {
  const booted = await boot({ env, loadDocsAsset: async () => new Blob([""]), write: () => {} });
  try {
    const out: IssuedKey[] = [];
    for (const o of owners) out.push(await booted.services.keys.issue(o.email, o.site ?? ""));
    return out;
  } finally {
    booted.store.close();
  }
}

/** Everything the process wrote. */
const output = (r: CliResult) => `${r.stdout}\n${r.stderr}`;

function expectNoSecrets(result: CliResult, keys: IssuedKey[]) {
  for (const k of keys) {
    expect(output(result)).not.toContain(k.apiKey);
    expect(output(result)).not.toContain(k.secretKey);
    expect(output(result)).not.toContain(new Bun.CryptoHasher("sha256").update(k.apiKey).digest("hex"));
  }
}

describe("--help and --version", () => {
  test.each(["--help", "-h"])("%s prints usage, every command and every variable", async (flag) => {
    const r = await runCli([flag]);
    expect(r.code).toBe(0);
    for (const word of ["Usage", "keys list", "keys revoke", "migrate", "migrate-data --from URL --to URL"])
      expect(r.stdout).toContain(word);
    for (const s of settings) expect(r.stdout).toContain(s.env);
  });

  test.each(["--version", "-v"])("%s prints the package version", async (flag) => {
    const r = await runCli([flag]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`imgpress ${pkg.version}`);
  });

  test("an unknown command exits 2", async () => {
    const r = await runCli(["frobnicate"], env);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe('imgpress: unknown command "frobnicate"; see imgpress --help');
  });

  test("usage errors of keys, staff and audit go to stderr, prefixed, exit 2; an address that is not one is one of them", async () => {
    for (const args of [
      ["keys"],
      ["keys", "bogus"],
      ["keys", "revoke"],
      ["staff"],
      ["staff", "add"],
      ["audit", "--since", "forever"],
      ["keys", "revoke", "imp_pasted-key"],
      ["keys", "revoke-email", "not an email"],
      ["staff", "add", "notanemail"],
    ]) {
      const r = await runCli(args, env);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: "" });
      // Pointing at the command's own help when the words name one (`see imgpress keys revoke --help`).
      expect(r.stderr.trim().split("\n").at(-1)).toMatch(/^imgpress: .*; see imgpress ([a-z-]+ )*--help$/);
    }
    expect((await runCli(["keys", "revoke-email", "not an email"], env)).stderr).toContain(
      "email is not a valid address",
    );
  });
});

describe("keys list", () => {
  test("on an empty database says so", async () => {
    expect((await runCli(["migrate"], env)).code).toBe(0);
    const r = await runCli(["keys", "list"], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("no keys");
    // No SMTP server is configured, but a command sends no e-mail: no development-transport warning.
    expect(r.stderr).not.toContain("IMGPRESS_SMTP_URL");
  });

  test("shows each key by id, prefix, owner and site, never a secret", async () => {
    const keys = await seedKeys([
      { email: "alice@example.com", site: "https://blog.example.com" },
      { email: "bob@example.com" },
    ]);
    const r = await runCli(["keys", "list"], env);
    expect(r.code).toBe(0);
    for (const k of keys) {
      expect(r.stdout).toContain(k.id);
      expect(r.stdout).toContain(k.keyPrefix);
    }
    expect(r.stdout).toContain("alice@example.com");
    expect(r.stdout).toContain("https://blog.example.com");
    expectNoSecrets(r, keys);
  });

  test("--json prints rows without hash or sealed secret", async () => {
    const keys = await seedKeys([{ email: "alice@example.com" }]);
    const r = await runCli(["keys", "list", "--json"], env);
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as Record<string, unknown>[];
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      id: keys[0]!.id,
      email: "alice@example.com",
      keyPrefix: keys[0]!.keyPrefix,
      revokedAt: null,
    });
    expect(Object.keys(rows[0]!)).not.toContain("keyHash");
    expect(Object.keys(rows[0]!)).not.toContain("secretSealed");
    expectNoSecrets(r, keys);
  });

  test("--email filters by owner", async () => {
    const [alice, bob] = await seedKeys([{ email: "alice@example.com" }, { email: "bob@example.com" }]);
    const r = await runCli(["keys", "list", "--email", " BOB@example.com "], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(bob!.id);
    expect(r.stdout).not.toContain(alice!.id);
  });

  test("--email finds an address with a Unicode domain as the user typed it (stored in ASCII form)", async () => {
    const [owner] = await seedKeys([{ email: "ünï@xn--bcher-kva.example" }, { email: "bob@example.com" }]);
    const r = await runCli(["keys", "list", "--email", "ÜNÏ@Bücher.example"], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(owner!.id);
  });
});

describe("keys revoke", () => {
  test("revokes by id: gone from the list, shown as revoked with --all", async () => {
    const [key, other] = await seedKeys([{ email: "alice@example.com" }, { email: "bob@example.com" }]);
    const revoked = await runCli(["keys", "revoke", key!.id], env);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(key!.id);

    const active = await runCli(["keys", "list"], env);
    expect(active.stdout).not.toContain(key!.id);
    expect(active.stdout).toContain(other!.id);

    const all = await runCli(["keys", "list", "--all", "--json"], env);
    const rows = JSON.parse(all.stdout) as { id: string; revokedAt: number | null }[];
    expect(rows.find((r) => r.id === key!.id)?.revokedAt).toEqual(expect.any(Number));
    expect(rows.find((r) => r.id === other!.id)?.revokedAt).toBeNull();

    const table = await runCli(["keys", "list", "--all"], env);
    const line = table.stdout.split("\n").find((l) => l.includes(key!.id))!;
    expect(line).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d.*\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/); // created … revoked
  });

  test.each([
    { name: "an unknown id", id: () => "key_0000000000000000" },
    { name: "an id revoked already", id: (k: IssuedKey) => k.id, revokeFirst: true },
  ])("$name exits 1", async ({ id, revokeFirst }) => {
    const [key] = await seedKeys([{ email: "alice@example.com" }]);
    if (revokeFirst) expect((await runCli(["keys", "revoke", key!.id], env)).code).toBe(0);
    const r = await runCli(["keys", "revoke", id(key!)], env);
    expect(r.code).toBe(1);
  });

  test("a pasted key instead of its id is refused without printing it back, and nothing is revoked", async () => {
    const [key] = await seedKeys([{ email: "alice@example.com" }]);
    for (const pasted of [key!.apiKey, `imps_${"x".repeat(40)}`]) {
      const r = await runCli(["keys", "revoke", pasted], env);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("not its id");
      expect(output(r)).not.toContain(pasted);
    }
    expect((await runCli(["keys", "list"], env)).stdout).toContain(key!.id);
  });

  test("a second id, an unknown option or a typo is refused (exit 2) and nothing is revoked", async () => {
    const [a, b] = await seedKeys([{ email: "alice@example.com" }, { email: "bob@example.com" }]);
    for (const argv of [
      ["keys", "revoke", a!.id, b!.id],
      ["keys", "revoke", a!.id, "--frob"],
      ["keys", "revoke", "--al", a!.id],
    ]) {
      const r = await runCli(argv, env);
      expect({ argv, code: r.code }).toEqual({ argv, code: 2 });
      expect(r.stderr).toContain("see imgpress keys revoke --help");
    }
    const list = (await runCli(["keys", "list"], env)).stdout;
    expect(list).toContain(a!.id);
    expect(list).toContain(b!.id);
  });

  test("revoke without an id prints the usage and exits 2", async () => {
    const r = await runCli(["keys", "revoke"], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("usage");
  });

  test("revoke-email revokes every key of an address", async () => {
    const [a1, a2, b] = await seedKeys([
      { email: "alice@example.com" },
      { email: "alice@example.com", site: "https://x.example.com" },
      { email: "bob@example.com" },
    ]);
    const r = await runCli(["keys", "revoke-email", "alice@example.com"], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("2");
    const active = await runCli(["keys", "list"], env);
    expect(active.stdout).not.toContain(a1!.id);
    expect(active.stdout).not.toContain(a2!.id);
    expect(active.stdout).toContain(b!.id);
    // Each revoked key is in the audit trail, as a single revoke is.
    const audit = await runCli(["audit", "--type", "key.revoked", "--json"], env);
    expect(audit.code).toBe(0);
    for (const key of [a1!, a2!]) expect(audit.stdout).toContain(key.id);
    expect(audit.stdout).not.toContain(b!.id);
  });
});

describe("secrets given as flags", () => {
  test("are named in a warning (visible in ps and shell history), with the variable to use instead; other flags are not", async () => {
    const key = "ab".repeat(32);
    const r = await runCli(
      [
        "migrate",
        "--master-key",
        key,
        "--smtp-url",
        "smtp://mailer:pw-in-url@mail.example.com:587",
        "--log-level",
        "warn",
      ],
      env,
    );
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      "imgpress: warning: --smtp-url, --master-key on the command line are visible to every user of this machine (ps) and kept in shell history; use IMGPRESS_SMTP_URL in the environment (an env file); IMGPRESS_MASTER_KEY in the environment (an env file) instead",
    );
    expect(r.stderr).not.toContain(key);
    expect(r.stderr).not.toContain("pw-in-url");
    // A URL with an empty password or none carries no secret.
    const plain = await runCli(
      ["migrate", "--smtp-url", "smtp://mailer:@mail.example.com:587", "--master-key", key],
      env,
    );
    expect(plain.stderr).toContain("warning: --master-key on the command line is visible");
    expect(plain.stderr).not.toContain("--smtp-url");
    // migrate-data's URLs are flags of their own; the warning comes before its usage check.
    const copy = await runCli(
      [
        "migrate-data",
        "--from",
        `file:${join(dir, "imgpress.db")}`,
        "--to",
        "postgres://app:pw-in-url@127.0.0.1:1/imgpress",
      ],
      env,
    );
    expect(copy.stderr).toContain(
      "imgpress: warning: --to on the command line is visible to every user of this machine (ps) and kept in shell history; use the URL of --to without its password or token, and PGPASSWORD in the environment instead",
    );
  });

  test("secretFlags: a leading space hides nothing, a libSQL token gets its own variable, a file named by sslkey is no secret", () => {
    expect(secretFlags({ "smtp-url": " smtp://u:pw@mail.example.com:587" }).map((f) => f.flag)).toEqual(["--smtp-url"]);
    expect(secretFlags({ from: "libsql://db.example.com?authToken=abc" })[0]?.instead).toContain(
      "IMGPRESS_DATABASE_AUTH_TOKEN",
    );
    expect(
      secretFlags({ to: "postgres://app@db.example.com/imgpress?sslmode=verify-full&sslkey=/etc/imgpress/client.key" }),
    ).toEqual([]);
  });
});

describe("migrate and configuration errors", () => {
  test("migrate prepares the database and exits 0; a data folder and database it creates are owner-only", async () => {
    const fresh = join(dir, "new", "data");
    const r = await runCli(["migrate"], { IMGPRESS_DATA_DIR: fresh });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("up to date");
    expect(statSync(fresh).mode & 0o777).toBe(0o700);
    // The database and its write-ahead files are owner-only too, whatever the umask.
    for (const name of ["imgpress.db", "imgpress.db-wal", "imgpress.db-shm"].filter((n) =>
      existsSync(join(fresh, n)),
    )) {
      expect([name, statSync(join(fresh, name)).mode & 0o777]).toEqual([name, 0o600]);
    }
  });

  test("a database an older version left readable by others is named, with the chmod that fixes it", async () => {
    const folder = join(dir, "older-modes");
    expect((await runCli(["migrate"], { IMGPRESS_DATA_DIR: folder })).code).toBe(0);
    const file = join(folder, "imgpress.db");
    const check = () => readableByOthers(file, "the database", "it holds e-mail addresses");
    expect(await check()).toBeNull();
    chmodSync(folder, 0o755);
    chmodSync(file, 0o644);
    expect(await check()).toBe(
      `the database ${file} can be read by other users of this machine (folder mode 0755, file mode 0644): it holds e-mail addresses`,
    );
    chmodSync(folder, 0o700);
    expect(await check()).toBeNull();
  });

  test("migrate names the migrations it applied, and says when there was none to apply", async () => {
    const fresh = join(dir, "migrate-report", "data");
    const first = await runCli(["migrate"], { IMGPRESS_DATA_DIR: fresh });
    expect(first.code).toBe(0);
    const tags = sqliteMigrations.map((m) => m.tag);
    expect(first.stdout.trim()).toBe(`applied ${tags.length} migrations (${tags.join(", ")}); database is up to date`);
    // The log line a server writes at the start that migrated (the CLI sends its log to stderr).
    expect(first.stderr).toContain('"msg":"database migrated"');
    const again = await runCli(["migrate"], { IMGPRESS_DATA_DIR: fresh });
    expect(again.code).toBe(0);
    expect(again.stdout.trim()).toBe("database is up to date: no migration to apply");
    expect(again.stderr).not.toContain("database migrated");
  });

  test("a new, empty database beside an existing master key (a lost or emptied database file) is warned about", async () => {
    const folder = join(dir, "lost-db");
    expect((await runCli(["migrate"], { IMGPRESS_DATA_DIR: folder })).code).toBe(0);
    await rm(join(folder, "imgpress.db"));
    writeFileSync(join(folder, "imgpress.db"), "");
    // A command that only reads or changes what the database holds refuses the empty file and changes nothing.
    const listed = await runCli(["keys", "list"], { IMGPRESS_DATA_DIR: folder });
    expect({ code: listed.code, stderr: listed.stderr.trim() }).toEqual({
      code: 1,
      stderr: expect.stringContaining(
        `imgpress: no database at ${join(folder, "imgpress.db")} (no file, or an empty one)`,
      ),
    });
    expect(statSync(join(folder, "imgpress.db")).size).toBe(0);
    const r = await runCli(["migrate"], { IMGPRESS_DATA_DIR: folder });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`a new, empty database was created beside the existing ${join(folder, "master.key")}`);
    // A first start, where the key is made with the database, says nothing of the kind.
    expect((await runCli(["migrate"], { IMGPRESS_DATA_DIR: join(dir, "first-start") })).stderr).not.toContain(
      "new, empty database",
    );
  });

  test("migrateReport: one migration is singular", () => {
    expect(migrateReport(["0007_x"])).toBe("applied 1 migration (0007_x); database is up to date");
  });

  test("serve on an address it cannot listen on: one line naming it, exit 1, no pid record left", async () => {
    const r = await runCli(["serve"], { ...env, IMGPRESS_HOST: "999.1.1.1", IMGPRESS_PORT: "0" });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "imgpress: cannot listen on 999.1.1.1:0 (IMGPRESS_HOST, IMGPRESS_PORT): no address has that name",
    );
    expect(existsSync(join(dir, "imgpress.db.pid"))).toBe(false);
  });

  // Deno without --allow-run cannot check that the pid is alive and starts without a record (test/e2e/pidfile.e2e.test.ts).
  test.skipIf(e2eRuntime() === "deno")(
    "serve refused by a live server's record has not opened or migrated the database",
    async () => {
      const fresh = join(dir, "claimed");
      mkdirSync(fresh, { recursive: true });
      // This test process stands in for the live server.
      writeFileSync(join(fresh, "imgpress.db.pid"), `${process.pid}\n`);
      const r = await runCli(["serve"], { IMGPRESS_DATA_DIR: fresh, IMGPRESS_PORT: "0" });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`another server (pid ${process.pid}) is already serving`);
      expect(r.stderr + r.stdout).not.toContain("database migrated");
      expect(existsSync(join(fresh, "imgpress.db"))).toBe(false);
      expect(existsSync(join(fresh, "imgpress.db.pid"))).toBe(true);
    },
  );

  test("a data folder under a file: one line saying a part of its path is a file", async () => {
    const file = join(dir, "a-file");
    writeFileSync(file, "x");
    const r = await runCli(["migrate"], { IMGPRESS_DATA_DIR: join(file, "sub") });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toEqual([
      expect.stringContaining(
        `${join(file, "sub")} (the database's folder) cannot be created: a part of its path is a file, not a folder`,
      ),
    ]);
  });

  test("a data folder this user may not create: one line naming the folder and the setting", async () => {
    // sysfs refuses every mkdir, root's too (EPERM); elsewhere a non-root user gets EACCES.
    const r = await runCli(["serve"], { ...env, IMGPRESS_DATA_DIR: "/sys/imgpress-data" });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(
        /^imgpress: \/sys\/imgpress-data \(the database's folder\) cannot be created \((EPERM|EACCES)\): this user may not write where it would go; choose a folder it can write with IMGPRESS_DATA_DIR$/,
      ),
    ]);
  });

  test("serve on a port another server listens on: refused (EADDRINUSE), never sharing it", async () => {
    const first = await startServer();
    try {
      const r = await runCli(["serve"], { ...env, IMGPRESS_HOST: "127.0.0.1", IMGPRESS_PORT: String(first.port) });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`imgpress: cannot listen on 127.0.0.1:${first.port} (IMGPRESS_HOST, IMGPRESS_PORT)`);
      expect(r.stdout).not.toContain("imgpress listening");
      // An IPv6 address is written as in a URL, so the port does not read as a part of it.
      const v6 = await runCli(["serve"], { ...env, IMGPRESS_HOST: "::", IMGPRESS_PORT: String(first.port) });
      expect(v6.stderr).toContain(`imgpress: cannot listen on [::]:${first.port} (IMGPRESS_HOST, IMGPRESS_PORT)`);
      expect((await first.fetch("/health")).status).toBe(200);
    } finally {
      await first.stop();
    }
  });

  test("health on a server whose database another process holds locked names the failing check, not 'unreachable'", async () => {
    const server = await startServer();
    const other = createClient({ url: `file:${join(server.dataDir, "imgpress.db")}` });
    const tx = await other.transaction("write");
    try {
      const r = await runCli(["health", "--url", `${server.url}/health/ready`], env);
      expect(r.code).toBe(1);
      // Not ready is an error: on stderr, stdout left empty.
      expect(r.stdout).toBe("");
      expect(r.stderr).toStartWith("503 ");
      expect(r.stderr).toContain('"database":"write failed"');
    } finally {
      await tx.rollback();
      tx.close();
      other.close();
      await server.stop();
    }
  }, 30_000);

  test("health: a password in --url is never printed; IMGPRESS_PORT=0 asks for --url instead of probing port 443", async () => {
    const r = await runCli(["health", "--url", "https://probe:s3cret-pw@127.0.0.1:1/health/ready"], env);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toStartWith("unreachable: https://probe:******@127.0.0.1:1/health/ready: ");
    expect(r.stdout + r.stderr).not.toContain("s3cret-pw");
    const zero = await runCli(["health"], { ...env, IMGPRESS_PORT: "0" });
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain("IMGPRESS_PORT is 0 (any free port): give the server's address with --url");
  });

  test("health --url that is not a URL is a usage error (exit 2)", async () => {
    const r = await runCli(["health", "--url", "garbage"], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--url is not a URL: garbage");
  });

  test("a data folder that is a file: one line saying so, exit 1", async () => {
    const file = join(env.IMGPRESS_DATA_DIR!, "not-a-folder");
    mkdirSync(env.IMGPRESS_DATA_DIR!, { recursive: true });
    writeFileSync(file, "x");
    const r = await runCli(["migrate"], { IMGPRESS_DATA_DIR: file });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toEqual([
      expect.stringContaining(`${file} (the database's folder) exists but is not a folder`),
    ]);
  });

  test.each([
    { variable: "IMGPRESS_PORT", value: "not-a-port" },
    { variable: "IMGPRESS_LOG_LEVEL", value: "loud" },
    { variable: "IMGPRESS_BEHIND_PROXY", value: "perhaps" },
    { variable: "IMGPRESS_MASTER_KEY", value: "too-short" },
  ])("an invalid $variable exits 2 and names the variable", async ({ variable, value }) => {
    expect((await runCli(["migrate"], env)).code).toBe(0);
    const r = await runCli(["keys", "list"], { ...env, [variable]: value });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(variable);
  });

  test("an invalid flag exits 2 and names the flag", async () => {
    const r = await runCli(["keys", "list", "--log-level", "loud"], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--log-level");
  });
});
