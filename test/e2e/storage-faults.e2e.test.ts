/**
 * The data folder on a small tmpfs that fills up: code and key endpoints answer
 * 503 STORAGE_UNAVAILABLE with Retry-After (never 500) and change nothing; bearer conversions of known
 * keys keep working; signed conversions, which need their replay record, answer 503 too; once space
 * returns the service works again without a restart, and the code requested before the fault still
 * verifies. (A read-only folder cannot be simulated under a running server: remounting read-only
 * fails while the database is open for writing; test/data/db/storage-faults.test.ts maps real SQLITE_READONLY
 * and SQLITE_BUSY errors instead.) A server started on a folder already read-only is refused in one
 * line, while the read-only commands still work. Mounting needs root (CI runs as root); elsewhere
 * the tests are skipped with a message.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { closeSync, openSync, readdirSync, unlinkSync, writeSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { convertForm, type Keys, readResponse } from "../support/convert-helpers.ts";
import * as img from "../support/images.ts";
import { mountTmpfs } from "../support/mounts.ts";
import { convertBearer, expectStorageUnavailable, obtainKeys } from "../support/ops.ts";
import { type RunningServer, runCli, startServer } from "../support/server.ts";
import { signedHeaders } from "../support/sign.ts";
import { extractOtp, type SmtpSink, startSmtpSink } from "../support/smtp.ts";

const mountPoint = await mkdtemp(join(tmpdir(), "imgpress-tmpfs-"));
const isRoot = process.getuid?.() === 0;
const mount = isRoot
  ? spawnSync("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint], { encoding: "utf8" })
  : null;
const mounted = mount?.status === 0;
if (!mounted) {
  const why = isRoot
    ? `mount failed: ${(mount?.stderr || String(mount?.error ?? "")).trim()}`
    : `not root (uid ${process.getuid?.()})`;
  console.warn(
    `storage-faults: SKIPPED — mounting a 4 MB tmpfs needs root and permission to mount (${why}); CI runs these as root.`,
  );
}

let sink: SmtpSink;
let server: RunningServer;
let keys: Keys;
const filler = join(mountPoint, "filler");

/** Writes zeros into the tmpfs until it is full (ENOSPC). */
function fillDisk(into = filler): void {
  const fd = openSync(into, "w");
  const chunk = Buffer.alloc(16 * 1024);
  try {
    for (let i = 0; i < 1024; i++) writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
  } finally {
    closeSync(fd);
  }
}

beforeAll(async () => {
  if (!mounted) return;
  sink = await startSmtpSink();
  server = await startServer({ dataDir: join(mountPoint, "data"), env: { IMGPRESS_SMTP_URL: sink.url } });
  keys = await obtainKeys(server, sink, "known@example.com");
}, 60_000);

afterAll(async () => {
  await server?.stop({ keepData: true });
  await sink?.close();
  if (mounted) spawnSync("umount", ["-l", mountPoint]);
  await rm(mountPoint, { recursive: true, force: true });
});

async function signedConvert(image: Uint8Array) {
  const body = await convertForm(image);
  const headers = signedHeaders({
    apiKey: keys.api_key,
    secretKey: keys.secret_key,
    timestamp: Math.floor(Date.now() / 1000),
    body: body.bytes,
  });
  const res = await server.fetch("/v1/plugin/convert", {
    method: "POST",
    body: body.bytes as Uint8Array<ArrayBuffer>,
    headers: { "content-type": body.contentType, ...headers },
  });
  return readResponse(res);
}

describe.skipIf(!mounted)("data folder on a full disk", () => {
  test("503 STORAGE_UNAVAILABLE on code endpoints, bearer conversions go on, all back once space returns", async () => {
    const image = await img.photo(320, 240);
    // A code requested while there is room; it must survive the fault unconsumed.
    expect((await server.json("POST", "/v1/plugin/auth/request-otp", { email: "later@example.com" })).status).toBe(200);
    const pending = extractOtp(await sink.waitFor((m) => m.envelopeTo.includes("later@example.com")));

    fillDisk();
    try {
      const before = sink.messages.length;
      expectStorageUnavailable(await server.json("POST", "/v1/plugin/auth/request-otp", { email: "full@example.com" }));
      expect(sink.messages.length).toBe(before); // no code was mailed for a row that was not stored
      expectStorageUnavailable(
        await server.json("POST", "/v1/plugin/auth/verify-otp", { email: "later@example.com", otp: pending }),
      );

      const bearer = await convertBearer(server, keys.api_key, await convertForm(image));
      expect(bearer.status).toBe(200);
      expect(await img.decode(bearer.bytes)).toMatchObject({ width: 320, height: 240 });
      // A signed request cannot be accepted without storing its replay record.
      expectStorageUnavailable(await signedConvert(image));
      expect((await server.fetch("/health")).status).toBe(200);
    } finally {
      unlinkSync(filler);
    }

    // Space is back: no restart, everything works, and the pending code was never consumed.
    expect((await server.json("POST", "/v1/plugin/auth/request-otp", { email: "full@example.com" })).status).toBe(200);
    const verified = await server.json("POST", "/v1/plugin/auth/verify-otp", {
      email: "later@example.com",
      otp: pending,
    });
    expect(verified.status).toBe(200);
    expect((await signedConvert(image)).status).toBe(200);
    expect(
      server.logs.some((l) => l.json?.msg === "storage unavailable" && String(l.json.fault).startsWith("SQLITE_FULL")),
    ).toBe(true);
    expect(server.logs.some((l) => l.json?.msg === "unhandled error")).toBe(false);
  }, 60_000);
});

describe.skipIf(!mounted)("a stop on a full disk", () => {
  // Each on a tmpfs of its own: the server of the tests above, still running on theirs, frees pages
  // now and then (a checkpoint, the minute's clean-up), which would leave room where none should be.
  test("the write-ahead log cannot be copied into the file: logged, exit status 1, nothing lost at the next start", async () => {
    const disk = mountTmpfs("4m")!;
    const data = join(disk.path, "stop-full");
    const fill = join(disk.path, "filler");
    const second = await startServer({ dataDir: data });
    const added = await runCli(["staff", "add", "kept@example.com"], second.env);
    expect(added.code).toBe(0);
    // Pages the checkpoint must add to the file: a table of ~1 MB written through a second connection (the server's keeps the log open).
    const client = createClient({ url: `file:${join(data, "imgpress.db")}` });
    await client.execute("CREATE TABLE filler (x BLOB)");
    for (let i = 0; i < 16; i++)
      await client.execute({ sql: "INSERT INTO filler VALUES (?)", args: [new Uint8Array(64 * 1024).fill(i + 1)] });
    client.close();
    fillDisk(fill);
    try {
      expect(await second.stop({ keepData: true })).toBe(1);
      expect(
        second.logs.some(
          (l) =>
            l.json?.msg ===
            "closing the database failed: keep the -wal file beside the database (the next start reads it)",
        ),
      ).toBe(true);
      expect(second.logs.some((l) => l.json?.msg === "stopped" && l.json?.exitCode === 1)).toBe(true);
      unlinkSync(fill);
      const listed = await runCli(["staff", "list"], { IMGPRESS_DATA_DIR: data });
      expect(listed.stdout).toContain("kept@example.com");
    } finally {
      disk.unmount();
    }
  }, 60_000);

  // On a tmpfs of its own: the server of the tests above, still running on theirs, frees pages now
  // and then (a checkpoint, the minute's clean-up), and a start might then find room.
  test("a first start on a full disk: one line naming the file it could not write, no half-written file left", async () => {
    const disk = mountTmpfs("1m")!;
    const data = join(disk.path, "first-full");
    const fill = join(disk.path, "filler");
    fillDisk(fill);
    try {
      const r = await runCli(["serve"], { IMGPRESS_DATA_DIR: data, IMGPRESS_PORT: "0" });
      expect({ code: r.code, stderr: r.stderr }).toEqual({
        code: 1,
        stderr: expect.stringMatching(
          new RegExp(
            `^imgpress: cannot write ${data}/\\S+: (ENOSPC: no space left on device, (write|open)|No space left on device \\(os error 28\\))\n$`,
          ),
        ),
      });
      // Not an empty pid record or lock (the next start would have to tell them from live ones) nor a master.key.….tmp.
      expect(readdirSync(data).filter((name) => name !== "imgpress.db")).toEqual([]);
    } finally {
      disk.unmount();
    }
  }, 60_000);
});

describe("a data folder on a read-only mount", () => {
  test.skipIf(!mounted)(
    "serve is refused in one line naming the folder's problem; keys list still reads it",
    async () => {
      const roMount = await mkdtemp(join(tmpdir(), "imgpress-ro-"));
      const made = spawnSync("mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", roMount], { encoding: "utf8" });
      expect(made.status).toBe(0);
      try {
        const data = join(roMount, "data");
        expect((await runCli(["migrate"], { IMGPRESS_DATA_DIR: data })).code).toBe(0);
        expect(spawnSync("mount", ["-o", "remount,ro", roMount]).status).toBe(0);
        const serve = await runCli(["serve"], { IMGPRESS_DATA_DIR: data, IMGPRESS_PORT: "0" });
        expect(serve.code).toBe(1);
        expect(serve.stderr.trim().split("\n").at(-1)).toBe(
          `imgpress: cannot write ${join(data, "imgpress.db.pid")} (EROFS): the data folder must be writable by this user and not on a read-only mount`,
        );
        const list = await runCli(["keys", "list"], { IMGPRESS_DATA_DIR: data });
        expect({ code: list.code, stdout: list.stdout.trim() }).toEqual({ code: 0, stdout: "no keys" });
      } finally {
        spawnSync("umount", ["-l", roMount]);
        await rm(roMount, { recursive: true, force: true });
      }
    },
    60_000,
  );
});
