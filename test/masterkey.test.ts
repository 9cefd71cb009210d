/**
 * The master key is pinned to its database: a process holding another key refuses to start, with a
 * message naming where its key came from, instead of failing every signed request later.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { boot } from "../src/boot.ts";
import { ConfigError } from "../src/config.ts";
import { databaseFacts } from "../src/db/schema.ts";
import { runCli } from "./support/server.ts";

const KEY_A = "a1".repeat(32);
const KEY_B = "b2".repeat(32);

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "imgpress-masterkey-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Boots on the temporary folder with `key` (or the folder's master.key), runs `use`, closes. */
async function withBooted<T>(key: string | undefined, use: (booted: Awaited<ReturnType<typeof boot>>) => Promise<T>): Promise<T> {
  const env = { IMGPRESS_DATA_DIR: dir, ...(key ? { IMGPRESS_MASTER_KEY: key } : {}) };
  const booted = await boot({ env, loadDocsAsset: async () => new Blob([""]), write: () => {} });
  try {
    return await use(booted);
  } finally {
    booted.store.close();
  }
}

/** The error booting with `key` throws, or null when it boots. */
async function bootError(key: string | undefined): Promise<Error | null> {
  try {
    await withBooted(key, async () => {});
    return null;
  } catch (e) {
    return e as Error;
  }
}

describe("master key check", () => {
  test("the first start pins its key; the same key starts again, another is refused and named", async () => {
    await withBooted(KEY_A, async ({ services }) => void (await services.keys.issue("a@example.com", "")));
    expect(await bootError(KEY_A)).toBeNull();

    const refused = await bootError(KEY_B);
    expect(refused).toBeInstanceOf(ConfigError);
    expect(refused!.message).toContain("IMGPRESS_MASTER_KEY");
    expect(refused!.message).toContain("not the one this database was created with");
    expect(refused!.message).not.toContain(KEY_A);
    expect(refused!.message).not.toContain(KEY_B);
  });

  test("the check value reveals nothing of the key and is refused for a database with no keys too", async () => {
    await withBooted(KEY_A, async ({ store }) => {
      const rows = await store.db.select().from(databaseFacts);
      expect(rows).toHaveLength(1);
      expect(rows[0]!.value).toMatch(/^[0-9a-f]{64}$/);
      expect(rows[0]!.value).not.toBe(KEY_A);
    });
    // No key issued yet: only the pinned value tells the keys apart.
    expect(await bootError(KEY_B)).toBeInstanceOf(ConfigError);
  });

  test("a database from before the check is pinned only by a key that opens its stored secrets", async () => {
    const issued = await withBooted(KEY_A, async ({ services, store }) => {
      const key = await services.keys.issue("a@example.com", "");
      await store.db.delete(databaseFacts);
      return key;
    });
    expect((await bootError(KEY_B))?.message).toContain("not the one this database was created with");
    // The refusal wrote nothing: the right key still pins, and the stored secret still opens.
    await withBooted(KEY_A, async ({ services, store }) => {
      expect(await store.db.select().from(databaseFacts)).toHaveLength(1);
      const active = await services.keys.findActive(issued.apiKey);
      expect(await active!.secret()).toBe(issued.secretKey);
    });
    expect(await bootError(KEY_B)).toBeInstanceOf(ConfigError);
  });

  test("a replaced master.key file: the CLI refuses with the file's path and exit status 2", async () => {
    await withBooted(undefined, async ({ services }) => void (await services.keys.issue("a@example.com", "")));
    const keyFile = join(dir, "master.key");
    const original = await readFile(keyFile, "utf8");
    await writeFile(keyFile, `${KEY_B}\n`);

    const refused = await runCli(["keys", "list"], { IMGPRESS_DATA_DIR: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(keyFile);
    expect(refused.stderr).toContain("not the one this database was created with");
    expect(refused.stderr).not.toContain(original.trim());

    await writeFile(keyFile, original);
    const listed = await runCli(["keys", "list"], { IMGPRESS_DATA_DIR: dir });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain("a@example.com");
  });
});

describe("a master key file that cannot be read", () => {
  test("is named as unreadable, not as missing (a folder in its place stands in for one without read permission)", async () => {
    await withBooted(undefined, async () => {});
    await rm(join(dir, "master.key"));
    await mkdir(join(dir, "master.key"));
    const err = await bootError(undefined);
    expect(err?.message).toStartWith(`cannot read the master key file ${join(dir, "master.key")} (EISDIR)`);
    expect(err?.message).not.toContain("missing");
  });
});
