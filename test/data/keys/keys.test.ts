/**
 * KeyService on a real libSQL file with the harness clock: issue, findActive, revoke, revokeAllOf,
 * list, and the usage counters the usage recorder writes.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import { apiKeys } from "../../../src/data/db/schema.ts";
import { API_KEY_PREFIX, type KeyService, SECRET_KEY_PREFIX } from "../../../src/data/keys/service.ts";
import { createHarness, type Harness, T0 } from "../../support/harness.ts";

let h: Harness;
let keys: KeyService;
beforeEach(async () => {
  h = await createHarness();
  keys = h.services.keys;
});
afterEach(async () => {
  await h.close();
});

/** The stored row of a key id, straight from the table (including hash and sealed secret). */
async function rawRow(id: string) {
  const [row] = await h.store.db.select().from(apiKeys).where(eq(apiKeys.id, id));
  return row!;
}

describe("issue", () => {
  test("returns a fresh pair with recognisable prefixes and at least 256 bits each", async () => {
    const k = await keys.issue("owner@example.com", "https://blog.example.com");
    expect(k.id).toMatch(/^key_[0-9a-f]{16}$/);
    expect(k.apiKey).toStartWith(API_KEY_PREFIX);
    expect(k.secretKey).toStartWith(SECRET_KEY_PREFIX);
    expect(Buffer.from(k.apiKey.slice(API_KEY_PREFIX.length), "base64url").length).toBeGreaterThanOrEqual(32);
    expect(Buffer.from(k.secretKey.slice(SECRET_KEY_PREFIX.length), "base64url").length).toBeGreaterThanOrEqual(32);
    expect(k.keyPrefix).toBe(k.apiKey.slice(0, API_KEY_PREFIX.length + 8));
  });

  test("stores the SHA-256 of the api_key, a display prefix and a sealed secret, never the keys", async () => {
    const k = await keys.issue("owner@example.com", "");
    const row = await rawRow(k.id);
    expect(row.keyHash).toBe(new Bun.CryptoHasher("sha256").update(k.apiKey).digest("hex"));
    expect(row.keyPrefix).toBe(k.keyPrefix);
    expect(row.createdAt).toBe(T0);
    expect(row.lastUsedAt).toBeNull();
    expect(row.revokedAt).toBeNull();
    const serialised = JSON.stringify(row);
    expect(serialised).not.toContain(k.apiKey);
    expect(serialised).not.toContain(k.secretKey);
    expect(serialised).not.toContain(k.secretKey.slice(SECRET_KEY_PREFIX.length));
  });

  test("never repeats a key", async () => {
    const issued = await Promise.all(Array.from({ length: 20 }, (_, i) => keys.issue(`u${i}@example.com`, "")));
    expect(new Set(issued.map((k) => k.apiKey)).size).toBe(20);
    expect(new Set(issued.map((k) => k.secretKey)).size).toBe(20);
    expect(new Set(issued.map((k) => k.id)).size).toBe(20);
  });

  test("issuing again for the same (email, site_url) revokes the previous pair at that moment", async () => {
    const first = await keys.issue("owner@example.com", "https://blog.example.com");
    h.clock.advance(5_000);
    const second = await keys.issue("owner@example.com", "https://blog.example.com");
    expect(await keys.findActive(first.apiKey)).toBeNull();
    expect(await keys.findActive(second.apiKey)).not.toBeNull();
    expect((await rawRow(first.id)).revokedAt).toBe(T0 + 5_000);
  });

  test.each([
    { name: "another site of the same owner", email: "owner@example.com", site: "https://shop.example.com" },
    { name: "the same site of another owner", email: "other@example.com", site: "https://blog.example.com" },
    { name: "no site for the same owner", email: "owner@example.com", site: "" },
  ])("leaves other pairs alone: $name", async ({ email, site }) => {
    const first = await keys.issue("owner@example.com", "https://blog.example.com");
    await keys.issue(email, site);
    expect(await keys.findActive(first.apiKey)).not.toBeNull();
  });
});

describe("findActive", () => {
  test("finds the key by its api_key and opens its secret", async () => {
    const k = await keys.issue("owner@example.com", "");
    const found = await keys.findActive(k.apiKey);
    expect(found).toMatchObject({ id: k.id, email: "owner@example.com" });
    expect(await found!.secret()).toBe(k.secretKey);
  });

  test.each([
    { name: "an unknown key", key: () => `${API_KEY_PREFIX}${"A".repeat(43)}` },
    { name: "the secret_key instead of the api_key", key: (k: { secretKey: string }) => k.secretKey },
    { name: "the api_key without its prefix", key: (k: { apiKey: string }) => k.apiKey.slice(API_KEY_PREFIX.length) },
    { name: "the display prefix only", key: (k: { keyPrefix: string }) => k.keyPrefix },
    {
      name: "the api_key with a changed last character",
      key: (k: { apiKey: string }) => k.apiKey.slice(0, -1) + (k.apiKey.endsWith("A") ? "B" : "A"),
    },
    { name: "the api_key in another case", key: (k: { apiKey: string }) => k.apiKey.toUpperCase() },
    { name: "an empty string", key: () => "" },
    { name: "a very long string", key: () => `${API_KEY_PREFIX}${"A".repeat(10_000)}` },
  ])("returns null for $name", async ({ key }) => {
    const k = await keys.issue("owner@example.com", "");
    expect(await keys.findActive(key(k as never))).toBeNull();
  });

  test("a sealed secret moved to another row does not open (it is bound to its row id)", async () => {
    const a = await keys.issue("a@example.com", "");
    const b = await keys.issue("b@example.com", "");
    const sealedA = (await rawRow(a.id)).secretSealed;
    await h.store.db.update(apiKeys).set({ secretSealed: sealedA }).where(eq(apiKeys.id, b.id));
    await expect((await keys.findActive(b.apiKey))!.secret()).rejects.toThrow();
  });

  test("a tampered sealed secret does not open", async () => {
    const k = await keys.issue("owner@example.com", "");
    const sealed = Buffer.from((await rawRow(k.id)).secretSealed, "base64");
    sealed[sealed.length - 1]! ^= 1;
    await h.store.db
      .update(apiKeys)
      .set({ secretSealed: sealed.toString("base64") })
      .where(eq(apiKeys.id, k.id));
    await expect((await keys.findActive(k.apiKey))!.secret()).rejects.toThrow();
  });
});

describe("revoke and revokeAllOf", () => {
  test("revoke(id) ends the key once; a second revoke or an unknown id answers false", async () => {
    const k = await keys.issue("owner@example.com", "");
    h.clock.advance(1_000);
    expect(await keys.revoke(k.id)).toBe(true);
    expect(await keys.findActive(k.apiKey)).toBeNull();
    expect((await rawRow(k.id)).revokedAt).toBe(T0 + 1_000);
    h.clock.advance(1_000);
    expect(await keys.revoke(k.id)).toBe(false);
    expect((await rawRow(k.id)).revokedAt).toBe(T0 + 1_000); // the first revocation time stands
    expect(await keys.revoke("key_0000000000000000")).toBe(false);
  });

  test("revokeAllOf(email) ends every active key of that address only", async () => {
    const mine = [
      await keys.issue("owner@example.com", ""),
      await keys.issue("owner@example.com", "https://a.example.com"),
    ];
    const theirs = await keys.issue("other@example.com", "");
    expect(await keys.revokeAllOf("owner@example.com")).toHaveLength(2);
    for (const k of mine) expect(await keys.findActive(k.apiKey)).toBeNull();
    expect(await keys.findActive(theirs.apiKey)).not.toBeNull();
    expect(await keys.revokeAllOf("owner@example.com")).toHaveLength(0);
  });
});

describe("list", () => {
  test("newest first, filtered by activity and owner, never with hash or sealed secret", async () => {
    const a = await keys.issue("a@example.com", "");
    h.clock.advance(1_000);
    const b = await keys.issue("b@example.com", "https://b.example.com");
    h.clock.advance(1_000);
    const c = await keys.issue("a@example.com", "https://c.example.com");
    await keys.revoke(b.id);

    expect((await keys.list()).map((r) => r.id)).toEqual([c.id, b.id, a.id]);
    expect((await keys.list({ activeOnly: true })).map((r) => r.id)).toEqual([c.id, a.id]);
    expect((await keys.list({ email: "a@example.com" })).map((r) => r.id)).toEqual([c.id, a.id]);
    expect((await keys.list({ email: "b@example.com", activeOnly: true })).map((r) => r.id)).toEqual([]);
    expect(await keys.list({ email: "nobody@example.com" })).toEqual([]);

    for (const row of await keys.list()) {
      expect(Object.keys(row)).not.toContain("keyHash");
      expect(Object.keys(row)).not.toContain("secretSealed");
    }
    const [rowB] = await keys.list({ email: "b@example.com" });
    expect(rowB).toMatchObject({
      id: b.id,
      email: "b@example.com",
      siteUrl: "https://b.example.com",
      keyPrefix: b.keyPrefix,
      createdAt: T0 + 1_000,
    });
    expect(rowB!.revokedAt).toBe(T0 + 2_000);
  });
});

/** One successful conversion of `keyId` as the conversion path reports it, ending now. */
function used(keyId: string, bytesIn: number, bytesOut: number) {
  return {
    keyId,
    format: "webp" as const,
    quality: "lossy" as const,
    outcome: "ok",
    bytesIn,
    bytesOut,
    queueWaitMs: 0,
    convertMs: 12,
    guardEncodes: 0,
    at: h.clock.now(),
  };
}

describe("usage counters (written by the usage recorder's flush)", () => {
  test("counts conversions and bytes and stamps the last use", async () => {
    const k = await keys.issue("owner@example.com", "");
    const other = await keys.issue("other@example.com", "");
    h.clock.advance(10_000);
    h.services.usage.record(used(k.id, 1_000, 400));
    h.clock.advance(10_000);
    h.services.usage.record(used(k.id, 2_000, 900));
    await h.services.usage.flush();
    const [row] = await keys.list({ email: "owner@example.com" });
    expect(row).toMatchObject({ conversions: 2, bytesIn: 3_000, bytesOut: 1_300, lastUsedAt: T0 + 20_000 });
    const [untouched] = await keys.list({ email: "other@example.com" });
    expect(untouched).toMatchObject({ id: other.id, conversions: 0, bytesIn: 0, bytesOut: 0, lastUsedAt: null });
  });

  test("concurrent uses are all counted", async () => {
    const k = await keys.issue("owner@example.com", "");
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        h.services.usage.record(used(k.id, 10, 5));
        await h.services.usage.flush();
      }),
    );
    const [row] = await keys.list();
    expect(row).toMatchObject({ conversions: 10, bytesIn: 100, bytesOut: 50 });
  });
});

describe("a key change and its audit event are one transaction", () => {
  // A crash (or any failure) between the two left issued or revoked keys with no event in the trail.
  test("an audit insert that fails takes the issuance or the revocation back with it", async () => {
    const kept = await h.issueKey("kept@example.com");
    const [row] = await keys.list({ email: "kept@example.com" });
    await h.store.all(
      sql`CREATE TRIGGER audit_refuses BEFORE INSERT ON audit_events BEGIN SELECT RAISE(ABORT, 'audit refused'); END`,
    );
    await expect(h.services.revocation.revoke(row!.id, "cli")).rejects.toThrow();
    await expect(h.services.revocation.revokeAllOf("kept@example.com", "cli")).rejects.toThrow();
    expect(await keys.findActive(kept.api_key)).not.toBeNull();
    const { code } = await h.obtainOtp("new@example.com");
    expect((await h.verifyOtp({ email: "new@example.com", otp: code })).status).toBe(500);
    expect(await keys.list({ email: "new@example.com" })).toEqual([]);

    await h.store.all(sql`DROP TRIGGER audit_refuses`);
    expect(await h.services.revocation.revoke(row!.id, "cli")).toBe(true);
    const events = (await h.services.audit.page({ type: "key.revoked" })).events;
    expect(events.map((e) => e.subject)).toEqual([row!.id]);
  });
});
