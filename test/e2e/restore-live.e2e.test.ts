/**
 * A restore under a live server (issue #37 point 3). An operator who deletes the pid record because
 * a refusal said "if no server runs, delete it" is still refused: the server holds a lock the system
 * drops only with its process (kill -9 included). A server whose database file is replaced anyway
 * (moved aside by hand) stops writing: 503 STORAGE_UNAVAILABLE, readiness 503, one error line; and
 * after a restart it serves the new file, where the keys it had refused to issue are not missing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as img from "../support/images.ts";
import { burstForm, convertBearer, expectStorageUnavailable, obtainKeys } from "../support/ops.ts";
import { runCli, startServer } from "../support/server.ts";
import { type SmtpSink, startSmtpSink } from "../support/smtp.ts";

let sink: SmtpSink;
let dir: string;
beforeAll(async () => {
  sink = await startSmtpSink();
  dir = await mkdtemp(join(tmpdir(), "imgpress-restore-live-"));
});
afterAll(async () => {
  await sink?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("restore under a live server", () => {
  test("refused with the pid record deleted, by the lock that a killed server drops", async () => {
    const server = await startServer({ env: { IMGPRESS_SMTP_URL: sink.url } });
    try {
      const keys = await obtainKeys(server, sink, "before@example.com");
      // In the data folder: under Deno the command line may read and write nowhere else.
      const backup = join(server.dataDir, "before.backup.db");
      expect(await runCli(["backup", backup], server.env)).toMatchObject({ code: 0, stderr: "" });
      const record = join(server.dataDir, "imgpress.db.pid");
      expect(existsSync(record)).toBe(true);
      rmSync(record);
      const refused = await runCli(["restore", backup], server.env);
      expect({ code: refused.code, stderr: refused.stderr.trim() }).toEqual({
        code: 1,
        stderr: expect.stringContaining(`a running server holds ${join(server.dataDir, "imgpress.db.serving")}`),
      });
      // migrate-data would copy a database still being written (or write under a server): refused the same way.
      const copy = await runCli(
        [
          "migrate-data",
          "--from",
          `file:${join(server.dataDir, "imgpress.db")}`,
          "--to",
          `file:${join(server.dataDir, "copy.db")}`,
        ],
        server.env,
      );
      expect({ code: copy.code, stderr: copy.stderr }).toEqual({
        code: 1,
        stderr: expect.stringContaining("a running server holds"),
      });
      // Nothing was moved: the live server still answers for its key, and issues new ones into its file.
      expect((await convertBearer(server, keys.api_key, await burstForm(await img.photo(64, 48)))).status).toBe(200);
      const later = await obtainKeys(server, sink, "later@example.com");
      // kill -9: no code of the server runs, and the lock still goes with the process.
      server.kill("SIGKILL");
      await server.exited();
      const restored = await runCli(["restore", backup], server.env);
      expect({ code: restored.code, stderr: restored.stderr }).toMatchObject({ code: 0 });
      await server.restart();
      expect((await convertBearer(server, keys.api_key, await burstForm(await img.photo(64, 48)))).status).toBe(200);
      // The backup predates it: restoring is what loses it, and the operator was told where the old file went.
      expect(restored.stdout).toContain("previous database kept as");
      expect((await convertBearer(server, later.api_key, await burstForm(await img.photo(64, 48)))).status).toBe(401);
    } finally {
      await server.stop();
    }
  }, 120_000);

  test("a database file replaced under the server: writes refused 503, readiness 503, one error line; the new file served after a restart", async () => {
    const server = await startServer({ env: { IMGPRESS_SMTP_URL: sink.url } });
    try {
      const keys = await obtainKeys(server, sink, "kept@example.com");
      const backup = join(server.dataDir, "kept.backup.db");
      expect(await runCli(["backup", backup], server.env)).toMatchObject({ code: 0, stderr: "" });
      // The backup restored elsewhere (same master key), then put in place as a restore with its checks bypassed would: the old file aside.
      // (A copy of the backup goes there first: under Deno the command line reads only its own data folder.)
      const elsewhere = join(dir, "elsewhere");
      mkdirSync(elsewhere);
      copyFileSync(backup, join(elsewhere, "kept.backup.db"));
      const staged = await runCli(["restore", join(elsewhere, "kept.backup.db")], { IMGPRESS_DATA_DIR: elsewhere });
      expect({ code: staged.code, stderr: staged.stderr }).toMatchObject({ code: 0 });
      const db = join(server.dataDir, "imgpress.db");
      for (const ext of ["", "-wal", "-shm"])
        if (existsSync(`${db}${ext}`)) renameSync(`${db}${ext}`, `${db}.aside${ext}`);
      copyFileSync(join(elsewhere, "imgpress.db"), db);
      const mailsBefore = sink.messages.length;
      for (let i = 0; i < 3; i++) {
        const res = await server.json("POST", "/v1/plugin/auth/request-otp", { email: `lost${i}@example.com` });
        expectStorageUnavailable({ status: res.status, headers: res.headers, body: res.body });
      }
      const ready = await server.json("GET", "/health/ready");
      expect({ status: ready.status, database: ready.body.checks?.database }).toEqual({
        status: 503,
        database: "database file removed or replaced",
      });
      expect(sink.messages.length).toBe(mailsBefore);
      const errors = server.logs.filter((l) => l.json?.level === "error");
      expect(errors.map((l) => l.json?.msg)).toEqual([
        "database file lost: every statement is refused until it is back or the server restarts",
      ]);
      expect(String(errors[0]!.json?.fault)).toContain("was replaced by another file");
      await server.restart();
      expect((await server.json("GET", "/health/ready")).status).toBe(200);
      expect((await convertBearer(server, keys.api_key, await burstForm(await img.photo(64, 48)))).status).toBe(200);
      await obtainKeys(server, sink, "after@example.com");
    } finally {
      await server.stop();
    }
  }, 120_000);
});
