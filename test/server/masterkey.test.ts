/**
 * The master key is pinned to its database: a process holding another key refuses to start, with a
 * message naming where its key came from, instead of failing every signed request later.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { ConfigError } from "../../src/core/config.ts";
import { sqliteMigrations } from "../../src/data/db/migrations.gen.ts";
import { databaseFacts } from "../../src/data/db/schema.ts";
import { boot } from "../../src/server/boot.ts";
import { runCli } from "../support/server.ts";

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
async function withBooted<T>(
  key: string | undefined,
  use: (booted: Awaited<ReturnType<typeof boot>>) => Promise<T>,
): Promise<T> {
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

describe("a database from an older version (before the pin, 0004, and every migration after it)", () => {
  /** The migrations a database of version 0003 lacks: the pin (0004) and all that came after. */
  const SINCE_PIN = sqliteMigrations.slice(sqliteMigrations.findIndex((m) => m.tag.startsWith("0004_")));
  /** The tables those migrations create, dropped to bring a database back to 0003. */
  const TABLES_SINCE_PIN = SINCE_PIN.flatMap((m) =>
    [...m.sql.matchAll(/CREATE TABLE `(\w+)`/g)].map((match) => match[1]!),
  );

  /** A database with one key pair, brought back to the schema of a version before 0004 (no pin, no guard_encodes). */
  async function olderDatabase(key: string | undefined): Promise<void> {
    await withBooted(key, async ({ services }) => void (await services.keys.issue("a@example.com", "")));
    const client = createClient({ url: `file:${join(dir, "imgpress.db")}` });
    try {
      for (const table of ["api_keys", "usage_daily_total", "usage_hourly", "usage_hourly_total"])
        await client.execute(`ALTER TABLE ${table} DROP COLUMN guard_encodes`);
      // Columns added to older tables since then, by the migration that added each.
      await client.execute("ALTER TABLE api_keys DROP COLUMN last_address");
      for (const table of TABLES_SINCE_PIN) await client.execute(`DROP TABLE ${table}`);
      await client.execute({
        sql: "DELETE FROM __drizzle_migrations WHERE created_at >= ?",
        args: [SINCE_PIN[0]!.when],
      });
    } finally {
      client.close();
    }
  }

  async function recordedMigrations(): Promise<number> {
    const client = createClient({ url: `file:${join(dir, "imgpress.db")}` });
    try {
      return Number((await client.execute("SELECT count(*) FROM __drizzle_migrations")).rows[0]![0]);
    } finally {
      client.close();
    }
  }

  test("its master.key missing: refused as missing, no key generated, nothing migrated", async () => {
    await olderDatabase(undefined);
    await rm(join(dir, "master.key"));
    const refused = await runCli(["keys", "list"], { IMGPRESS_DATA_DIR: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `the master key file ${join(dir, "master.key")} is missing, and this database was created with a master key`,
    );
    expect(existsSync(join(dir, "master.key"))).toBe(false);
    expect(await recordedMigrations()).toBe(sqliteMigrations.length - SINCE_PIN.length);
  });

  test("another key: refused before anything is migrated; its own key then migrates and pins", async () => {
    await olderDatabase(KEY_A);
    expect((await bootError(KEY_B))?.message).toContain("not the one this database was created with");
    expect(await recordedMigrations()).toBe(sqliteMigrations.length - SINCE_PIN.length);
    await withBooted(KEY_A, async ({ store }) => {
      expect(store.migrationsApplied).toEqual(SINCE_PIN.map((m) => m.tag));
      expect(await store.db.select().from(databaseFacts)).toHaveLength(1);
    });
  });

  test("backup with another key is refused (exit 2, nothing written), as for a pinned database", async () => {
    await olderDatabase(KEY_A);
    const dest = join(dir, "wrong.db");
    const refused = await runCli(["backup", dest], { IMGPRESS_DATA_DIR: dir, IMGPRESS_MASTER_KEY: KEY_B });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("not the one this database was created with");
    expect(existsSync(dest)).toBe(false);
  });

  test("its --without-key backup is refused by a folder with another key; restored under its own, the migrations applied are named", async () => {
    await olderDatabase(KEY_A);
    const bare = join(dir, "bare.db");
    expect(
      (await runCli(["backup", bare, "--without-key"], { IMGPRESS_DATA_DIR: dir, IMGPRESS_MASTER_KEY: KEY_A })).code,
    ).toBe(0);
    const other = join(dir, "other");
    expect((await runCli(["migrate"], { IMGPRESS_DATA_DIR: other })).code).toBe(0);
    const refused = await runCli(["restore", bare], { IMGPRESS_DATA_DIR: other });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      "restore refused, nothing changed: the backup holds no master key and its database was created under another key",
    );
    const same = join(dir, "same");
    await mkdir(same);
    await writeFile(join(same, "master.key"), `${KEY_A}\n`);
    const restored = await runCli(["restore", bare], { IMGPRESS_DATA_DIR: same });
    expect(restored.code).toBe(0);
    expect(restored.stdout).toContain(
      `applied ${SINCE_PIN.length} migrations (${SINCE_PIN.map((m) => m.tag).join(", ")}); database is up to date`,
    );
  });

  test("a command beside a running server does not migrate the file under it; serve is refused as before", async () => {
    await olderDatabase(KEY_A);
    // This test's own process stands in for the running server the record names.
    await writeFile(join(dir, "imgpress.db.pid"), `${process.pid}\n`);
    const env = { IMGPRESS_DATA_DIR: dir, IMGPRESS_MASTER_KEY: KEY_A };
    for (const argv of [["keys", "list"], ["migrate"]]) {
      const refused = await runCli(argv, env);
      expect({ argv, code: refused.code }).toEqual({ argv, code: 1 });
      expect(refused.stderr).toContain(
        `this imgpress would migrate the database (${SINCE_PIN.map((m) => m.tag).join(", ")}) under a running server: a server (pid ${process.pid})`,
      );
    }
    expect(await recordedMigrations()).toBe(sqliteMigrations.length - SINCE_PIN.length);
    // Once migrated (the server stopped and this version started), the commands run beside a server again.
    await rm(join(dir, "imgpress.db.pid"));
    expect((await runCli(["migrate"], env)).code).toBe(0);
    await writeFile(join(dir, "imgpress.db.pid"), `${process.pid}\n`);
    expect((await runCli(["keys", "list"], env)).code).toBe(0);
  });
});

describe("a database migrated by a newer version", () => {
  test("is refused, left as it was, by the server, the commands and restore", async () => {
    await withBooted(KEY_A, async () => {});
    const file = join(dir, "imgpress.db");
    const future = sqliteMigrations.at(-1)!.when + 1;
    const client = createClient({ url: `file:${file}` });
    await client.execute({
      sql: "INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('from-a-newer-version', ?)",
      args: [future],
    });
    client.close();
    expect((await bootError(KEY_A))?.message).toContain(
      `this database was migrated by a newer imgpress (its newest migration is from ${new Date(future).toISOString()}; this version knows migrations up to ${sqliteMigrations.at(-1)!.tag})`,
    );
    const env = { IMGPRESS_DATA_DIR: dir, IMGPRESS_MASTER_KEY: KEY_A };
    const migrate = await runCli(["migrate"], env);
    expect(migrate.code).toBe(1);
    expect(migrate.stderr).toContain("migrated by a newer imgpress");
    expect(migrate.stdout).not.toContain("up to date");
    // Its backup cannot be restored by this version either: refused before anything is replaced.
    const copy = join(dir, "newer-backup.db");
    expect((await runCli(["backup", copy], env)).code).toBe(0);
    const target = join(dir, "target");
    const restore = await runCli(["restore", copy], { IMGPRESS_DATA_DIR: target });
    expect(restore.code).toBe(1);
    expect(restore.stderr).toContain(
      "restore refused, nothing changed: this database was migrated by a newer imgpress",
    );
    expect(existsSync(join(target, "imgpress.db"))).toBe(false);
  });
});
