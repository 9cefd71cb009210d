/**
 * Database migrations: the embedded copy (src/data/db/migrations.gen.ts) matches drizzle/, migrating is
 * idempotent and atomic, and the bookkeeping in `__drizzle_migrations` is the one drizzle's own
 * migrator reads, so either tool can take over a database.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Client, createClient } from "@libsql/client";
import { drizzle } from "drizzle-orm/libsql";
import { migrate as drizzleMigrate } from "drizzle-orm/libsql/migrator";
import { embeddedMigrationsSource } from "../../../src/data/db/embed.ts";
import { type Migration, migrateSqlite as migrate } from "../../../src/data/db/migrate.ts";
import { sqliteMigrations as migrations } from "../../../src/data/db/migrations.gen.ts";
import { openSqliteStore as openStore } from "../../../src/data/db/sqlite.ts";
import { runCli } from "../../support/server.ts";

const DRIZZLE_ROOT = new URL("../../../drizzle/", import.meta.url);
const DRIZZLE_FOLDER = new URL("sqlite/", DRIZZLE_ROOT);
const APP_TABLES = ["api_keys", "otp_codes", "rate_events", "seen_signatures"];

let dir: string;
let client: Client;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "imgpress-migrations-"));
  client = createClient({ url: `file:${join(dir, "test.db")}` });
});
afterEach(async () => {
  client.close();
  await rm(dir, { recursive: true, force: true });
});

async function tables(c: Client = client): Promise<string[]> {
  const rs = await c.execute(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
  );
  return rs.rows.map((r) => String(r.name));
}

async function bookkeeping(c: Client = client): Promise<{ hash: string; created_at: number }[]> {
  const rs = await c.execute("SELECT hash, created_at FROM __drizzle_migrations ORDER BY created_at");
  return rs.rows.map((r) => ({ hash: String(r.hash), created_at: Number(r.created_at) }));
}

const sha256 = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex");

describe("embedded migrations", () => {
  test("src/data/db/migrations.gen.ts is in sync with drizzle/ (run `bun run db:generate` if not)", async () => {
    const expected = await embeddedMigrationsSource(DRIZZLE_ROOT);
    const actual = await readFile(new URL("../../../src/data/db/migrations.gen.ts", import.meta.url), "utf8");
    expect(actual).toBe(expected);
  });

  test("each entry carries its SQL file's SHA-256, as drizzle-kit records it", async () => {
    const journal = JSON.parse(await readFile(new URL("meta/_journal.json", DRIZZLE_FOLDER), "utf8")) as {
      entries: { tag: string; when: number }[];
    };
    expect(migrations.map((m) => m.tag)).toEqual(journal.entries.map((e) => e.tag));
    for (const m of migrations) {
      const sql = await readFile(new URL(`${m.tag}.sql`, DRIZZLE_FOLDER), "utf8");
      expect(m.hash).toBe(sha256(sql));
      expect(m.when).toBe(journal.entries.find((e) => e.tag === m.tag)!.when);
    }
  });
});

describe("migrate", () => {
  test("creates the tables and records one row per migration in __drizzle_migrations", async () => {
    expect(await migrate(client, migrations)).toEqual(migrations.map((m) => m.tag));
    expect(await tables()).toEqual(expect.arrayContaining([...APP_TABLES, "__drizzle_migrations"]));
    expect(await bookkeeping()).toEqual(migrations.map((m) => ({ hash: m.hash, created_at: m.when })));
  });

  test("migrating twice is a no-op", async () => {
    await migrate(client, migrations);
    const before = { tables: await tables(), rows: await bookkeeping() };
    expect(await migrate(client, migrations)).toEqual([]);
    expect({ tables: await tables(), rows: await bookkeeping() }).toEqual(before);
  });

  test("opening the store twice on one file keeps data and bookkeeping", async () => {
    const url = `file:${join(dir, "store.db")}`;
    const first = await openStore(url);
    await first.client.execute("INSERT INTO rate_events (bucket, at) VALUES ('probe', 1)");
    await first.close();
    const second = await openStore(url);
    try {
      expect(await bookkeeping(second.client)).toHaveLength(migrations.length);
      expect((await second.client.execute("SELECT count(*) AS n FROM rate_events")).rows[0]!.n).toBe(1);
    } finally {
      await second.close();
    }
  });

  test("only migrations newer than the last recorded one run", async () => {
    await migrate(client, migrations);
    const last = migrations.at(-1)!;
    const next: Migration = {
      tag: "9999_probe",
      when: last.when + 1,
      hash: sha256("probe"),
      sql: "CREATE TABLE probe (x integer);",
    };
    expect(await migrate(client, [...migrations, next])).toEqual(["9999_probe"]);
    expect(await tables()).toContain("probe");
    expect(await bookkeeping()).toHaveLength(migrations.length + 1);
  });

  test("the usage_daily migration backfills it from usage_hourly: per key and UTC day, volumes of successful conversions only", async () => {
    const added = migrations.findIndex((m) => m.sql.includes("CREATE TABLE `usage_daily`"));
    expect(added).toBeGreaterThan(0);
    await migrate(client, migrations.slice(0, added));
    const DAY = 86_400_000;
    const bucket = (hour: number, key: string, outcome: string, count: number, bytesIn: number, bytesOut: number) =>
      client.execute({
        sql: "INSERT INTO usage_hourly (hour, key_id, format, quality, outcome, count, bytes_in, bytes_out, convert_ms) VALUES (?, ?, 'webp', 'lossy', ?, ?, ?, ?, 0)",
        args: [hour, key, outcome, count, bytesIn, bytesOut],
      });
    await bucket(10 * DAY + 3_600_000, "k1", "ok", 2, 1000, 400);
    await bucket(10 * DAY + 23 * 3_600_000, "k1", "ok", 1, 500, 100);
    await bucket(10 * DAY + 23 * 3_600_000, "k1", "INVALID_IMAGE", 4, 70, 0);
    await bucket(11 * DAY, "k1", "ok", 5, 50, 5);
    await bucket(10 * DAY, "k2", "TIMEOUT", 1, 0, 0);
    await migrate(client, migrations);
    const rows = await client.execute(
      "SELECT day, key_id, conversions, errors, bytes_in, bytes_out FROM usage_daily ORDER BY day, key_id",
    );
    expect(rows.rows.map((r): Record<string, unknown> => ({ ...r }))).toEqual([
      { day: 10 * DAY, key_id: "k1", conversions: 3, errors: 4, bytes_in: 1500, bytes_out: 500 },
      { day: 10 * DAY, key_id: "k2", conversions: 0, errors: 1, bytes_in: 0, bytes_out: 0 },
      { day: 11 * DAY, key_id: "k1", conversions: 5, errors: 0, bytes_in: 50, bytes_out: 5 },
    ]);
  });

  test("a failing migration changes nothing (one transaction)", async () => {
    await migrate(client, migrations);
    const before = { tables: await tables(), rows: await bookkeeping() };
    const broken: Migration = {
      tag: "9999_broken",
      when: migrations.at(-1)!.when + 1,
      hash: sha256("broken"),
      sql: "CREATE TABLE half_done (x integer);\n--> statement-breakpoint\nTHIS IS NOT SQL;",
    };
    await expect(migrate(client, [...migrations, broken])).rejects.toThrow();
    expect({ tables: await tables(), rows: await bookkeeping() }).toEqual(before);
  });
});

describe("concurrent first starts on one fresh database", () => {
  test("a migrator that another process overtakes between its check and its write does not fail", async () => {
    // Models the race deterministically: just before this migrator writes, another process
    // (a second client on the same file) completes the same migrations.
    const other = createClient({ url: `file:${join(dir, "test.db")}` });
    const overtaken = new Proxy(client, {
      get(target, property) {
        if (property === "batch") {
          return async (...args: Parameters<Client["batch"]>) => {
            await migrate(other, migrations);
            return target.batch(...args);
          };
        }
        const value = Reflect.get(target, property);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    try {
      await migrate(overtaken, migrations);
    } finally {
      other.close();
    }
    expect(await bookkeeping()).toHaveLength(migrations.length);
  });

  test("several `imgpress migrate` processes started at once all succeed", async () => {
    // Real processes, several rounds: the failure is a race, so one round may pass by luck.
    for (let round = 0; round < 5; round++) {
      const dataDir = await mkdtemp(join(dir, `round${round}-`));
      const results = await Promise.all(
        Array.from({ length: 4 }, () => runCli(["migrate"], { IMGPRESS_DATA_DIR: dataDir })),
      );
      expect(results.map((r) => (r.code === 0 ? "ok" : r.stderr.trim().split("\n").at(-1)))).toEqual([
        "ok",
        "ok",
        "ok",
        "ok",
      ]);
      const check = createClient({ url: `file:${join(dataDir, "imgpress.db")}` });
      try {
        expect(await bookkeeping(check)).toHaveLength(migrations.length);
      } finally {
        check.close();
      }
    }
  });
});

describe("compatibility with drizzle's own migrator", () => {
  test("drizzle sees nothing to do on a database this migrator prepared", async () => {
    await migrate(client, migrations);
    await drizzleMigrate(drizzle(client), { migrationsFolder: DRIZZLE_FOLDER.pathname });
    expect(await bookkeeping()).toHaveLength(migrations.length);
  });

  test("this migrator sees nothing to do on a database drizzle prepared", async () => {
    await drizzleMigrate(drizzle(client), { migrationsFolder: DRIZZLE_FOLDER.pathname });
    expect(await bookkeeping()).toEqual(migrations.map((m) => ({ hash: m.hash, created_at: m.when })));
    expect(await migrate(client, migrations)).toEqual([]);
  });
});
