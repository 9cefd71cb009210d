/**
 * GET /v1/plugin/account through the real app: the calling key's prefix, owner, site and usage
 * this month, by bearer and by signature (ENDPOINT /plugin/account, empty-body hash), and the
 * usual 401s; listed in the OpenAPI document.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { monthStart } from "../../../src/api/account/index.ts";
import { convertForm, type Keys, postBearer } from "../../support/convert-helpers.ts";
import { createHarness, expectError, type Harness } from "../../support/harness.ts";
import * as img from "../../support/images.ts";
import { EMPTY_SHA256, signedHeaders } from "../../support/sign.ts";

const PATH = "/v1/plugin/account";
let h: Harness;
let keys: Keys;
const nowS = () => Math.floor(h.clock.now() / 1000);

beforeAll(async () => {
  h = await createHarness();
  keys = await h.issueKey("owner@example.com", "https://blog.example.com/");
});
afterAll(() => h.close());

describe("GET /v1/plugin/account", () => {
  test("a fresh key: its prefix, owner, site, version and no usage", async () => {
    const res = await h.request("GET", PATH, { headers: { authorization: `Bearer ${keys.api_key}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.body).toEqual({
      key_prefix: keys.api_key.slice(0, 12),
      email: "owner@example.com",
      site_url: "https://blog.example.com",
      server_version: expect.any(String),
      month: { from: monthStart(h.clock.now()), conversions: 0, bytes_in: 0, bytes_out: 0, bytes_saved: 0 },
      total: { conversions: 0, bytes_saved: 0 },
      max_in_progress: h.config.keyMaxAdmitted,
    });
    expect(res.text).not.toContain(keys.secret_key);
  });

  test("counts this month's conversions and bytes saved once usage is flushed", async () => {
    const image = await img.photo(320, 240);
    for (const format of ["webp", "avif"]) {
      const res = await postBearer(h, keys, await convertForm(image, { format }));
      expect(res.status).toBe(200);
    }
    await h.services.usage.flush();
    const res = await h.request("GET", PATH, { headers: { authorization: `Bearer ${keys.api_key}` } });
    expect(res.body.month.conversions).toBe(2);
    expect(res.body.month.bytes_in).toBe(2 * image.length);
    expect(res.body.month.bytes_saved).toBe(res.body.month.bytes_in - res.body.month.bytes_out);
    expect(res.body.total.conversions).toBe(2);
  });

  test("a signed request signs GET, /plugin/account and the empty body's hash", async () => {
    for (const endpoint of ["/plugin/account", "/v1/plugin/account"]) {
      const headers = signedHeaders({
        ...keys,
        apiKey: keys.api_key,
        secretKey: keys.secret_key,
        timestamp: nowS(),
        method: "GET",
        endpoint,
        bodyHash: EMPTY_SHA256,
      });
      const res = await h.request("GET", PATH, { headers });
      expect(res.status).toBe(200);
      expect(res.body.key_prefix).toBe(keys.api_key.slice(0, 12));
      // The same signature again is a replay.
      expectError(await h.request("GET", PATH, { headers }), 401, "REPLAYED_REQUEST");
      h.clock.advance(1000);
    }
  });

  test.each([
    ["no credentials", {}, "UNAUTHORIZED"],
    ["an unknown key", { authorization: `Bearer imp_${"A".repeat(43)}` }, "INVALID_API_KEY"],
  ])("%s is refused", async (_name, headers, code) => {
    expectError(await h.request("GET", PATH, { headers: headers as Record<string, string> }), 401, code);
  });

  test("a signature made for the convert path is refused here", async () => {
    const headers = signedHeaders({
      apiKey: keys.api_key,
      secretKey: keys.secret_key,
      timestamp: nowS(),
      method: "GET",
      bodyHash: EMPTY_SHA256,
    });
    expectError(await h.request("GET", PATH, { headers }), 401, "INVALID_SIGNATURE");
  });

  test("a revoked key is refused", async () => {
    const other = await h.issueKey("gone@example.com", "https://old.example.com");
    const [row] = await h.services.keys.list({ email: "gone@example.com" });
    await h.services.keys.revoke(row!.id);
    expectError(
      await h.request("GET", PATH, { headers: { authorization: `Bearer ${other.api_key}` } }),
      401,
      "INVALID_API_KEY",
    );
  });

  test("is in the OpenAPI document", async () => {
    const doc = (await h.request("GET", "/v1/docs/json")).body;
    expect(doc.paths["/v1/plugin/account"]?.get?.summary).toContain("usage");
  });
});
