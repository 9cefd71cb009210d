/** The crypto helpers on node:crypto give the documented digests, and secrets sealed in WebCrypto's layout still open. */
import { expect, test } from "bun:test";
import { hmacSha256Hex, SecretBox, sha256Hex } from "../../src/core/crypto.ts";

test("SHA-256 and HMAC-SHA256 match published vectors (FIPS 180-2, RFC 4231 case 2)", async () => {
  expect(await sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  expect(await sha256Hex(new TextEncoder().encode("abc"))).toBe(
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  expect(await hmacSha256Hex("Jefe", "what do ya want for nothing?")).toBe(
    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
  );
});

test("SecretBox opens what WebCrypto AES-GCM sealed as iv ‖ ciphertext ‖ tag, and WebCrypto opens what it seals", async () => {
  const raw = crypto.getRandomValues(new Uint8Array(32));
  const key = await crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
  const box = await SecretBox.create(raw);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const aad = { additionalData: new TextEncoder().encode("key_1") };
  const webSealed = Buffer.concat([
    iv,
    new Uint8Array(
      await crypto.subtle.encrypt({ name: "AES-GCM", iv, ...aad }, key, new TextEncoder().encode("imps_sealed_before")),
    ),
  ]);
  expect(await box.open(webSealed.toString("base64"), "key_1")).toBe("imps_sealed_before");

  const sealed = Buffer.from(await box.seal("imps_sealed_now", "key_1"), "base64");
  const opened = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: sealed.subarray(0, 12), ...aad },
    key,
    sealed.subarray(12),
  );
  expect(new TextDecoder().decode(opened)).toBe("imps_sealed_now");
});

test("SecretBox refuses another row's context, an altered byte and a truncated value", async () => {
  const box = await SecretBox.create(crypto.getRandomValues(new Uint8Array(32)));
  const sealed = await box.seal("imps_secret", "key_1");
  expect(await box.open(sealed, "key_1")).toBe("imps_secret");
  await expect(box.open(sealed, "key_2")).rejects.toThrow();
  const bytes = Buffer.from(sealed, "base64");
  bytes[14]! ^= 1;
  await expect(box.open(bytes.toString("base64"), "key_1")).rejects.toThrow();
  await expect(box.open(Buffer.from(sealed, "base64").subarray(0, 20).toString("base64"), "key_1")).rejects.toThrow();
});
