/**
 * The pid record where the runtime may not ask whether its process runs (Deno without
 * --allow-run; under Bun a second server is refused, test/cli/cli.test.ts): a second server is
 * refused by the first one's serving lock and leaves the first one's record in place, and
 * migrate-data refuses while a record names a process, saying how to go on.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { e2eRuntime, runCli, startServer } from "../support/server.ts";

describe.skipIf(e2eRuntime() !== "deno")("the pid record under Deno without --allow-run", () => {
  test("a second server is refused by the serving lock and keeps the first one's record; migrate-data is refused while it names a process", async () => {
    const first = await startServer();
    try {
      const record = join(first.dataDir, "imgpress.db.pid");
      const firstRecord = readFileSync(record, "utf8");
      // Deno may not read /proc here: the number alone, and the role.
      expect(firstRecord).toMatch(/^\d+\nrole=serve\n$/);
      const firstPid = firstRecord.split("\n")[0]!;
      // The record cannot tell, but the first server's serving lock can (src/server/servinglock.ts): the second is refused.
      const second = await runCli(["serve"], { ...first.env, IMGPRESS_PORT: "0" });
      expect({ code: second.code, stderr: second.stderr }).toEqual({
        code: 1,
        stderr: expect.stringContaining(`another live server holds ${record.replace(/\.pid$/, ".serving")}`),
      });
      expect(readFileSync(record, "utf8")).toBe(firstRecord);
      const copy = await runCli(
        [
          "migrate-data",
          "--from",
          `file:${join(first.dataDir, "imgpress.db")}`,
          "--to",
          `file:${join(first.dataDir, "copy.db")}`,
        ],
        first.env,
      );
      expect(copy.code).toBe(1);
      expect(copy.stderr).toContain(
        `${record} names process ${firstPid}, and this runtime may not ask whether it runs (Deno without --allow-run)`,
      );
    } finally {
      await first.stop();
    }
  }, 60_000);

  // A restore's record that cannot be checked is taken as a restore under way: a server started
  // then would open the file about to be moved aside (delete the record if no restore runs).
  test("a server refuses a restore's record it cannot check", async () => {
    const first = await startServer();
    const dataDir = first.dataDir;
    await first.stop({ keepData: true });
    const record = join(dataDir, "imgpress.db.pid");
    writeFileSync(record, `${process.pid}\nrole=restore\n`);
    const served = await runCli(["serve"], { IMGPRESS_DATA_DIR: dataDir, IMGPRESS_PORT: "0" });
    expect({ code: served.code, stderr: served.stderr.trim() }).toEqual({
      code: 1,
      stderr: `imgpress: ${record} names process ${process.pid}, and this runtime may not ask whether it runs (Deno without --allow-run): stop that server first; if none runs, delete ${record}`,
    });
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);
});
