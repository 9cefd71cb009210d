/**
 * `imgpress backup` during a conversion burst on a running server, `imgpress restore` into a new
 * folder, and a server started there: every key issued before the backup converts (bearer and
 * signed, so the master key came along) and the usage counters match. Restore refuses while a
 * server uses the folder and refuses a damaged snapshot without changing anything.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, statSync } from "node:fs";
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { convertForm, type Keys, readResponse } from "../support/convert-helpers.ts";
import * as img from "../support/images.ts";
import { cleanEnv } from "../support/imgpress.ts";
import { burstForm, convertBearer, gateStats, obtainKeys, until } from "../support/ops.ts";
import { e2eRuntime, ROOT, type RunningServer, runCli, runtimeCommand, startServer } from "../support/server.ts";
import { signedHeaders } from "../support/sign.ts";
import { type SmtpSink, startSmtpSink } from "../support/smtp.ts";

let sink: SmtpSink;
let server: RunningServer;
let tmp: string;
let quiet: Keys[];
let busy: Keys;
let image: Uint8Array;
/** Key counters just before and just after the backup's burst. */
let usage: { before: KeyListRow[]; after: KeyListRow[] };

interface KeyListRow {
  id: string;
  keyPrefix: string;
  conversions: number;
  bytesIn: number;
  bytesOut: number;
  revokedAt: number | null;
}

async function keyList(env: Record<string, string>): Promise<KeyListRow[]> {
  const r = await runCli(["keys", "list", "--all", "--json"], env);
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout);
}

async function signedConvert(target: RunningServer, keys: Keys) {
  const body = await convertForm(image);
  const headers = signedHeaders({
    apiKey: keys.api_key,
    secretKey: keys.secret_key,
    timestamp: Math.floor(Date.now() / 1000),
    body: body.bytes,
  });
  return readResponse(
    await target.fetch("/v1/plugin/convert", {
      method: "POST",
      body: body.bytes as Uint8Array<ArrayBuffer>,
      headers: { "content-type": body.contentType, ...headers },
    }),
  );
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "imgpress-backup-"));
  sink = await startSmtpSink();
  server = await startServer({
    env: { IMGPRESS_SMTP_URL: sink.url, IMGPRESS_CONCURRENCY: "1", IMGPRESS_QUEUE_SIZE: "8" },
  });
  image = await img.photo(640, 480);
  quiet = [await obtainKeys(server, sink, "one@example.com"), await obtainKeys(server, sink, "two@example.com")];
  busy = await obtainKeys(server, sink, "busy@example.com");
  for (const k of quiet) expect((await convertBearer(server, k.api_key, await convertForm(image))).status).toBe(200);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await sink?.close();
  await rm(tmp, { recursive: true, force: true });
});

describe("backup during a burst, restore into a new folder", () => {
  const file = () => join(tmp, "snapshot.db");
  const fresh = () => join(tmp, "restored");

  test("backup while converting: exit 0, says it holds the master key, file mode 0600", async () => {
    const before = await keyList(server.env);
    const big = await burstForm(await img.photo(2000, 1500));
    const burst = Array.from({ length: 4 }, () => convertBearer(server, busy.api_key, big));
    await until(async () => (await gateStats(server)).admitted >= 2, 20_000, "the burst to start");
    const backup = await runCli(["backup", file()], server.env);
    expect(backup.code).toBe(0);
    expect(backup.stdout).toContain(`backup written: ${file()}`);
    expect(backup.stdout).toContain("master key");
    expect(backup.stdout).toContain("Keep it like a password");
    for (const r of await Promise.all(burst)) expect(r.status).toBe(200);
    expect(await Bun.file(file()).exists()).toBe(true);
    expect(statSync(file()).mode & 0o777).toBe(0o600);
    // A second backup never overwrites the first.
    const again = await runCli(["backup", file()], server.env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("already exists");
    usage = { before, after: await keyList(server.env) };
  }, 120_000);

  test("restore refuses while the server uses the folder, and changes nothing", async () => {
    const dbBefore = await readFile(join(server.dataDir, "imgpress.db"));
    const r = await runCli(["restore", file()], server.env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/a server \(pid \d+\) is using/);
    expect(readdirSync(server.dataDir).filter((f) => f.includes("restore"))).toEqual([]);
    expect((await readFile(join(server.dataDir, "imgpress.db"))).equals(dbBefore)).toBe(true);
  });

  // A second server on the folder would overwrite the pid record and, stopping, delete it: a
  // restore could then replace the database under the first one.
  test("a second server on the same folder is refused; the first keeps its record, so restore still refuses", async () => {
    // Same port too: the record is claimed before listening, so this is the answer, not "port in use".
    const second = await runCli(["serve"], server.env);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/another server \(pid \d+\) is already serving .*imgpress\.db; stop it first/);
    const r = await runCli(["restore", file()], server.env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/a server \(pid \d+\) is using/);
    expect((await server.fetch("/health")).status).toBe(200);
  });

  test("restore refuses a damaged snapshot before touching anything", async () => {
    const damaged = join(tmp, "damaged.db");
    const bytes = await readFile(file());
    bytes.fill(0x55, 4096, Math.min(bytes.length, 4096 * 3)); // overwrite pages 2–3
    await writeFile(damaged, bytes);
    const dir = join(tmp, "damaged-target");
    const r = await runCli(["restore", damaged], { IMGPRESS_DATA_DIR: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /restore refused, nothing changed: .*(integrity check|not a readable SQLite database|malformed)/,
    );
    expect(existsSync(join(dir, "imgpress.db"))).toBe(false);
    const garbage = join(tmp, "garbage.db");
    await writeFile(garbage, "not a database at all".repeat(100));
    const g = await runCli(["restore", garbage], { IMGPRESS_DATA_DIR: dir });
    expect(g.code).toBe(1);
    expect(g.stderr).toContain("restore refused, nothing changed");
  });

  test("restored into a new folder: every key converts (bearer and signed), usage counters match", async () => {
    const r = await runCli(["restore", file()], { IMGPRESS_DATA_DIR: fresh() });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("integrity check ok");
    // Run in the wrong folder, restore would succeed where no server looks: a new folder is said.
    expect(r.stderr).toContain(
      `note: ${fresh()} did not exist and was created; if your server uses another folder, set IMGPRESS_DATA_DIR (or --data-dir) to it`,
    );
    // The record restore held while it replaced the file is gone.
    expect(existsSync(join(fresh(), "imgpress.db.pid"))).toBe(false);
    const { before, after } = usage;
    const restored = await keyList({ IMGPRESS_DATA_DIR: fresh() });
    expect(restored.map((k) => k.id).sort()).toEqual(before.map((k) => k.id).sort());
    for (const row of restored) {
      const was = before.find((k) => k.id === row.id)!;
      const now = after.find((k) => k.id === row.id)!;
      // Keys idle during the backup match exactly; the busy key lies between before and after the burst.
      expect(row.conversions).toBeGreaterThanOrEqual(was.conversions);
      expect(row.conversions).toBeLessThanOrEqual(now.conversions);
      if (was.conversions === now.conversions) expect(row).toEqual(was);
    }
    const there = await startServer({ dataDir: fresh() });
    try {
      for (const k of [...quiet, busy]) {
        expect((await convertBearer(there, k.api_key, await convertForm(image))).status).toBe(200);
        expect((await signedConvert(there, k)).status).toBe(200);
      }
    } finally {
      await there.stop();
    }
  }, 60_000);

  test("--without-key: the output says the file cannot unseal secrets alone; restore keeps the folder's key and warns", async () => {
    const bare = join(tmp, "bare.db");
    const b = await runCli(["backup", bare, "--without-key"], server.env);
    expect(b.code).toBe(0);
    expect(b.stdout).toContain("holds no master key");
    const dir = join(tmp, "bare-target");
    const r = await runCli(["restore", bare], { IMGPRESS_DATA_DIR: dir });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("holds no master key");
    expect(r.stderr).toContain("this folder has none: before starting the server, put the key");
    expect(existsSync(join(dir, "master.key"))).toBe(false);
    // Started without it, every command refuses and names the missing file; no new key is made up.
    for (const argv of [["keys", "list"], ["serve"]]) {
      const started = await runCli(argv, { IMGPRESS_DATA_DIR: dir });
      expect(started.code).toBe(2);
      expect(started.stderr).toContain(
        `the master key file ${join(dir, "master.key")} is missing, and this database was created with a master key`,
      );
      expect(existsSync(join(dir, "master.key"))).toBe(false);
    }
  }, 30_000);

  test("--without-key restore: refused into a folder with another master key, quiet with the same one", async () => {
    const bare = join(tmp, "bare-pinned.db");
    expect((await runCli(["backup", bare, "--without-key"], server.env)).code).toBe(0);

    const other = join(tmp, "other-key");
    await runCli(["migrate"], { IMGPRESS_DATA_DIR: other }); // a folder of its own, with its own generated key
    const refused = await runCli(["restore", bare], { IMGPRESS_DATA_DIR: other });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("restore refused, nothing changed");
    expect(refused.stderr).toContain(join(other, "master.key"));
    expect(readdirSync(other).filter((name) => name.includes("before-restore"))).toEqual([]);

    const same = join(tmp, "same-key");
    await runCli(["migrate"], { IMGPRESS_DATA_DIR: same });
    await copyFile(join(server.env.IMGPRESS_DATA_DIR!, "master.key"), join(same, "master.key"));
    const restored = await runCli(["restore", bare], { IMGPRESS_DATA_DIR: same });
    expect(restored.code).toBe(0);
    expect(restored.stderr).not.toContain("holds no master key");
    expect((await runCli(["keys", "list"], { IMGPRESS_DATA_DIR: same })).code).toBe(0);
  }, 30_000);

  test("restore over an existing database keeps the old one aside", async () => {
    const dir = join(tmp, "existing");
    await runCli(["restore", file()], { IMGPRESS_DATA_DIR: dir });
    const r = await runCli(["restore", file()], { IMGPRESS_DATA_DIR: dir });
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain("did not exist");
    const aside = /previous database kept as (\S+)/.exec(r.stdout)?.[1];
    expect(aside).toBeDefined();
    expect(existsSync(aside!)).toBe(true);
    await copyFile(aside!, join(tmp, "aside-copy.db")); // still a readable file
  }, 30_000);

  test("a rollback journal beside the old database goes aside with it, not onto the restored one", async () => {
    const dir = join(tmp, "stale-journal");
    expect((await runCli(["restore", file()], { IMGPRESS_DATA_DIR: dir })).code).toBe(0);
    // Left by a crash of a process that had switched the file out of WAL: SQLite would replay it
    // into whatever file then bears the name.
    const journal = "stale journal pages";
    await writeFile(join(dir, "imgpress.db-journal"), journal);
    const r = await runCli(["restore", file()], { IMGPRESS_DATA_DIR: dir });
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain("did not exist");
    const aside = /previous database kept as (\S+)/.exec(r.stdout)?.[1];
    expect(existsSync(join(dir, "imgpress.db-journal"))).toBe(false);
    expect(await readFile(`${aside}-journal`, "utf8")).toBe(journal);
    expect((await runCli(["keys", "list"], { IMGPRESS_DATA_DIR: dir })).code).toBe(0);
  }, 30_000);
});

describe("a master key that is not the database's", () => {
  test("backup with a wrong IMGPRESS_MASTER_KEY is refused (exit 2, nothing written), as every other command is", async () => {
    const dest = join(tmp, "wrong-key.db");
    const r = await runCli(["backup", dest], { ...server.env, IMGPRESS_MASTER_KEY: "c3".repeat(32) });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      "imgpress: the master key (IMGPRESS_MASTER_KEY) is not the one this database was created with",
    );
    expect(existsSync(dest)).toBe(false);
  });

  test("restore of a backup whose key is not its database's is refused, nothing changed", async () => {
    const good = join(tmp, "for-wrong-key.db");
    expect((await runCli(["backup", good], server.env)).code).toBe(0);
    const bad = join(tmp, "carries-wrong-key.db");
    await copyFile(good, bad);
    const edit = createClient({ url: `file:${bad}` });
    await edit.execute({ sql: "UPDATE imgpress_backup SET master_key = ?", args: ["d4".repeat(32)] });
    edit.close();
    const dir = join(tmp, "wrong-key-target");
    const r = await runCli(["restore", bad], { IMGPRESS_DATA_DIR: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "restore refused, nothing changed: the master key in this backup is not the one its database was created with",
    );
    expect(existsSync(join(dir, "imgpress.db"))).toBe(false);
    expect(existsSync(join(dir, "master.key"))).toBe(false);
  });
});

describe("restore of a data folder's own database file", () => {
  test("its -wal is taken along (a copy made while pages were still in it), and nothing but the database is left in the folder", async () => {
    const source = join(tmp, "copied-folder");
    await mkdir(source);
    // A live database with its latest change only in the -wal: no checkpoint until this connection closes.
    const live = createClient({ url: `file:${join(server.dataDir, "imgpress.db")}` });
    const [revokedId] = (
      await live.execute("SELECT id FROM api_keys WHERE revoked_at IS NULL ORDER BY id LIMIT 1")
    ).rows.map((r) => String(r[0]));
    await live.execute("PRAGMA wal_autocheckpoint = 0");
    await live.execute({ sql: "UPDATE api_keys SET revoked_at = ? WHERE id = ?", args: [Date.now(), revokedId!] });
    await copyFile(join(server.dataDir, "imgpress.db"), join(source, "imgpress.db"));
    await copyFile(join(server.dataDir, "imgpress.db-wal"), join(source, "imgpress.db-wal"));
    await copyFile(join(server.dataDir, "master.key"), join(source, "master.key"));
    live.close();
    // As an older version left its files: readable by others.
    await chmod(join(source, "imgpress.db"), 0o644);
    const target = join(tmp, "from-folder");
    await mkdir(target);
    await copyFile(join(source, "master.key"), join(target, "master.key"));
    const r = await runCli(["restore", join(source, "imgpress.db")], { IMGPRESS_DATA_DIR: target });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    // The database with its own -wal/-shm as a server leaves them; nothing of the staged copy.
    expect(readdirSync(target).filter((f) => !/^(imgpress\.db(-wal|-shm)?|master\.key)$/.test(f))).toEqual([]);
    expect(statSync(join(target, "imgpress.db")).mode & 0o777).toBe(0o600);
    const rows = await keyList({ IMGPRESS_DATA_DIR: target });
    const restored = rows.find((k) => k.id === revokedId);
    expect(restored?.revokedAt).toBeGreaterThan(0);
    // The count restore reports tells revoked pairs apart.
    const revoked = rows.filter((k) => k.revokedAt !== null).length;
    expect(r.stdout).toContain(`(${rows.length} key pairs, ${revoked} of them revoked; integrity check ok)`);
  }, 30_000);
});

describe("backup and restore: paths that are not what they should be, and interruptions", () => {
  test("backup into a missing folder, or of a folder without a database: one line, exit 1, nothing created", async () => {
    const dir = join(tmp, "paths");
    const missing = await runCli(["backup", join(dir, "nope", "b.db")], server.env);
    expect({ code: missing.code, err: missing.stderr.trim() }).toEqual({
      code: 1,
      err: `imgpress backup: the folder ${join(dir, "nope")} does not exist; create it first or choose another path`,
    });
    // A file where the folder should be is named as such, not as missing.
    await writeFile(join(tmp, "a-file"), "x");
    const file = await runCli(["backup", join(tmp, "a-file", "b.db")], server.env);
    expect({ code: file.code, err: file.stderr.trim() }).toEqual({
      code: 1,
      err: `imgpress backup: ${join(tmp, "a-file")} is not a folder; choose another path`,
    });
    const empty = join(dir, "empty-data");
    const none = await runCli(["backup", join(tmp, "none.db"), "--without-key"], { IMGPRESS_DATA_DIR: empty });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(`imgpress backup: no database at ${join(empty, "imgpress.db")}`);
    expect(existsSync(join(empty, "imgpress.db"))).toBe(false);
    expect(existsSync(join(tmp, "none.db"))).toBe(false);
  });

  test("backup into a folder where no file can be made (/proc): one line naming the folder, exit 1", async () => {
    const r = await runCli(["backup", "/proc/imgpress-backup.db", "--without-key"], server.env);
    expect({ code: r.code, err: r.stderr.trim() }).toEqual({
      code: 1,
      err: expect.stringMatching(
        /^imgpress: cannot write the backup into \/proc \((ENOENT|EACCES|EPERM)\): choose a folder this user may write to; nothing was written$/,
      ),
    });
  });

  test("backup into a folder (existing, or named with a trailing slash) writes the default name inside it", async () => {
    const into = join(tmp, "into");
    await mkdir(into);
    for (const target of [into, `${into}/`]) {
      const r = await runCli(["backup", target, "--without-key"], server.env);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`backup written: ${into}/imgpress-backup-\\d{8}-\\d{6}(-2)?\\.db `));
    }
    expect(readdirSync(into)).toHaveLength(2);
    // A backup of the same second as an earlier one is numbered rather than refused (the default
    // name has whole seconds): the names of this second and the next few are taken beforehand.
    const busy = join(tmp, "same-second");
    await mkdir(busy);
    const stamp = (ms: number) => new Date(ms).toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-");
    for (let s = 0; s < 5; s++)
      await writeFile(join(busy, `imgpress-backup-${stamp(Date.now() + s * 1000)}.db`), "taken");
    const again = await runCli(["backup", busy, "--without-key"], server.env);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(new RegExp(`backup written: ${busy}/imgpress-backup-\\d{8}-\\d{6}-2\\.db `));
  });

  test("restore of a folder or of a missing file: one line naming it, exit 1", async () => {
    for (const [what, why] of [
      [tmp, "is not a file"],
      [join(tmp, "no-such.db"), "does not exist"],
    ]) {
      const r = await runCli(["restore", what!], { IMGPRESS_DATA_DIR: join(tmp, "restore-paths") });
      expect({ code: r.code, err: r.stderr.trim() }).toEqual({ code: 1, err: `imgpress restore: ${what} ${why}` });
    }
  });

  // A large database takes a while to copy; an operator's Ctrl-C or a service manager's SIGTERM
  // must not leave a half-written copy (hundreds of MB, the master key's database) behind.
  test("SIGTERM during a backup's copy leaves no partial file", async () => {
    const dir = join(tmp, "signal");
    const env = { ...cleanEnv(), IMGPRESS_DATA_DIR: join(dir, "data") };
    expect((await runCli(["migrate"], env)).code).toBe(0);
    const db = createClient({ url: `file:${join(dir, "data", "imgpress.db")}` });
    await db.execute("CREATE TABLE filler (b BLOB)");
    for (let i = 0; i < 60; i++) await db.execute({ sql: "INSERT INTO filler VALUES (randomblob(1048576))", args: [] });
    db.close();
    const out = join(dir, "out");
    await mkdir(out);
    const sub = Bun.spawn([...runtimeCommand(e2eRuntime(), env.IMGPRESS_DATA_DIR), "backup", join(out, "b.db")], {
      cwd: ROOT,
      env,
      stdout: "pipe",
      stderr: "pipe",
    });
    const reader = sub.stderr.getReader();
    let said = "";
    while (!said.includes("copying about")) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`backup ended before copying: ${said}`);
      said += new TextDecoder().decode(chunk.value);
    }
    sub.kill("SIGTERM");
    const code = await sub.exited;
    // Stopped mid-copy: 143 and nothing; had the copy ended first, the whole backup. Never a partial file.
    if (code === 143) expect(readdirSync(out)).toEqual([]);
    else expect({ code, files: readdirSync(out) }).toEqual({ code: 0, files: ["b.db"] });
  }, 60_000);
});

describe("a database server instead of the embedded file", () => {
  // Nothing listens on port 1: the commands must stop before connecting, and never print the URL's password.
  test.each([
    [
      "backup",
      "postgres://imgpress:pw-not-printed@127.0.0.1:1/imgpress",
      /PostgreSQL.*embedded file only.*pg_dump.*docs\/scaling\.md#backup/,
    ],
    [
      "restore",
      "postgresql://imgpress:pw-not-printed@127.0.0.1:1/imgpress",
      /PostgreSQL.*embedded file only.*pg_restore.*docs\/scaling\.md#backup/,
    ],
    ["backup", "libsql://db.example.com", /remote libSQL server; use that server's own backups/],
    ["restore", "libsql://db.example.com", /remote libSQL server; restore it with that server's tools/],
  ])("%s on %s says what to use instead, exit 1, nothing written", async (command, url, message) => {
    const dir = join(tmp, `server-${command}-${url.split(":")[0]}`);
    const file = join(dir, "snapshot.db");
    const r = await runCli([command, file], { IMGPRESS_DATA_DIR: dir, IMGPRESS_DATABASE_URL: url });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr + r.stdout).not.toContain("pw-not-printed");
    if (url.startsWith("postgres")) expect(r.stderr).not.toContain("libSQL");
    expect(existsSync(file)).toBe(false);
  });
});
