/**
 * The WordPress plugin's shared pieces, checked from the service's side: the signing vectors its
 * PHPUnit tests use are what the service's own crypto and multipart parser compute and read, the
 * .pot is what the sources generate, and the build makes an installable archive.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildWordPressZip } from "../../scripts/build-wordpress.ts";
import { extract, potIsCurrent } from "../../scripts/wordpress-pot.ts";
import { parseMultipart } from "../../src/api/convert/multipart.ts";
import { hmacSha256Hex, sha256Hex } from "../../src/core/crypto.ts";

const ROOT = join(import.meta.dir, "../..");
const vectors = JSON.parse(readFileSync(join(ROOT, "clients/wordpress/tests/fixtures/signing-vectors.json"), "utf8"));

describe("signing vectors shared with the plugin's PHPUnit tests", () => {
  test("RFC 4231 case 2, as test/crypto.test.ts checks it", async () => {
    expect(await hmacSha256Hex(vectors.rfc4231_case2.key, vectors.rfc4231_case2.data)).toBe(vectors.rfc4231_case2.hmac);
  });

  test("the convert vector: body hash, string to sign and signature are the service's", async () => {
    const c = vectors.convert;
    const body = Buffer.from(c.body_base64, "base64");
    expect(await sha256Hex(body)).toBe(c.body_sha256);
    expect(c.string_to_sign).toBe(`POST\n/plugin/convert\n${c.timestamp}\n${c.body_sha256}`);
    expect(await hmacSha256Hex(c.secret_key, c.string_to_sign)).toBe(c.signature);
  });

  test("the service's multipart parser reads the vector body's fields and image", () => {
    const c = vectors.convert;
    const parts = parseMultipart(Buffer.from(c.body_base64, "base64"), `multipart/form-data; boundary=${c.boundary}`);
    const byName = Object.fromEntries(parts.map((p) => [p.name, p]));
    expect(Object.keys(byName).sort()).toEqual(["format", "image", "quality"]);
    expect(Buffer.from(byName.format!.data).toString()).toBe(c.fields.format);
    expect(Buffer.from(byName.quality!.data).toString()).toBe(c.fields.quality);
    expect(byName.image!.filename).toBe(c.filename);
    expect(Buffer.from(byName.image!.data).toString("base64")).toBe(c.image_base64);
  });

  test("the account vector signs GET and the empty body", async () => {
    const a = vectors.account;
    expect(a.string_to_sign).toBe(`GET\n/plugin/account\n${a.timestamp}\n${await sha256Hex(new Uint8Array(0))}`);
    expect(await hmacSha256Hex(a.secret_key, a.string_to_sign)).toBe(a.signature);
  });
});

describe("the plugin's files", () => {
  test("languages/imgpress.pot is what scripts/wordpress-pot.ts generates from the sources", () => {
    expect(extract().length).toBeGreaterThan(50);
    expect(potIsCurrent()).toBe(true);
  });

  test("the archive has one top folder imgpress/ with the header, uninstall.php, readme.txt and the .pot", () => {
    const dir = mkdtempSync(join(tmpdir(), "imgpress-zip-"));
    try {
      const zip = buildWordPressZip(join(dir, "imgpress-wordpress.zip"));
      const names = Bun.spawnSync(["unzip", "-Z1", zip]).stdout.toString().trim().split("\n");
      expect(new Set(names.map((n) => n.split("/")[0]))).toEqual(new Set(["imgpress"]));
      for (const f of [
        "imgpress/imgpress.php",
        "imgpress/uninstall.php",
        "imgpress/readme.txt",
        "imgpress/languages/imgpress.pot",
      ])
        expect(names).toContain(f);
      const header = Bun.spawnSync(["unzip", "-p", zip, "imgpress/imgpress.php"]).stdout.toString();
      expect(header).toMatch(/Requires at least:\s+6\.1/);
      expect(header).toMatch(/Requires PHP:\s+7\.4/);
      expect(header).toMatch(/Text Domain:\s+imgpress/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
