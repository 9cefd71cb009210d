/**
 * The self-signed certificate writer (src/server/tls/der.ts, selfsigned.ts) read back by a real X.509 parser:
 * `node:crypto` X509Certificate under Bun (the file the server writes) and under Deno (a script
 * that writes and parses one there).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../../src/core/config.ts";
import { certificateFacts, loadTls } from "../../../src/server/tls/index.ts";
import { canonicalName, coversName, isWildcard } from "../../../src/server/tls/names.ts";
import { selfSignedCertificate } from "../../../src/server/tls/selfsigned.ts";
import { validityWarnings } from "../../../src/server/tls/watch.ts";
import { denoExecutable, ROOT } from "../../support/server.ts";
import { type CertificateSummary, summarize } from "../../support/x509.ts";

const NOW = new Date("2026-03-01T12:00:00Z");
const NAMES = ["localhost", "127.0.0.1", "::1", "imgpress.test"];
const EXPECTED = {
  subject: "CN=localhost\nO=imgpress self-signed",
  issuer: "CN=localhost\nO=imgpress self-signed",
  subjectAltName: ["DNS:localhost", "IP Address:127.0.0.1", "IP Address:::1", "DNS:imgpress.test"],
  validFrom: "2026-03-01T11:00:00.000Z",
  validTo: new Date(NOW.getTime() + 3650 * 86_400_000).toISOString(),
  keyType: "ec",
  curve: "prime256v1",
  ca: false,
  signedBySelf: true,
  checksHost: { localhost: true, "imgpress.test": true },
  checksIp: { "127.0.0.1": true, "::1": true },
} satisfies CertificateSummary;

describe("self-signed certificate parsed by node:crypto X509Certificate", () => {
  test("under Bun: subject, SAN entries, validity, P-256 key, own signature", async () => {
    const pair = await selfSignedCertificate(NAMES, 3650, NOW);
    expect(summarize(pair.cert, ["localhost", "imgpress.test"], ["127.0.0.1", "::1"])).toEqual(EXPECTED);
  });

  test("under Deno: the same certificate fields", () => {
    const run = Bun.spawnSync(
      [denoExecutable(), "run", "--no-prompt", join(ROOT, "test/support/x509-deno.ts"), NOW.toISOString(), ...NAMES],
      { cwd: ROOT },
    );
    expect(run.stderr.toString()).toBe("");
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(run.stdout.toString())).toEqual(EXPECTED);
  });

  test("another host name is not covered", async () => {
    const pair = await selfSignedCertificate(NAMES, 3650, NOW);
    expect(summarize(pair.cert, ["example.com"], ["10.0.0.1"])).toMatchObject({
      checksHost: { "example.com": false },
      checksIp: { "10.0.0.1": false },
    });
  });
});

describe("the certificate the server writes into the data folder, and TLS files that are not what they should be", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "imgpress-tls-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test("cert.pem names localhost, the loopback addresses and this host, and is valid now for ten years", async () => {
    const tls = await loadTls(loadConfig({ IMGPRESS_DATA_DIR: dir }));
    const pem = await readFile(tls.certPath, "utf8");
    const s = summarize(pem, ["localhost", hostname()], ["127.0.0.1", "::1"]);
    expect(s).toMatchObject({ keyType: "ec", curve: "prime256v1", ca: false, signedBySelf: true });
    expect(Object.values(s.checksHost).every(Boolean) && Object.values(s.checksIp).every(Boolean)).toBe(true);
    const from = Date.parse(s.validFrom);
    const to = Date.parse(s.validTo);
    expect(from).toBeLessThan(Date.now());
    expect(to - Date.now()).toBeGreaterThan(3649 * 86_400_000);
  });

  test("IMGPRESS_TLS_NAMES: the names clients on other machines use are in the certificate, kept at the next start", async () => {
    const folder = join(dir, "names");
    const config = loadConfig({ IMGPRESS_DATA_DIR: folder, IMGPRESS_TLS_NAMES: "nas.local,192.168.1.10,2001:db8::7" });
    const first = await loadTls(config);
    const s = summarize(
      await readFile(first.certPath, "utf8"),
      ["nas.local", "localhost", hostname()],
      ["192.168.1.10", "2001:db8::7", "127.0.0.1"],
    );
    expect(Object.values(s.checksHost).every(Boolean) && Object.values(s.checksIp).every(Boolean)).toBe(true);
    expect(first.facts!.names).toEqual([
      "localhost",
      "127.0.0.1",
      "::1",
      hostname().toLowerCase(),
      "nas.local",
      "192.168.1.10",
      "2001:db8::7",
    ]);
    expect(first.replaced).toBeUndefined();
    const again = await loadTls(config);
    expect(again.cert).toBe(first.cert);
    expect(again.replaced).toBeUndefined();
  });

  test("a name the certificate lacks (IMGPRESS_TLS_NAMES, or a new IMGPRESS_HOST) makes a new one that keeps every old name", async () => {
    const folder = join(dir, "grow");
    const first = await loadTls(loadConfig({ IMGPRESS_DATA_DIR: folder, IMGPRESS_TLS_NAMES: "nas.local" }));
    const grown = await loadTls(
      loadConfig({ IMGPRESS_DATA_DIR: folder, IMGPRESS_TLS_NAMES: "imgpress.example.lan", IMGPRESS_HOST: "127.0.0.2" }),
    );
    expect(grown.replaced?.reason).toBe("the one in the data folder lacks imgpress.example.lan, 127.0.0.2");
    expect(grown.cert).not.toBe(first.cert);
    expect(grown.facts!.names).toEqual(
      expect.arrayContaining(["nas.local", "imgpress.example.lan", "127.0.0.2", "localhost"]),
    );
    // The copy for clients and the served pair changed together; the pair stays owner-only.
    expect(await readFile(grown.certPath, "utf8")).toBe(grown.cert);
    expect((await stat(join(folder, "tls", "self-signed.pem"))).mode & 0o777).toBe(0o600);
    expect(new X509Certificate(grown.cert).checkPrivateKey(createPrivateKey(grown.key))).toBe(true);
    // Dropping a name from the setting does not make another certificate: the old one still holds it.
    expect((await loadTls(loadConfig({ IMGPRESS_DATA_DIR: folder }))).cert).toBe(grown.cert);
    // Nor does a name a wildcard of the certificate covers.
    const wild = await loadTls(loadConfig({ IMGPRESS_DATA_DIR: folder, IMGPRESS_TLS_NAMES: "*.example.lan" }));
    expect(wild.replaced?.reason).toBe("the one in the data folder lacks *.example.lan");
    expect(
      (await loadTls(loadConfig({ IMGPRESS_DATA_DIR: folder, IMGPRESS_TLS_NAMES: "*.example.lan,nas.example.lan" })))
        .replaced,
    ).toBeUndefined();
  });

  test("a generated certificate within 30 days of its end, or one that cannot be read, is replaced at start", async () => {
    const folder = join(dir, "old");
    const config = loadConfig({ IMGPRESS_DATA_DIR: folder });
    const first = await loadTls(config);
    const late = new Date(first.facts!.notAfter.getTime() - 10 * 86_400_000);
    const renewed = await loadTls(config, late);
    expect(renewed.replaced?.reason).toBe(
      `the one in the data folder expires on ${first.facts!.notAfter.toISOString().replace(".000Z", "Z")}`,
    );
    expect(renewed.facts!.notAfter.getTime()).toBeGreaterThan(late.getTime() + 3649 * 86_400_000);
    await writeFile(
      join(folder, "tls", "self-signed.pem"),
      `${renewed.key}-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n`,
    );
    const mended = await loadTls(config);
    expect(mended.replaced?.reason).toBe(
      "the one in the data folder could not be read (its key or certificate is missing, damaged or not a pair)",
    );
    expect(new X509Certificate(mended.cert).checkPrivateKey(createPrivateKey(mended.key))).toBe(true);
  });

  test("a pair whose key is damaged, missing or another pair's is replaced, the old one kept; cert.pem never holds a key", async () => {
    const folder = join(dir, "damaged");
    const config = loadConfig({ IMGPRESS_DATA_DIR: folder });
    const bundlePath = join(folder, "tls", "self-signed.pem");
    const first = await loadTls(config);
    const other = await selfSignedCertificate(["other.example"]);
    const keyLines = first.key.trim().split("\n");
    const damaged = `${[keyLines[0], `AAAA${keyLines[1]!.slice(4)}`, ...keyLines.slice(2)].join("\n")}\n`;
    // Written in the other order the pair still serves, and only its certificate goes to the clients' copy.
    await writeFile(bundlePath, first.cert + first.key);
    const reordered = await loadTls(config);
    expect(reordered.replaced).toBeUndefined();
    expect(await readFile(reordered.certPath, "utf8")).toBe(first.cert);
    for (const bundle of [damaged + first.cert, first.cert, other.key + first.cert]) {
      await writeFile(bundlePath, bundle);
      const tls = await loadTls(config);
      expect(tls.replaced?.reason).toBe(
        "the one in the data folder could not be read (its key or certificate is missing, damaged or not a pair)",
      );
      expect(new X509Certificate(tls.cert).checkPrivateKey(createPrivateKey(tls.key))).toBe(true);
      expect(await readFile(tls.certPath, "utf8")).not.toContain("PRIVATE KEY");
      // The replaced file is kept beside, owner-only, for whoever wants it back.
      expect(tls.replaced?.keptAt).toBe(`${bundlePath}.previous`);
      expect(await readFile(`${bundlePath}.previous`, "utf8")).toBe(bundle);
      expect((await stat(`${bundlePath}.previous`)).mode & 0o777).toBe(0o600);
    }
    // A readable pair replaced for a missing name gives the old certificate's fingerprint for the log.
    const before = await loadTls(config);
    const grown = await loadTls(loadConfig({ IMGPRESS_DATA_DIR: folder, IMGPRESS_TLS_NAMES: "nas.local" }));
    expect(grown.replaced?.previousSha256).toBe(new X509Certificate(before.cert).fingerprint256);
  });

  test("a new pair that cannot be written is named with its file and why it was wanted", async () => {
    const folder = join(dir, "stuck");
    await loadTls(loadConfig({ IMGPRESS_DATA_DIR: folder }));
    // A folder where the old pair is to be kept: the write fails as on a read-only mount.
    await mkdir(join(folder, "tls", "self-signed.pem.previous"));
    const previous = join(folder, "tls", "self-signed.pem.previous");
    await expect(
      loadTls(loadConfig({ IMGPRESS_DATA_DIR: folder, IMGPRESS_TLS_NAMES: "x.example.lan" })),
    ).rejects.toThrow(
      new RegExp(
        `^cannot write ${previous} \\(E[A-Z]+\\) to make a new self-signed certificate, because the one in the data folder lacks x\\.example\\.lan: the data folder's tls/ must be writable by this user$`,
      ),
    );
  });

  test("a generated certificate not valid yet is kept: at start the clock is the likelier fault (a NAS before its time sync)", async () => {
    const folder = join(dir, "ahead");
    const config = loadConfig({ IMGPRESS_DATA_DIR: folder });
    const now = await loadTls(config);
    // The same folder started with the clock set back to 2000 (a flat RTC battery).
    const behind = await loadTls(config, new Date("2000-01-01T00:00:00Z"));
    expect(behind.replaced).toBeUndefined();
    expect(behind.cert).toBe(now.cert);
    expect(
      validityWarnings(behind.facts!, new Date("2000-01-01T00:00:00Z"), "the generated certificate", true),
    ).toEqual([
      `the generated certificate is not valid before ${now.facts!.notBefore.toISOString().replace(".000Z", "Z")}: clients refuse it until then; if this machine's clock is right, stop imgpress and delete tls/self-signed.pem: the next start makes a new one (clients need the new cert.pem)`,
    ]);
  });

  test("names compare as clients compare them: DNS case, the long form of ::, an IPv6 zone on IMGPRESS_HOST", async () => {
    const folder = join(dir, "spelling");
    const pair = await selfSignedCertificate(["localhost", "127.0.0.1", "::1", "DiskStation", "fe80::1"]);
    await mkdir(join(folder, "tls"), { recursive: true });
    await writeFile(join(folder, "tls", "self-signed.pem"), pair.key + pair.cert);
    for (const env of [
      { IMGPRESS_TLS_NAMES: "diskstation" },
      { IMGPRESS_HOST: "0:0:0:0:0:0:0:0" },
      { IMGPRESS_HOST: "fe80::1%eth0" },
    ]) {
      const tls = await loadTls(loadConfig({ IMGPRESS_DATA_DIR: folder, ...env }));
      expect({ env, replaced: tls.replaced }).toEqual({ env, replaced: undefined });
      expect(tls.cert).toBe(pair.cert);
    }
  });

  test("facts of a file: the first certificate's names and end, an intermediate that ends sooner, a key before it (one combined file)", async () => {
    const leaf = await selfSignedCertificate(["imgpress.example.com"], 90, NOW);
    const intermediate = await selfSignedCertificate(["Intermediate CA"], 5, NOW);
    const facts = certificateFacts(`${leaf.key}${leaf.cert}${intermediate.cert}`.replaceAll("\n", "\r\n"))!;
    expect(facts.names).toEqual(["imgpress.example.com"]);
    expect(facts.notAfter).toEqual(new Date(NOW.getTime() + 90 * 86_400_000));
    expect(facts.intermediateEnds).toEqual(new Date(NOW.getTime() + 5 * 86_400_000));
    expect(certificateFacts(leaf.key)).toBeNull();
  });

  test("the operator's certificate: its names and end are read for the warnings and the metric", async () => {
    const pair = await selfSignedCertificate(["imgpress.example.com", "203.0.113.9"], 20, NOW);
    const [cert, key] = [join(dir, "own-cert.pem"), join(dir, "own-key.pem")];
    await writeFile(cert, pair.cert);
    await writeFile(key, pair.key);
    const tls = await loadTls(loadConfig({ IMGPRESS_DATA_DIR: dir, IMGPRESS_TLS_CERT: cert, IMGPRESS_TLS_KEY: key }));
    expect(tls).toMatchObject({
      generated: false,
      certPath: cert,
      facts: { names: ["imgpress.example.com", "203.0.113.9"], notAfter: new Date(NOW.getTime() + 20 * 86_400_000) },
    });
    expect(tls.replaced).toBeUndefined();
    // One node:crypto cannot read is left to the runtime, which names it at listen; only its validity is unknown.
    const odd = join(dir, "odd-cert.pem");
    await writeFile(odd, "-----BEGIN CERTIFICATE-----\nMIIBodd\n-----END CERTIFICATE-----\n");
    expect(
      (await loadTls(loadConfig({ IMGPRESS_DATA_DIR: dir, IMGPRESS_TLS_CERT: odd, IMGPRESS_TLS_KEY: key }))).facts,
    ).toBeNull();
  });

  test("a damaged cert.pem (the copy for clients) is put right from the pair actually served", async () => {
    const config = loadConfig({ IMGPRESS_DATA_DIR: dir });
    const first = await loadTls(config);
    await writeFile(first.certPath, "garbage\n");
    const again = await loadTls(config);
    expect(again.cert).toBe(first.cert);
    expect(await readFile(again.certPath, "utf8")).toBe(first.cert);
  });

  test("operator files without PEM content or missing: the message names the file and its variable", async () => {
    const good = await loadTls(loadConfig({ IMGPRESS_DATA_DIR: dir }));
    const junk = join(dir, "junk.pem");
    await writeFile(junk, "not pem at all\n");
    const key = join(dir, "key.pem");
    await writeFile(key, good.key);
    const tls = (cert: string, k: string) =>
      loadTls(loadConfig({ IMGPRESS_DATA_DIR: dir, IMGPRESS_TLS_CERT: cert, IMGPRESS_TLS_KEY: k }));
    await expect(tls(junk, key)).rejects.toThrow(`IMGPRESS_TLS_CERT ${junk} holds no PEM certificate`);
    await expect(tls(good.certPath, junk)).rejects.toThrow(`IMGPRESS_TLS_KEY ${junk} holds no PEM private key`);
    await expect(tls(join(dir, "missing.pem"), key)).rejects.toThrow(
      `cannot read the TLS files (IMGPRESS_TLS_CERT ${join(dir, "missing.pem")}`,
    );
    expect((await tls(good.certPath, key)).cert).toBe(good.cert);
  });

  test("a key that belongs to another certificate is named as such (the runtime would blame the address at listen)", async () => {
    const good = await loadTls(loadConfig({ IMGPRESS_DATA_DIR: dir }));
    const other = await selfSignedCertificate(["other.example"]);
    const [cert, key] = [join(dir, "cert.pem"), join(dir, "other-key.pem")];
    await writeFile(cert, good.cert);
    await writeFile(key, other.key);
    await expect(
      loadTls(loadConfig({ IMGPRESS_DATA_DIR: dir, IMGPRESS_TLS_CERT: cert, IMGPRESS_TLS_KEY: key })),
    ).rejects.toThrow(`IMGPRESS_TLS_KEY ${key} is not the private key of the certificate in IMGPRESS_TLS_CERT ${cert}`);
  });

  test.each(["pkcs8", "sec1"] as const)(
    "a key encrypted with a passphrase (%s PEM) is named as such (the runtime would blame the address at listen)",
    async (type) => {
      const good = await loadTls(loadConfig({ IMGPRESS_DATA_DIR: dir }));
      const plain = createPrivateKey(good.key);
      const encrypted = plain
        .export({ type, format: "pem", cipher: "aes-256-cbc", passphrase: "correct horse" })
        .toString();
      const [cert, key] = [join(dir, "cert.pem"), join(dir, `encrypted-${type}.pem`)];
      await writeFile(cert, good.cert);
      await writeFile(key, encrypted);
      await expect(
        loadTls(loadConfig({ IMGPRESS_DATA_DIR: dir, IMGPRESS_TLS_CERT: cert, IMGPRESS_TLS_KEY: key })),
      ).rejects.toThrow(`IMGPRESS_TLS_KEY ${key} is encrypted with a passphrase, which imgpress cannot be given`);
    },
  );
});

describe("names as clients compare them (src/server/tls/names.ts)", () => {
  test("canonicalName: case, trailing dot, IPv6 short form without its zone, IDN in its xn-- form", () => {
    expect(
      ["NAS.Local.", "FE80:0::1%eth0", "0:0:0:0:0:0:0:1", "Bücher.local", "*.Bücher.lan", "192.168.1.10"].map(
        canonicalName,
      ),
    ).toEqual(["nas.local", "fe80::1", "::1", "xn--bcher-kva.local", "*.xn--bcher-kva.lan", "192.168.1.10"]);
  });

  test("coversName: exactly, or by a wildcard for the first label only", () => {
    const names = ["localhost", "*.example.lan", "192.168.1.10", "::1"];
    expect(["NAS.example.lan", "localhost", "192.168.1.10", "0:0:0:0:0:0:0:1"].every((h) => coversName(names, h))).toBe(
      true,
    );
    expect(["a.b.example.lan", "example.lan", "nas.local", "192.168.1.11"].some((h) => coversName(names, h))).toBe(
      false,
    );
  });

  test("isWildcard knows the long form of ::", () => {
    expect([isWildcard("0:0:0:0:0:0:0:0"), isWildcard("::"), isWildcard("0.0.0.0"), isWildcard("::1")]).toEqual([
      true,
      true,
      true,
      false,
    ]);
  });

  test("a non-ASCII name Bun writes byte by byte (\\u00XX) reads back as the name itself", async () => {
    // Bun quotes such an entry JSON-style, one \u00XX per byte of UTF-8; Deno writes the name.
    const pair = await selfSignedCertificate(["nås"]);
    expect(certificateFacts(pair.cert)!.names).toEqual([canonicalName("nås")]);
  });
});
