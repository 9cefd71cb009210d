/**
 * What a copy of the database file gives away: the raw bytes of the libSQL file and its WAL must
 * hold neither api_key nor secret_key nor one-time code, and without the master key the sealed
 * secrets cannot be opened. The service itself can still recover each secret.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { copyFile, readFile } from "node:fs/promises";
import { join } from "node:path";
import { ConfigError } from "../../../src/core/config.ts";
import { deriveKey, SecretBox } from "../../../src/core/crypto.ts";
import { createLogger } from "../../../src/core/log.ts";
import { openSqliteStore as openStore } from "../../../src/data/db/sqlite.ts";
import { KeyService } from "../../../src/data/keys/service.ts";
import { createServices } from "../../../src/services.ts";
import { createHarness, type Harness, TEST_MASTER_KEY } from "../../support/harness.ts";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

/** The database file and its write-ahead log, as bytes (the WAL may not exist after a checkpoint). */
async function databaseBytes(dbPath: string): Promise<{ name: string; bytes: Buffer }[]> {
  const files = [{ name: "db", bytes: await readFile(dbPath) }];
  const wal = await readFile(`${dbPath}-wal`).catch(() => null);
  if (wal) files.push({ name: "wal", bytes: wal });
  return files;
}

/** True when any of the files contains `needle` (as UTF-8). */
function anyContains(files: { bytes: Buffer }[], needle: string): boolean {
  return files.some((f) => f.bytes.includes(Buffer.from(needle, "utf8")));
}

const sha256 = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex");

/** Issues three key pairs (one of them rotated) and leaves one code pending; returns every secret involved. */
async function populate() {
  const issued = [
    await h.issueKey("alice@example.com", "https://blog.example.com"),
    await h.issueKey("bob@example.com"),
  ];
  h.clock.advance(61_000);
  issued.push(await h.issueKey("alice@example.com", "https://blog.example.com")); // rotates alice's first pair
  const pending = await h.obtainOtp("carol@example.com");
  const codes = h.smtp.messages
    .filter((m) => /code/i.test(m.subject))
    .map((m) => /(?<!\d)\d{6}(?!\d)/.exec(m.text)![0]);
  return { issued, pending, codes };
}

describe("the database file at rest", () => {
  test("holds no api_key, secret_key or code — only hashes and sealed secrets", async () => {
    const { issued, codes } = await populate();
    const files = await databaseBytes(h.dbPath);

    // Positive controls: the rows really are in these bytes (so the negative checks mean something).
    expect(anyContains(files, "alice@example.com")).toBe(true);
    for (const k of issued) expect(anyContains(files, sha256(k.api_key))).toBe(true);

    for (const k of issued) {
      for (const secret of [k.api_key, k.secret_key, k.api_key.slice(4), k.secret_key.slice(5)]) {
        expect({ secret, found: anyContains(files, secret) }).toEqual({ secret, found: false });
      }
      // Nor a trivially reversible form of the secret.
      for (const encoded of [Buffer.from(k.secret_key).toString("base64"), Buffer.from(k.secret_key).toString("hex")]) {
        expect(anyContains(files, encoded)).toBe(false);
      }
    }
    expect(codes.length).toBe(4);
    for (const code of codes) expect({ code, found: anyContains(files, code) }).toEqual({ code, found: false });
    expect(anyContains(files, TEST_MASTER_KEY)).toBe(false);
  });

  test("the service recovers each active secret from its sealed form", async () => {
    const { issued } = await populate();
    const [aliceOld, bob, aliceNew] = issued;
    expect(await (await h.services.keys.findActive(bob!.api_key))!.secret()).toBe(bob!.secret_key);
    expect(await (await h.services.keys.findActive(aliceNew!.api_key))!.secret()).toBe(aliceNew!.secret_key);
    expect(await h.services.keys.findActive(aliceOld!.api_key)).toBeNull();
  });

  test("a copy of the file without the master key cannot open the secrets", async () => {
    const { issued } = await populate();
    const copy = join(h.dir, "stolen.db");
    await h.sqlite.client.execute("PRAGMA wal_checkpoint(TRUNCATE)");
    await copyFile(h.dbPath, copy);

    const store = await openStore(`file:${copy}`);
    try {
      const deps = {
        config: h.config,
        store,
        mailer: { isDevelopment: true, send: async () => {} },
        logger: createLogger("error", () => {}),
        masterKey: new Uint8Array(32).fill(7), // the attacker's guess
        loadDocsAsset: async () => new Blob([""]),
      };
      // The service refuses the guessed key outright (the database is pinned to its own)…
      await expect(createServices(deps)).rejects.toBeInstanceOf(ConfigError);
      // …and even past that check, holding the api_key, the secret does not decrypt under another key.
      const keys = new KeyService(
        store,
        await SecretBox.create(await deriveKey(deps.masterKey, "secret-box")),
        Date.now,
      );
      const found = await keys.findActive(issued[1]!.api_key);
      expect(found).not.toBeNull();
      await expect(found!.secret()).rejects.toThrow();
    } finally {
      store.close();
    }
  });
});
