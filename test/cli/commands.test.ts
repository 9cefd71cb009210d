/**
 * The command line as people expect it, run as real processes: each command's own help, `keys
 * create`, `--json` on every command that prints data, refusals on stderr, one byte formatter.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { COMMANDS } from "../../src/cli/usage.ts";
import { formatBytes } from "../../src/core/bytes.ts";
import { bytes } from "../../src/staff/dashboard/format.ts";
import { photo } from "../support/images.ts";
import { type CliResult, runCli, startServer } from "../support/server.ts";

let dir: string;
let env: Record<string, string>;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "imgpress-cli-"));
  env = { IMGPRESS_DATA_DIR: dir };
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** stdout of a successful run as the one JSON value it must be. */
function parsed(r: CliResult): any {
  expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toMatchObject({ code: 0, stderr: "" });
  return JSON.parse(r.stdout);
}

describe("help for one command", () => {
  test.each(COMMANDS.map((c) => c.name))(
    "imgpress help %s and imgpress %s --help print its own usage",
    async (name) => {
      const command = COMMANDS.find((c) => c.name === name)!;
      for (const argv of [
        ["help", ...name.split(" ")],
        [...name.split(" "), "--help"],
      ]) {
        const r = await runCli(argv, env);
        expect({ argv, code: r.code, stderr: r.stderr }).toEqual({ argv, code: 0, stderr: "" });
        expect(r.stdout).toStartWith(`Usage: imgpress ${name} ${command.synopsis}\n`);
        // Not the global text: no other command's usage line.
        for (const other of COMMANDS.filter((c) => c.name !== name))
          expect(r.stdout).not.toContain(`Usage: imgpress ${other.name} `);
        for (const option of command.options) expect(r.stdout).toContain(`--${option}`);
      }
    },
  );

  test("keys --help lists every keys command and nothing else; help alone is the overview; help of a typo is a usage error", async () => {
    const keys = await runCli(["keys", "--help"], env);
    expect(keys.code).toBe(0);
    for (const c of COMMANDS)
      expect(keys.stdout.includes(`Usage: imgpress ${c.name} `)).toBe(c.name.startsWith("keys "));
    const overview = await runCli(["help"], env);
    expect(overview.stdout).toBe((await runCli(["--help"], env)).stdout);
    expect(overview.stdout).toContain("imgpress help COMMAND");
    const typo = await runCli(["help", "kyes"], env);
    expect({ code: typo.code, stdout: typo.stdout }).toEqual({ code: 2, stdout: "" });
    expect(typo.stderr).toContain('unknown command "kyes"');
  });

  test("serve --help shows the settings' options; a usage error points at the command's own help", async () => {
    expect((await runCli(["serve", "--help"], env)).stdout).toContain("IMGPRESS_ALLOWED_EMAILS");
    const r = await runCli(["keys", "create"], env);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      "imgpress: keys create needs the owner's address: imgpress keys create --email ADDRESS [--site URL] [--json]; see imgpress keys create --help",
    );
  });
});

describe("keys create", () => {
  test("issues a working pair without SMTP or the allowlist, prints it once, audits it as cli, stores no secret", async () => {
    const server = await startServer({ env: { IMGPRESS_ALLOWED_EMAILS: "someone-else@example.com" } });
    try {
      const r = await runCli(
        ["keys", "create", "--email", " Owner@Example.COM ", "--site", "https://Blog.Example.com/"],
        server.env,
      );
      expect(r.code).toBe(0);
      const apiKey = /^api_key: +(imp_\S+)$/m.exec(r.stdout)?.[1];
      const secretKey = /^secret_key: +(imps_\S+)$/m.exec(r.stdout)?.[1];
      expect(apiKey).toBeDefined();
      expect(secretKey).toBeDefined();
      expect(r.stdout).toContain("owner@example.com (https://blog.example.com)");

      // The running server takes the key at once: a real conversion with it.
      const form = new FormData();
      form.set("image", new Blob([new Uint8Array(await photo(64, 48))], { type: "image/jpeg" }), "p.jpg");
      const converted = await server.fetch("/v1/plugin/convert", {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}` },
        body: form,
      });
      expect(converted.status).toBe(200);
      expect(converted.headers.get("content-type")).toBe("image/webp");

      const listed = parsed(await runCli(["keys", "list", "--json"], server.env));
      // (Its usage counters are written in batches, later: not checked here.)
      expect(listed).toMatchObject([
        { email: "owner@example.com", siteUrl: "https://blog.example.com", revokedAt: null },
      ]);
      const audit = parsed(await runCli(["audit", "--type", "key.issued", "--json"], server.env));
      expect(audit).toMatchObject([
        {
          type: "key.issued",
          actor: "cli",
          subject: listed[0].id,
          detail: { owner: "owner@example.com", siteUrl: "https://blog.example.com" },
        },
      ]);
      const everything = [
        r.stdout,
        JSON.stringify(listed),
        JSON.stringify(audit),
        ...server.logs.map((l) => l.raw),
      ].join("\n");
      // Each key appears once: where it was printed, and in no list, audit event or log line.
      expect(everything.split(apiKey!).length).toBe(2);
      expect(everything.split(secretKey!.slice(5)).length).toBe(2);
    } finally {
      await server.stop();
    }
  }, 60_000);

  test("--json gives the pair and what it replaced; a second pair for the same site revokes the first (said on stderr)", async () => {
    const first = parsed(await runCli(["keys", "create", "--email", "a@example.com", "--json"], env));
    expect(Object.keys(first).sort()).toEqual([
      "apiKey",
      "email",
      "id",
      "keyPrefix",
      "replaced",
      "secretKey",
      "siteUrl",
    ]);
    expect(first).toMatchObject({ email: "a@example.com", siteUrl: "", replaced: [] });
    expect(first.apiKey).toStartWith(first.keyPrefix);
    const second = await runCli(["keys", "create", "--email", "a@example.com"], env);
    expect(second.code).toBe(0);
    expect(second.stderr).toContain(`earlier active pair of this address and site (${first.id}) is revoked`);
    const active = parsed(await runCli(["keys", "list", "--json"], env));
    expect(active.map((k: { id: string }) => k.id)).not.toContain(first.id);
    expect(active).toHaveLength(1);
  });

  test.each([
    { argv: ["--email", "not an address"], says: "email is not a valid address" },
    {
      argv: ["--email", "a@example.com", "--site", "ftp://example.com"],
      says: "site_url must start with https:// or http://",
    },
    {
      argv: ["--email", "a@example.com", "--site", "https://user:pw@example.com"],
      says: "site_url must not contain a user name or password",
    },
    { argv: ["--email", "a@example.com", "extra"], says: 'unexpected argument after "imgpress keys create": extra' },
    { argv: ["--email", "a@example.com", "--all"], says: '"imgpress keys create" does not take --all' },
  ])("$argv is refused (exit 2, nothing created, no database made)", async ({ argv, says }) => {
    const r = await runCli(["keys", "create", ...argv], env);
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 2, stdout: "" });
    expect(r.stderr).toContain(says);
    expect(await Bun.file(join(dir, "imgpress.db")).exists()).toBe(false);
  });
});

describe("refusals go to stderr with a non-zero exit", () => {
  test("keys revoke of an unknown id and staff remove of a non-staff address", async () => {
    expect((await runCli(["migrate"], env)).code).toBe(0);
    const revoke = await runCli(["keys", "revoke", "key_0000000000000000"], env);
    expect({ code: revoke.code, stdout: revoke.stdout }).toEqual({ code: 1, stdout: "" });
    expect(revoke.stderr).toContain("no active key with id key_0000000000000000");
    const remove = await runCli(["staff", "remove", "nobody@example.com"], env);
    expect({ code: remove.code, stdout: remove.stdout }).toEqual({ code: 1, stdout: "" });
    expect(remove.stderr).toContain("nobody@example.com is not staff");
  });
});

describe("--json", () => {
  test("staff list and settings", async () => {
    expect((await runCli(["staff", "add", "Boss@Example.com"], env)).code).toBe(0);
    expect(parsed(await runCli(["staff", "list", "--json"], env))).toMatchObject([
      { email: "boss@example.com", addedBy: "cli" },
    ]);
    const shown = parsed(
      await runCli(["settings", "--json"], { ...env, IMGPRESS_SMTP_URL: "smtp://u:pw-secret@mail.example.com:587" }),
    );
    expect(shown).toContainEqual({ env: "IMGPRESS_DATA_DIR", value: dir });
    expect(JSON.stringify(shown)).not.toContain("pw-secret");
  });

  test("health: ready and unreachable, one object on stdout either way", async () => {
    const server = await startServer();
    try {
      const ready = await runCli(["health", "--json", "--url", `${server.url}/health/ready`], env);
      expect(ready.code).toBe(0);
      expect(JSON.parse(ready.stdout)).toMatchObject({
        url: `${server.url}/health/ready`,
        ready: true,
        status: 200,
        body: { status: "ready" },
      });
    } finally {
      await server.stop();
    }
    const gone = await runCli(["health", "--json", "--url", "https://u:pw-secret@127.0.0.1:1/health/ready"], env);
    expect(gone.code).toBe(1);
    expect(JSON.parse(gone.stdout)).toMatchObject({
      url: "https://u:******@127.0.0.1:1/health/ready",
      ready: false,
      error: expect.any(String),
    });
    expect(gone.stdout + gone.stderr).not.toContain("pw-secret");
  }, 60_000);

  test("backup, restore and migrate-data: the object alone on stdout, the advice on stderr", async () => {
    expect((await runCli(["keys", "create", "--email", "a@example.com"], env)).code).toBe(0);
    const file = join(dir, "b.db");
    const backup = parsed(await runCli(["backup", file, "--json"], env));
    expect(backup).toMatchObject({ file, keyPairs: 1, revokedKeyPairs: 0, withMasterKey: true });
    expect(backup.bytes).toBeGreaterThan(0);
    const other = await mkdtemp(join(tmpdir(), "imgpress-cli-restore-"));
    try {
      const restore = await runCli(["restore", file, "--json"], { IMGPRESS_DATA_DIR: other });
      const report = parsed(restore);
      expect(report).toMatchObject({
        restored: file,
        into: join(other, "imgpress.db"),
        keyPairs: 1,
        revokedKeyPairs: 0,
        migrationsApplied: [],
        previousDatabase: null,
      });
      const copied = await runCli(
        [
          "migrate-data",
          "--from",
          `file:${join(other, "imgpress.db")}`,
          "--to",
          `file:${join(other, "copy.db")}`,
          "--json",
        ],
        env,
      );
      const counts = parsed(copied);
      expect(counts.tables).toContainEqual({ table: "api_keys", source: 1, target: 1 });
      expect(counts.rows).toBe(counts.tables.reduce((n: number, t: { target: number }) => n + t.target, 0));
      expect(copied.stderr).toContain("SAME master key");
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  }, 60_000);
});

test("one byte formatter: the dashboard's is the CLI's", () => {
  expect(bytes).toBe(formatBytes);
  expect(formatBytes(5 * 1024 * 1024)).toBe("5.0 MiB");
});
