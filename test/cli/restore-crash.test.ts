/**
 * A restore killed between its renames (kill -9, out of memory, a power cut; signals wait for
 * them): the plan it wrote first lets the next server start, or the next restore, finish it from
 * wherever it stopped, and every other command refuses the folder meanwhile instead of opening
 * (or creating) a database there. Before the plan, a kill there left no database, which the next
 * start replaced with a new, empty one, or the backup's key beside the old database.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stageSnapshot } from "../../src/data/db/backup.ts";
import {
  finishInterruptedRestore,
  type RestorePlan,
  restorePlanPath,
  undoRestore,
  writeRestorePlan,
} from "../../src/data/db/restore-plan.ts";
import { runCli, startServer } from "../support/server.ts";

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "imgpress-restore-crash-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const STAGE_ID = "0b8f9a52-3c1e-4d7a-9f00-1234567890ab";

/** A folder holding an "old" database (with its -wal) and key, a staged "new" copy, and the plan between them. */
async function folder(name: string, swapKey: boolean) {
  const dir = join(tmp, name);
  await mkdir(dir);
  const target = join(dir, "imgpress.db");
  await writeFile(target, "old database");
  await writeFile(`${target}-wal`, "old wal");
  await writeFile(join(dir, "master.key"), "old key\n");
  const plan: RestorePlan = {
    stage: `${target}.restore-${STAGE_ID}`,
    suffix: ".before-restore-20261125T000000",
    keyFile: join(dir, "master.key"),
    asideKey: swapKey ? join(dir, "master.key.before-restore-20261125T000000") : null,
    keyText: swapKey ? "new key\n" : null,
  };
  await writeFile(plan.stage, "new database");
  await writeRestorePlan(target, plan);
  return { dir, target, plan };
}

// The renames a restore makes, in its order: a kill after any number of them is a crash point.
const STEPS: ((f: Awaited<ReturnType<typeof folder>>) => Promise<void>)[] = [
  async ({ plan }) => void (plan.asideKey && (await rename(plan.keyFile, plan.asideKey))),
  async ({ plan }) => void (plan.keyText !== null && (await writeFile(plan.keyFile, plan.keyText))),
  async ({ target, plan }) => rename(target, `${target}${plan.suffix}`),
  async ({ target, plan }) => rename(`${target}-wal`, `${target}${plan.suffix}-wal`),
  async ({ target, plan }) => rename(plan.stage, target),
];

describe("a restore killed after any of its renames is finished by the next one to claim the folder", () => {
  for (const swapKey of [true, false]) {
    for (let done = 0; done <= STEPS.length; done++) {
      test(`${swapKey ? "with" : "without"} a new key, killed after ${done} rename(s)`, async () => {
        const f = await folder(`k${swapKey ? 1 : 0}-${done}`, swapKey);
        for (const step of STEPS.slice(0, done)) await step(f);
        // A copy staged by a restore killed before its plan: removed too (the plan's own is not).
        await writeFile(`${f.target}.restore-11111111-2222-3333-4444-555555555555`, "stale");
        await writeFile(`${f.target}.restore-11111111-2222-3333-4444-555555555555-wal`, "stale");

        const finished = await finishInterruptedRestore(f.target);
        expect(finished).toEqual({ aside: `${f.target}${f.plan.suffix}`, asideKey: f.plan.asideKey });
        expect(await readFile(f.target, "utf8")).toBe("new database");
        expect(await readFile(`${f.target}${f.plan.suffix}`, "utf8")).toBe("old database");
        expect(await readFile(`${f.target}${f.plan.suffix}-wal`, "utf8")).toBe("old wal");
        expect(await readFile(f.plan.keyFile, "utf8")).toBe(swapKey ? "new key\n" : "old key\n");
        if (f.plan.asideKey) expect(await readFile(f.plan.asideKey, "utf8")).toBe("old key\n");
        expect(readdirSync(f.dir).sort()).toEqual(
          [
            "imgpress.db",
            `imgpress.db${f.plan.suffix}`,
            `imgpress.db${f.plan.suffix}-wal`,
            "master.key",
            ...(swapKey ? ["master.key.before-restore-20261125T000000"] : []),
          ].sort(),
        );
        // Nothing left to finish.
        expect(await finishInterruptedRestore(f.target)).toBeNull();
      });
    }
  }

  test("a restore that failed with an error (not a crash) before its copy took the place puts everything back", async () => {
    const f = await folder("undo", true);
    for (const step of STEPS.slice(0, 3)) await step(f);
    await undoRestore(f.target, f.plan);
    expect(await readFile(f.target, "utf8")).toBe("old database");
    expect(await readFile(`${f.target}-wal`, "utf8")).toBe("old wal");
    expect(await readFile(f.plan.keyFile, "utf8")).toBe("old key\n");
    expect(existsSync(restorePlanPath(f.target))).toBe(false);
  });
});

describe("a real data folder whose restore was killed after moving the old database aside", () => {
  test("commands refuse it, naming what to do; the server finishes the restore at start, says so, and serves the restored data", async () => {
    const source = join(tmp, "source");
    expect((await runCli(["staff", "add", "boss@example.com"], { IMGPRESS_DATA_DIR: source })).code).toBe(0);
    const backup = join(tmp, "source.db");
    expect((await runCli(["backup", backup], { IMGPRESS_DATA_DIR: source })).code).toBe(0);
    const dir = join(tmp, "restored");
    expect((await runCli(["restore", backup], { IMGPRESS_DATA_DIR: dir })).code).toBe(0);
    // Killed after the old database went aside: no imgpress.db, the plan and the staged copy there.
    const target = join(dir, "imgpress.db");
    const plan: RestorePlan = {
      stage: `${target}.restore-${STAGE_ID}`,
      suffix: ".before-restore-x",
      keyFile: join(dir, "master.key"),
      asideKey: null,
      keyText: null,
    };
    await stageSnapshot(backup, plan.stage);
    await writeRestorePlan(target, plan);
    await rename(target, `${target}${plan.suffix}`);

    for (const args of [
      ["staff", "list"],
      ["keys", "list"],
      ["backup", join(tmp, "other.db")],
    ]) {
      const refused = await runCli(args, { IMGPRESS_DATA_DIR: dir });
      expect({ args, code: refused.code }).toEqual({ args, code: 1 });
      expect(refused.stderr).toContain("was interrupted");
      expect(refused.stderr).toContain("start the server, or run imgpress restore again");
    }
    expect(existsSync(target)).toBe(false);

    const server = await startServer({ dataDir: dir });
    try {
      const line = server.logs.find((l) => String(l.json?.msg).includes("had been interrupted"))?.json;
      expect(line?.level).toBe("warn");
      expect(String(line?.msg)).toContain(`the database before it kept as ${target}${plan.suffix}`);
      expect((await server.fetch("/health/ready")).status).toBe(200);
    } finally {
      await server.stop();
    }
    const listed = await runCli(["staff", "list"], { IMGPRESS_DATA_DIR: dir });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain("boss@example.com");
    expect(existsSync(restorePlanPath(target))).toBe(false);
  }, 60_000);
});
