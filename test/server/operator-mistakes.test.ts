/**
 * What a careless operator does on a NAS, and what imgpress answers (from an operator review):
 * two restores within one second, a restore run as root, a backup copied over the live database,
 * commands run in the wrong folder, a read-only or full disk, a LAN health probe of the
 * self-signed certificate, a killed server's zombie, a symbolic link to the database, and secret
 * files left readable by other users. Every command runs as the executable's code does
 * (`runCli`); each refusal exits non-zero, says what to do, and changes nothing.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { appendFile, copyFile, mkdir, mkdtemp, rm } from "node:fs/promises";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { fileUrl, localPath } from "../../src/data/db/location.ts";
import { claimPidFile, serverInUse } from "../../src/server/pidfile.ts";
import { canMount, mountTmpfs } from "../support/mounts.ts";
import { runCli, startServer } from "../support/server.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "imgpress-operator-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

let folders = 0;
/** A data folder (new, or under `parent`) whose database has one staff member, `email`. */
async function installation(email: string, parent = dir): Promise<string> {
  const folder = join(parent, `data-${++folders}`);
  const r = await runCli(["staff", "add", email], { IMGPRESS_DATA_DIR: folder });
  expect({ code: r.code, stderr: r.stderr }).toMatchObject({ code: 0 });
  return folder;
}

/** `imgpress backup` of `folder` into a new file; returns its path. */
async function backupOf(folder: string): Promise<string> {
  const file = join(dir, `backup-${++folders}.db`);
  const r = await runCli(["backup", file], { IMGPRESS_DATA_DIR: folder });
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
  return file;
}

/** The staff addresses a database file holds (read directly, as a check from outside). */
async function staffIn(file: string): Promise<string[]> {
  const client = createClient({ url: `file:${file}` });
  try {
    return (await client.execute("SELECT email FROM staff_members ORDER BY email")).rows.map((r) => String(r[0]));
  } finally {
    client.close();
  }
}

const stamp = (ms: number) => new Date(ms).toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-");

describe("restore", () => {
  test("a second restore within the same second never replaces the first one's kept copies", async () => {
    const live = await installation("original@example.com");
    const originalKey = readFileSync(join(live, "master.key"), "utf8");
    const other = await backupOf(await installation("other@example.com"));
    // Copies a restore made in each of the next seconds, so this one's name is taken whenever it runs.
    const now = Date.now();
    const decoys = Array.from({ length: 30 }, (_, i) => `.before-restore-${stamp(now + i * 1000)}`);
    for (const suffix of decoys) {
      writeFileSync(join(live, `imgpress.db${suffix}`), `decoy ${suffix}`);
      writeFileSync(join(live, `master.key${suffix}`), `decoy ${suffix}`);
    }
    const r = await runCli(["restore", other], { IMGPRESS_DATA_DIR: live });
    expect(r.code).toBe(0);
    const keptDb = /previous database kept as (\S+)/.exec(r.stdout)?.[1];
    const keptKey = /previous master key kept as (\S+)/.exec(r.stdout)?.[1];
    expect(keptDb).toMatch(/imgpress\.db\.before-restore-\d{8}-\d{6}-2$/);
    expect(keptKey).toBe(join(live, `master.key${keptDb!.slice(join(live, "imgpress.db").length)}`));
    for (const suffix of decoys)
      expect(readFileSync(join(live, `imgpress.db${suffix}`), "utf8")).toBe(`decoy ${suffix}`);
    expect(await staffIn(keptDb!)).toEqual(["original@example.com"]);
    expect(readFileSync(keptKey!, "utf8")).toBe(originalKey);
    expect(await staffIn(join(live, "imgpress.db"))).toEqual(["other@example.com"]);
  });

  test.skipIf(process.getuid?.() !== 0)(
    "run as root, the restored database and master key keep the service user's ownership",
    async () => {
      const live = await installation("service@example.com");
      const other = await backupOf(await installation("other@example.com"));
      // The service's own user (here a numeric uid with no name): its folder and files are its own.
      const [uid, gid] = [64_321, 64_322];
      for (const name of ["", ...readdirSync(live)]) chownSync(join(live, name), uid, gid);
      const r = await runCli(["restore", other], { IMGPRESS_DATA_DIR: live });
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("previous master key kept as");
      for (const name of readdirSync(live))
        expect({ name, uid: statSync(join(live, name)).uid, gid: statSync(join(live, name)).gid }).toEqual({
          name,
          uid,
          gid,
        });
    },
  );

  test("through a symbolic link to the database: refused while a server uses the file, then the file itself is replaced", async () => {
    const live = await installation("linked@example.com");
    const other = await backupOf(await installation("other@example.com"));
    const env = { IMGPRESS_DATA_DIR: live, IMGPRESS_DATABASE_URL: `file:${join(dir, "link-folder", "db-link.db")}` };
    const linkFolder = join(dir, "link-folder");
    await mkdir(linkFolder, { recursive: true });
    const link = join(linkFolder, "db-link.db");
    symlinkSync(join(live, "imgpress.db"), link);
    // A live process stands in for a server on the real path.
    const stand = Bun.spawn(["sleep", "30"]);
    writeFileSync(join(live, "imgpress.db.pid"), `${stand.pid}\n`);
    try {
      expect(serverInUse(link)).toContain(`a server (pid ${stand.pid}) is using ${link}`);
      const refused = await runCli(["restore", other], env);
      expect(refused.code).toBe(1);
    } finally {
      stand.kill();
    }
    expect(await staffIn(join(live, "imgpress.db"))).toEqual(["linked@example.com"]);
    await rm(join(live, "imgpress.db.pid"));
    const r = await runCli(["restore", other], env);
    expect(r.code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(await staffIn(join(live, "imgpress.db"))).toEqual(["other@example.com"]);
  });

  test("a server started on a symbolic link to a database that did not exist yet: restore sees it by either name, and its record goes when it stops", async () => {
    const target = join(dir, "link-target", "imgpress.db");
    await mkdir(join(dir, "link-target"), { recursive: true });
    const linkFolder = join(dir, "first-start-link");
    await mkdir(linkFolder, { recursive: true });
    const link = join(linkFolder, "db.db");
    symlinkSync(target, link);
    const server = await startServer({ env: { IMGPRESS_DATABASE_URL: `file:${link}` } });
    try {
      expect(existsSync(`${target}.pid`)).toBe(true);
      const backup = await backupOf(await installation("other@example.com"));
      for (const url of [`file:${link}`, `file:${target}`]) {
        const r = await runCli(["restore", backup], { IMGPRESS_DATA_DIR: server.dataDir, IMGPRESS_DATABASE_URL: url });
        expect({ url, code: r.code, stderr: r.stderr }).toEqual({
          url,
          code: 1,
          stderr: expect.stringContaining(`is using ${target}`),
        });
      }
    } finally {
      await server.stop();
    }
    expect(existsSync(`${target}.pid`)).toBe(false);
  });

  test("a relative link inside a linked data folder is read from where the link really is", async () => {
    // layout/data → layout/deep/real, and in it imgpress.db → ../db/imgpress.db (not there yet).
    const layout = join(dir, "layout");
    await mkdir(join(layout, "deep", "real"), { recursive: true });
    await mkdir(join(layout, "deep", "db"), { recursive: true });
    await mkdir(join(layout, "db"), { recursive: true }); // where reading the link from layout/data would wrongly lead
    symlinkSync(join(layout, "deep", "real"), join(layout, "data"));
    symlinkSync("../db/imgpress.db", join(layout, "deep", "real", "imgpress.db"));
    const target = join(layout, "deep", "db", "imgpress.db");
    const server = await startServer({ dataDir: join(layout, "data") });
    try {
      expect(existsSync(`${target}.pid`)).toBe(true);
      expect(readdirSync(join(layout, "db"))).toEqual([]);
      const backup = await backupOf(await installation("other@example.com"));
      const r = await runCli(["restore", backup], { IMGPRESS_DATA_DIR: join(layout, "data") });
      expect({ code: r.code, stderr: r.stderr }).toEqual({
        code: 1,
        stderr: expect.stringContaining(`is using ${target}`),
      });
    } finally {
      await server.stop({ keepData: true });
    }
    expect(existsSync(`${target}.pid`)).toBe(false);
  });

  test("without a FILE: a usage error (exit 2), like every other command line imgpress cannot read", async () => {
    const r = await runCli(["restore"], { IMGPRESS_DATA_DIR: join(dir, "never-made") });
    expect({ code: r.code, stderr: r.stderr.trim() }).toEqual({
      code: 2,
      stderr: "imgpress: restore needs the backup to restore: imgpress restore FILE; see imgpress restore --help",
    });
  });
});

describe("a backup file copied over imgpress.db instead of restored", () => {
  test("the server and the commands refuse it, naming imgpress restore; backup works; restore puts it right", async () => {
    const folder = await installation("copied@example.com");
    const file = await backupOf(folder);
    for (const ext of ["", "-wal", "-shm"]) await rm(join(folder, `imgpress.db${ext}`), { force: true });
    await copyFile(file, join(folder, "imgpress.db"));
    const env = { IMGPRESS_DATA_DIR: folder };
    const said = `${join(folder, "imgpress.db")} is a file written by imgpress backup, put in place without imgpress restore (it still holds the master key in clear): stop imgpress, then run imgpress restore ${join(folder, "imgpress.db")}`;
    for (const argv of [
      ["keys", "list"],
      ["serve", "--port", "0"],
    ]) {
      const r = await runCli(argv, env);
      expect({ argv, code: r.code, last: r.stderr.trim().split("\n").at(-1) }).toEqual({
        argv,
        code: 1,
        last: expect.stringContaining(said),
      });
    }
    // A backup of it is a backup like any other (it carries the key once).
    expect((await runCli(["backup", join(dir, "of-the-copy.db")], env)).code).toBe(0);
    const restored = await runCli(["restore", join(folder, "imgpress.db")], env);
    expect(restored.code).toBe(0);
    expect((await runCli(["keys", "list"], env)).code).toBe(0);
    const client = createClient({ url: `file:${join(folder, "imgpress.db")}` });
    try {
      expect((await client.execute("SELECT name FROM sqlite_master WHERE name = 'imgpress_backup'")).rows).toEqual([]);
    } finally {
      client.close();
    }
  });
});

describe("a --without-key backup copied over imgpress.db", () => {
  test("is refused as a backup, without claiming it holds the key; restore of it keeps the folder's key", async () => {
    const folder = await installation("nokey@example.com");
    const file = join(dir, `nokey-${++folders}.db`);
    expect((await runCli(["backup", file, "--without-key"], { IMGPRESS_DATA_DIR: folder })).code).toBe(0);
    for (const ext of ["", "-wal", "-shm"]) await rm(join(folder, `imgpress.db${ext}`), { force: true });
    await copyFile(file, join(folder, "imgpress.db"));
    const r = await runCli(["keys", "list"], { IMGPRESS_DATA_DIR: folder });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "put in place without imgpress restore (a --without-key backup, so the master key it was made with must be in place too)",
    );
    expect(r.stderr).not.toContain("in clear");
    expect((await runCli(["restore", join(folder, "imgpress.db")], { IMGPRESS_DATA_DIR: folder })).code).toBe(0);
    expect((await runCli(["keys", "list"], { IMGPRESS_DATA_DIR: folder })).code).toBe(0);
  });
});

describe("commands in the wrong folder (or with IMGPRESS_DATA_DIR mistyped)", () => {
  test("those that read or change what a database holds refuse, and create nothing", async () => {
    const nowhere = join(dir, "typo-data");
    const database = join(nowhere, "imgpress.db");
    for (const argv of [
      ["keys", "list"],
      ["keys", "revoke", "key_0123456789abcdef"],
      ["keys", "revoke-email", "a@example.com"],
      ["audit"],
      ["settings"],
      ["staff", "list"],
      ["staff", "remove", "a@example.com"],
    ]) {
      const r = await runCli(argv, { IMGPRESS_DATA_DIR: nowhere });
      expect({ argv, code: r.code, stdout: r.stdout, stderr: r.stderr.trim() }).toEqual({
        argv,
        code: 1,
        stdout: "",
        stderr: `imgpress: no database at ${database} (no file, or an empty one): check IMGPRESS_DATA_DIR (or IMGPRESS_DATABASE_URL) and the folder you run this in (the default data folder is ./imgpress-data, relative to it); nothing was created`,
      });
      expect(existsSync(nowhere)).toBe(false);
    }
    // A backup names the database it lacks, not the master key (which is missing with it).
    const backup = await runCli(["backup", join(dir, "nothing.db")], { IMGPRESS_DATA_DIR: nowhere });
    expect({ code: backup.code, stderr: backup.stderr.trim() }).toEqual({
      code: 1,
      stderr: `imgpress backup: no database at ${database} (check IMGPRESS_DATA_DIR or IMGPRESS_DATABASE_URL)`,
    });
  });

  test("staff add, which may come before the first start, creates the database and says where", async () => {
    const fresh = join(dir, "first-staff");
    const r = await runCli(["staff", "add", "first@example.com"], { IMGPRESS_DATA_DIR: fresh });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("added first@example.com: they can sign in at /internal/login\n");
    expect(r.stderr).toContain(
      `no database was at ${join(fresh, "imgpress.db")}: a new one was created there (if your server uses another folder, check IMGPRESS_DATA_DIR)`,
    );
    // The next command finds it, and says nothing of the kind.
    const again = await runCli(["staff", "list"], { IMGPRESS_DATA_DIR: fresh });
    expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: "" });
  });

  test("words a command cannot take are refused first (exit 2), before looking for a database", async () => {
    const nowhere = { IMGPRESS_DATA_DIR: join(dir, "usage-only") };
    const typo = await runCli(["audit", "--type", "key.revoke"], nowhere);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("imgpress: --type key.revoke is not an event type; the types are staff.sign_in,");
    expect(typo.stderr).toContain("key.revoked");
    for (const argv of [
      ["staff", "remove", "notanemail"],
      ["staff", "add", "notanemail"],
    ]) {
      const r = await runCli(argv, nowhere);
      expect({ argv, code: r.code }).toEqual({ argv, code: 2 });
      expect(r.stderr).toMatch(/^imgpress: [^\n]*[^.]; see imgpress( [a-z-]+)* --help\n$/);
    }
    expect(existsSync(nowhere.IMGPRESS_DATA_DIR)).toBe(false);
  });
});

describe.skipIf(!canMount)("a disk that is read-only or full", () => {
  test("a change the database refuses names the cause and what to do, never the statement or its parameters", async () => {
    const disk = mountTmpfs("8m")!;
    try {
      const folder = await installation("staff@example.com", disk.path);
      disk.readOnly();
      const r = await runCli(["staff", "add", "second@example.com"], { IMGPRESS_DATA_DIR: folder });
      expect(r.code).toBe(1);
      const last = r.stderr.trim().split("\n").at(-1)!;
      expect(last).toMatch(/^imgpress: (the database refused this \(SQLITE_READONLY|cannot open the database)/);
      expect(last).toMatch(/writable/);
      expect(r.stderr).not.toContain("Failed query");
      expect(r.stderr).not.toContain("second@example.com");
    } finally {
      disk.unmount();
    }
  });

  test("a backup into a full folder says it is that folder, and leaves nothing there", async () => {
    const folder = await installation("full@example.com");
    const disk = mountTmpfs("1m")!;
    try {
      const filler = join(disk.path, "filler");
      for (let i = 0; i < 64; i++) {
        const full = await appendFile(filler, new Uint8Array(64 * 1024)).then(
          () => false,
          (err: NodeJS.ErrnoException) => err.code === "ENOSPC",
        );
        if (full) break;
      }
      const r = await runCli(["backup", `${disk.path}/`], { IMGPRESS_DATA_DIR: folder });
      expect({ code: r.code, stderr: r.stderr.trim() }).toEqual({
        code: 1,
        stderr: expect.stringMatching(
          new RegExp(
            `^imgpress: no room for the backup in ${disk.path} \\((SQLITE_FULL|ENOSPC)[^)]*\\): free some space there or choose another folder; nothing was written$`,
          ),
        ),
      });
      expect(readdirSync(disk.path)).toEqual(["filler"]);
    } finally {
      disk.unmount();
    }
  });
});

// libSQL reads a file: URL's path with %-escapes decoded and stops at ? or #: a data folder whose
// name holds them (Synology's `#recycle` neighbours, `100%`) opened a database in another folder, or none.
describe("a data folder whose name holds %, # or ?", () => {
  test("the database, its pid record, backup and restore all use that folder", async () => {
    for (const name of ["pct%41x", "h#x", "q?x=1", "sp ace %25"]) {
      const folder = join(dir, name, "imgpress-data");
      expect(localPath(fileUrl(join(folder, "imgpress.db")))).toBe(join(folder, "imgpress.db"));
      const server = await startServer({ dataDir: folder });
      try {
        expect(readdirSync(folder)).toEqual(expect.arrayContaining(["imgpress.db", "imgpress.db.pid", "master.key"]));
        expect(statSync(join(folder, "imgpress.db")).mode & 0o777).toBe(0o600);
        const added = await runCli(["staff", "add", "pct@example.com"], server.env);
        expect({ code: added.code, stderr: added.stderr }).toEqual({ code: 0, stderr: "" });
        // restore finds the server's record in that folder.
        const restore = await runCli(["restore", join(dir, "none.db")], server.env);
        expect(restore.stderr).toContain(`is using ${join(folder, "imgpress.db")}; stop it first`);
      } finally {
        await server.stop({ keepData: true });
      }
      // Only the one folder was written: nothing beside it under a decoded or shortened name.
      expect(readdirSync(join(dir, name))).toEqual(["imgpress-data"]);
      const copy = await backupOf(folder);
      const listed = await runCli(["staff", "list"], { IMGPRESS_DATA_DIR: folder });
      expect(listed.stdout).toContain("pct@example.com");
      const restored = await runCli(["restore", copy], { IMGPRESS_DATA_DIR: folder });
      expect({ code: restored.code, stdout: restored.stdout }).toMatchObject({
        code: 0,
        stdout: expect.stringContaining(`into ${join(folder, "imgpress.db")}`),
      });
    }
    expect(readdirSync(dir).filter((name) => /^(pctAx|h|q)$/.test(name))).toEqual([]);
  });
});

describe("pid records", () => {
  let parent: ReturnType<typeof Bun.spawn> | undefined;
  afterEach(() => parent?.kill());

  test.skipIf(!existsSync("/proc/self/stat"))(
    "a killed server's process that its parent has not reaped yet (a zombie) serves nothing: it does not block restore",
    async () => {
      // The shell's child exits at once; the shell becomes `sleep`, which never waits for it.
      parent = Bun.spawn(["sh", "-c", "sleep 0 & echo $!; exec sleep 30"], { stdout: "pipe" });
      const reader = (parent.stdout as ReadableStream<Uint8Array>).getReader();
      const zombie = Number(new TextDecoder().decode((await reader.read()).value).trim());
      reader.releaseLock();
      for (let i = 0; i < 50 && !readFileSync(`/proc/${zombie}/stat`, "utf8").includes(") Z "); i++)
        await Bun.sleep(20);
      expect(readFileSync(`/proc/${zombie}/stat`, "utf8")).toContain(") Z ");
      const folder = await installation("zombie@example.com");
      writeFileSync(join(folder, "imgpress.db.pid"), `${zombie}\n`);
      expect(serverInUse(join(folder, "imgpress.db"))).toBeNull();
      // A live process named there still counts.
      writeFileSync(join(folder, "imgpress.db.pid"), `${parent.pid}\n`);
      expect(serverInUse(join(folder, "imgpress.db"))).toContain(`a server (pid ${parent.pid})`);
    },
  );

  // After a power cut the record stays, and at the next boot its number may be another daemon's:
  // a server that then refused every start would never come back on an unattended machine.
  test.skipIf(!existsSync("/proc/sys/kernel/random/boot_id"))(
    "a record whose number now belongs to another process (another boot, another start time) is taken over; the recorder itself still counts",
    async () => {
      parent = Bun.spawn(["sleep", "30"]);
      const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
      const stat = readFileSync(`/proc/${parent.pid}/stat`, "utf8");
      const start = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
      const folder = await installation("reboot@example.com");
      const database = join(folder, "imgpress.db");
      const record = join(folder, "imgpress.db.pid");
      writeFileSync(record, `${parent.pid}\nrole=serve boot=${boot} start=${start}\n`);
      expect(serverInUse(database)).toContain(`a server (pid ${parent.pid})`);
      expect(() => claimPidFile(database)).toThrow(`another server (pid ${parent.pid}) is already serving ${database}`);
      for (const stale of [
        `boot=${boot} start=${Number(start) + 1}`,
        `boot=00000000-0000-0000-0000-000000000000 start=${start}`,
      ]) {
        writeFileSync(record, `${parent.pid}\nrole=serve ${stale}\n`);
        expect(serverInUse(database)).toBeNull();
        const release = claimPidFile(database);
        expect(readFileSync(record, "utf8")).toMatch(
          new RegExp(`^${process.pid}\nrole=serve boot=${boot} ns=\\d+ start=\\d+\n$`),
        );
        release();
        expect(existsSync(record)).toBe(false);
      }
      // A whole server starts over such a record, and writes its own.
      writeFileSync(record, `${parent.pid}\nrole=serve boot=00000000-0000-0000-0000-000000000000 start=${start}\n`);
      const server = await startServer({ dataDir: folder });
      try {
        expect(readFileSync(record, "utf8")).toMatch(
          new RegExp(`^(?!${parent.pid}\n)\\d+\nrole=serve boot=${boot} ns=\\d+ start=\\d+\n$`),
        );
      } finally {
        await server.stop();
      }
    },
  );

  // A container's server writes its number as its pid namespace sees it (often 1): read from the
  // host that number is another process, so the record is matched by namespace and start time.
  const canUnshare = spawnSync("unshare", ["--pid", "--fork", "true"]).status === 0;
  test.skipIf(!canUnshare)(
    "a record written in another pid namespace: refused while its process runs (found by namespace and start time), taken over once it is gone",
    async () => {
      parent = Bun.spawn(["unshare", "--pid", "--fork", "sleep", "30"]);
      // The sleep is the unshare process's child, pid 1 of the new namespace.
      let inner: number | undefined;
      for (let i = 0; i < 100 && inner === undefined; i++) {
        inner = Number(readFileSync(`/proc/${parent.pid}/task/${parent.pid}/children`, "utf8").trim()) || undefined;
        if (inner === undefined) await Bun.sleep(20);
      }
      const stat = readFileSync(`/proc/${inner}/stat`, "utf8");
      const start = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
      const ns = /\[(\d+)\]/.exec(readlinkSync(`/proc/${inner}/ns/pid`))![1];
      const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
      const folder = await installation("container@example.com");
      const database = join(folder, "imgpress.db");
      const record = join(folder, "imgpress.db.pid");
      // As the containerised server wrote it: pid 1, its namespace, its start.
      writeFileSync(record, `1\nrole=serve boot=${boot} ns=${ns} start=${start}\n`);
      expect(serverInUse(database)).toContain(`a server (pid ${inner}) is using ${database}`);
      expect(() => claimPidFile(database)).toThrow(`another server (pid ${inner}) is already serving ${database}`);
      expect(() => claimPidFile(database, "restore")).toThrow(`a server (pid ${inner}) is using ${database}`);
      // Another start time in that namespace (a container started again after a crash): gone.
      writeFileSync(record, `1\nrole=serve boot=${boot} ns=${ns} start=${Number(start) + 1}\n`);
      expect(serverInUse(database)).toBeNull();
      const release = claimPidFile(database);
      expect(readFileSync(record, "utf8")).toStartWith(`${process.pid}\n`);
      release();
      expect(existsSync(record)).toBe(false);
    },
  );

  // Judging a record stale and replacing it happens under `<record>.lock`; a lock left by a claimer
  // that died holding it is old (or, the clock set back, from the future), and broken.
  test("the claim's lock is released after every claim, and one left behind by a dead claimer is broken", async () => {
    const folder = await installation("lock@example.com");
    const database = join(folder, "imgpress.db");
    const lock = join(folder, "imgpress.db.pid.lock");
    for (const offset of [-60_000, 60_000]) {
      writeFileSync(lock, "4242 left-by-a-crash\n");
      const then = new Date(Date.now() + offset);
      utimesSync(lock, then, then);
      const release = claimPidFile(database);
      expect(existsSync(lock)).toBe(false);
      release();
    }
    expect(() => claimPidFile(join(folder, "imgpress.db"), "restore")()).not.toThrow();
    expect(readdirSync(folder).filter((name) => name.includes(".pid"))).toEqual([]);
  });

  // Several processes starting in the same millisecond on a crash's record and a crash's lock: two
  // breaking the old lock at once must not remove the fresh one between them, so one gets the record.
  test("four claimers at once over a stale record and a stale lock: exactly one gets the record, each time", async () => {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    for (let round = 0; round < 10; round++) {
      const folder = join(dir, `race-${round}`);
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, "imgpress.db"), "");
      writeFileSync(join(folder, "imgpress.db.pid"), `999999\nrole=serve boot=${boot} start=1\n`);
      writeFileSync(join(folder, "imgpress.db.pid.lock"), "4242 left-by-a-crash\n");
      const old = new Date(Date.now() - 60_000);
      utimesSync(join(folder, "imgpress.db.pid.lock"), old, old);
      const at = Date.now() + 800;
      const claimers = Array.from({ length: 4 }, () =>
        Bun.spawn(
          [
            process.execPath,
            join(import.meta.dir, "..", "support", "pid-claimer.ts"),
            join(folder, "imgpress.db"),
            String(at),
          ],
          { stdout: "pipe", stderr: "pipe" },
        ),
      );
      const said = await Promise.all(claimers.map(async (c) => (await new Response(c.stdout).text()).trim()));
      expect({ round, owners: said.filter((line) => line === "OK").length }).toEqual({ round, owners: 1 });
      for (const line of said.filter((l) => l !== "OK")) expect(line).toStartWith("REFUSED another server (pid ");
    }
  }, 60_000);

  // restore holds the record from its check until the new file is in place.
  test.skipIf(!existsSync("/proc/self/stat"))(
    "a live restore's record refuses a server and another restore; restore refuses a live server's",
    async () => {
      parent = Bun.spawn(["sleep", "30"]);
      const stat = readFileSync(`/proc/${parent.pid}/stat`, "utf8");
      const start = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
      const folder = await installation("restoring@example.com");
      const database = join(folder, "imgpress.db");
      const record = join(folder, "imgpress.db.pid");
      writeFileSync(record, `${parent.pid}\nrole=restore start=${start}\n`);
      const replacing = `imgpress restore (pid ${parent.pid}) is replacing ${database}; wait until it has finished (if it no longer runs, delete ${record})`;
      expect(() => claimPidFile(database)).toThrow(replacing);
      expect(() => claimPidFile(database, "restore")).toThrow(replacing);
      const served = await runCli(["serve"], { IMGPRESS_DATA_DIR: folder, IMGPRESS_PORT: "0" });
      expect({ code: served.code, stderr: served.stderr.trim() }).toEqual({
        code: 1,
        stderr: `imgpress: ${replacing}`,
      });
      const restored = await runCli(["restore", await backupOf(await installation("other@example.com"))], {
        IMGPRESS_DATA_DIR: folder,
      });
      expect({ code: restored.code, stderr: restored.stderr.trim() }).toEqual({
        code: 1,
        stderr: `imgpress restore: ${replacing}`,
      });
      writeFileSync(record, `${parent.pid}\nrole=serve start=${start}\n`);
      expect(() => claimPidFile(database, "restore")).toThrow(
        `a server (pid ${parent.pid}) is using ${database}; stop it first`,
      );
      expect(readFileSync(record, "utf8")).toStartWith(`${parent.pid}\n`);
    },
  );
});

/** This machine's first address that is not a loopback one, or undefined. */
function lanAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === "IPv4" && !a.internal)?.address;
}

describe("imgpress health of a LAN address", () => {
  const address = lanAddress();
  test.skipIf(!address)(
    "passes with the data folder's self-signed certificate, which it trusts besides the system's CAs",
    async () => {
      const server = await startServer({ env: { IMGPRESS_HOST: "0.0.0.0", IMGPRESS_TLS_NAMES: address! } });
      try {
        const url = `https://${address}:${server.port}/health/ready`;
        const probe = await runCli(["health", "--url", url], server.env);
        expect({ code: probe.code, stdout: probe.stdout }).toEqual({
          code: 0,
          stdout: expect.stringMatching(/^200 \{"status":"ready"/),
        });
        // From another folder the certificate is unknown: verified against the system's CAs alone, it fails.
        const elsewhere = await runCli(["health", "--url", url], { IMGPRESS_DATA_DIR: join(dir, "elsewhere") });
        expect(elsewhere.code).toBe(1);
        expect(elsewhere.stderr).toStartWith(`unreachable: ${url}: `);
      } finally {
        await server.stop();
      }
    },
  );
});

describe("secret files other users of the machine can read", () => {
  test("the database, the master key and the TLS private key are each named at start, with the chmod that fixes it", async () => {
    const server = await startServer();
    try {
      await server.stop({ keepData: true });
      const data = server.dataDir;
      chmodSync(data, 0o755);
      chmodSync(join(data, "tls"), 0o755);
      for (const name of ["imgpress.db", "master.key", "tls/self-signed.pem"]) chmodSync(join(data, name), 0o644);
      await server.restart();
      const warned = server.logs.filter((l) => l.json?.level === "warn").map((l) => String(l.json!.msg));
      expect(warned).toContainEqual(
        `the database ${join(data, "imgpress.db")} can be read by other users of this machine (folder mode 0755, file mode 0644): it holds e-mail addresses and key hashes; make the folder owner-only with chmod 700 ${data}`,
      );
      expect(warned).toContainEqual(
        `the master key ${join(data, "master.key")} can be read by other users of this machine (folder mode 0755, file mode 0644): it unseals every secret stored in the database; make it owner-only with chmod 600 ${join(data, "master.key")}`,
      );
      const tlsKey = join(data, "tls", "self-signed.pem");
      expect(warned).toContainEqual(
        `the TLS private key ${tlsKey} can be read by other users of this machine (folder mode 0755, file mode 0644): with it anyone can pose as this server; make it owner-only with chmod 600 ${tlsKey}`,
      );
    } finally {
      await server.stop();
    }
  });
});
