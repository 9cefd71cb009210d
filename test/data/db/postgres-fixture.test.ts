/**
 * The PostgreSQL fixture (test/support/postgres.ts) on a real cluster: one cluster per process,
 * distinct databases per call, password really checked over TCP, stop/start on the same port and
 * data, and nothing left on disk after stopPostgres().
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { createDatabase, psql, startPostgres, stopPostgres } from "../../support/postgres.ts";

afterAll(() => stopPostgres());

describe("postgres fixture", () => {
  test("one cluster per process", async () => {
    const [a, b] = await Promise.all([startPostgres(), startPostgres()]);
    expect(a).toBe(b);
    expect(a.adminUrl).toBe(`postgres://imgpress:${a.password}@127.0.0.1:${a.port}/postgres`);
    expect(await psql(a.adminUrl, "SELECT current_user")).toBe("imgpress");
  });

  test("createDatabase gives distinct, working databases", async () => {
    const pg = await startPostgres();
    const [one, two] = await Promise.all([createDatabase("fixture"), createDatabase()]);
    expect(one).not.toBe(two);
    for (const url of [one, two])
      expect(url.startsWith(`postgres://imgpress:${pg.password}@127.0.0.1:${pg.port}/`)).toBe(true);
    const name = (url: string) => new URL(url).pathname.slice(1);
    expect(name(one)).toMatch(/^fixture_\d+_[0-9a-f]{8}$/);
    expect(name(two)).toMatch(/^test_\d+_[0-9a-f]{8}$/);
    expect(await psql(one, "SELECT current_database()")).toBe(name(one));
    expect(await psql(two, "SELECT current_database()")).toBe(name(two));
    // Isolated: a table made in one is not in the other.
    await psql(one, "CREATE TABLE only_here (n int); INSERT INTO only_here VALUES (7)");
    expect(await psql(one, "SELECT n FROM only_here")).toBe("7");
    await expect(psql(two, "SELECT n FROM only_here")).rejects.toThrow(/relation "only_here" does not exist/);
  });

  test("a wrong password is refused", async () => {
    const url = new URL(await createDatabase("pw"));
    url.password = "not-the-password";
    await expect(psql(url.href, "SELECT 1")).rejects.toThrow(/password authentication failed for user "imgpress"/);
  });

  test("invalid prefixes are refused before reaching the server", async () => {
    for (const prefix of ["", "Upper", "1digit", 'x"; DROP DATABASE postgres; --']) {
      await expect(createDatabase(prefix)).rejects.toThrow("prefix must match");
    }
  });

  test("stop refuses connections, start brings the same data back on the same port", async () => {
    const pg = await startPostgres();
    const url = await createDatabase("restart");
    await psql(url, "CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)");
    await pg.stop();
    await pg.stop();
    await expect(psql(url, "SELECT 1")).rejects.toThrow(/Connection refused/);
    await pg.start();
    expect(await psql(url, "SELECT n FROM kept")).toBe("42");
    await pg.restart();
    expect(await psql(url, "SELECT n FROM kept")).toBe("42");
  });

  test("stopPostgres stops the server and removes its folder; a later start makes a new cluster", async () => {
    const first = await startPostgres();
    const dataDir = await psql(first.adminUrl, "SHOW data_directory");
    expect(existsSync(dataDir)).toBe(true);
    await stopPostgres();
    expect(existsSync(dataDir)).toBe(false);
    await expect(psql(first.adminUrl, "SELECT 1")).rejects.toThrow(/Connection refused/);
    const second = await startPostgres();
    expect(second).not.toBe(first);
    expect(await psql(await createDatabase(), "SELECT 1")).toBe("1");
  });
});
