/**
 * What the server says of the certificate it serves (src/server/tls/watch.ts): validity warnings at a given
 * time, a renewed IMGPRESS_TLS_CERT waiting for a restart, and the watcher's once-a-day repetition,
 * on real certificates parsed by node:crypto.
 */
import { describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { certificateFacts, certificateFingerprint, type ServedTls } from "../../../src/server/tls/index.ts";
import { selfSignedCertificate } from "../../../src/server/tls/selfsigned.ts";
import { TlsStatus } from "../../../src/server/tls/status.ts";
import {
  certificateCheck,
  certificateWarnings,
  servedWarnings,
  validityWarnings,
  watchCertificate,
} from "../../../src/server/tls/watch.ts";
import { type CertificateChain, certificateChain } from "../../support/ca.ts";

const NOW = new Date("2026-03-01T12:00:00Z");
const DAY = 86_400_000;

async function served(days: number, generated = false, issued = NOW): Promise<ServedTls> {
  const pair = await selfSignedCertificate(["imgpress.example.com"], days, issued);
  return {
    ...pair,
    facts: certificateFacts(pair.cert)!,
    generated,
    certPath: "/etc/imgpress/cert.pem",
    ...(generated ? {} : { keyPath: "/etc/imgpress/key.pem" }),
  };
}

/** The operator's two files as they are "now". */
function files(cert: string | Error, key: string | Error): (path: string) => Promise<string> {
  return async (path) => {
    const content = path.endsWith("cert.pem") ? cert : key;
    if (content instanceof Error) throw content;
    return content;
  };
}

describe("validityWarnings", () => {
  const at = (days: number) => new Date(NOW.getTime() + days * DAY);
  test("nothing while more than 14 days are left", async () => {
    expect(validityWarnings((await served(90)).facts!, at(75), "the certificate")).toEqual([]);
  });

  test("the days left within 14, singular and under a day", async () => {
    const tls = await served(90);
    const end = "2026-05-30T12:00:00Z";
    expect(validityWarnings(tls.facts!, at(80), "the certificate")).toEqual([
      `the certificate expires in 10 days (${end}): renew it and restart imgpress, which reads it at start only`,
    ]);
    expect(validityWarnings(tls.facts!, at(88.7), "the certificate")).toEqual([
      `the certificate expires in 1 day (${end}): renew it and restart imgpress, which reads it at start only`,
    ]);
    expect(validityWarnings(tls.facts!, at(89.9), "the certificate")).toEqual([
      `the certificate expires within a day (${end}): renew it and restart imgpress, which reads it at start only`,
    ]);
  });

  test("expired, and not valid yet (a clock behind); a few minutes early is no matter", async () => {
    const tls = await served(90);
    expect(validityWarnings(tls.facts!, at(90), "the certificate")).toEqual([
      "the certificate expired on 2026-05-30T12:00:00Z: clients that check it refuse to connect; renew it and restart imgpress, which reads it at start only",
    ]);
    // The writer back-dates its certificates by an hour.
    expect(validityWarnings(tls.facts!, new Date(NOW.getTime() - 2 * 60 * 60_000), "the certificate")).toEqual([
      "the certificate is not valid before 2026-03-01T11:00:00Z: clients refuse it until then; check this machine's clock",
    ]);
    expect(validityWarnings(tls.facts!, new Date(NOW.getTime() - 64 * 60_000), "the certificate")).toEqual([]);
  });
});

describe("validityWarnings: an intermediate that ends first", () => {
  test("is said apart from the server's certificate, whose end stays what is reported", async () => {
    const leaf = await selfSignedCertificate(["imgpress.example.com"], 90, NOW);
    const intermediate = await selfSignedCertificate(["Intermediate CA"], 5, NOW);
    const facts = certificateFacts(leaf.cert + intermediate.cert)!;
    expect(facts.notAfter).toEqual(new Date(NOW.getTime() + 90 * DAY));
    expect(validityWarnings(facts, NOW, "the certificate in IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem)")).toEqual([
      "the certificate in IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) comes with an intermediate certificate that expires in 5 days (2026-03-06T12:00:00Z): clients that build the chain through it refuse the server (an extra cross-signed one that clients skip does no harm); renew the chain and restart imgpress",
    ]);
    // One that ends later than 14 days from now is no matter.
    expect(
      validityWarnings(certificateFacts(leaf.cert + (await selfSignedCertificate(["CA"], 60, NOW)).cert)!, NOW, "x"),
    ).toEqual([]);
  });
});

describe("servedWarnings: a chain clients cannot complete (a real CA chain made by openssl)", () => {
  let chain: CertificateChain;
  const what = "the certificate in IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem)";
  const operator = (cert: string): ServedTls => ({
    cert,
    key: chain.key,
    facts: certificateFacts(cert)!,
    generated: false,
    certPath: "/etc/imgpress/cert.pem",
    keyPath: "/etc/imgpress/key.pem",
  });
  const now = () => new Date();

  test("the server's certificate alone (certbot's cert.pem): its issuer is named, with the fix", async () => {
    chain = await certificateChain(["imgpress.example.com"]);
    expect(certificateFacts(chain.leaf)!.missingIssuer).toBe("CN=imgpress test intermediate, O=imgpress tests");
    expect(servedWarnings(operator(chain.leaf), now(), "imgpress.example.com")).toEqual([
      `${what} comes without the certificate that issued it (CN=imgpress test intermediate, O=imgpress tests): clients that do not already hold that one (PHP cURL, curl and most programs; browsers may fetch it) refuse the server ("unable to get local issuer certificate" in curl and PHP, "unable to verify the first certificate" in Node); put the whole chain in the file, the server's certificate first, then its intermediates (certbot: fullchain.pem, not cert.pem), and restart imgpress (nothing is missing if that issuer is a private CA's root installed on every client)`,
    ]);
  });

  test("the full chain, with or without the root, in any order: nothing to say", () => {
    for (const file of [chain.fullchain, chain.fullchain + chain.root, chain.leaf + chain.root + chain.intermediate]) {
      expect(certificateFacts(file)!.missingIssuer).toBeUndefined();
      expect(servedWarnings(operator(file), now(), "imgpress.example.com")).toEqual([]);
    }
  });

  test("another CA's intermediate of the same name is not the issuer: its signature is checked, not only its name", () => {
    expect(certificateFacts(chain.leaf + chain.otherIntermediate)!.missingIssuer).toBe(
      "CN=imgpress test intermediate, O=imgpress tests",
    );
  });

  test("a self-signed certificate (the generated one, or the operator's) needs no issuer", async () => {
    const pair = await selfSignedCertificate(["imgpress.example.com"], 90);
    expect(certificateFacts(pair.cert)!.missingIssuer).toBeUndefined();
  });

  test("the hourly check keeps saying what the start said of the certificate itself (the dashboard shows the check's list)", async () => {
    const tls = operator(chain.leaf);
    const told: (readonly string[])[] = [];
    await certificateCheck(tls, () => {}, {
      now,
      host: "nas.example.lan",
      read: files(chain.leaf, chain.key),
      checked: (w) => told.push(w),
    })();
    expect(told[0]).toEqual([
      expect.stringContaining("comes without the certificate that issued it"),
      `${what} does not hold IMGPRESS_HOST (nas.example.lan) among its names (imgpress.example.com): clients that connect by that address refuse it`,
    ]);
  });
});

describe("certificateWarnings: the operator's files on disk against the one served", () => {
  const kept = "the certificate read at start is still served";
  test("the same certificate, even rewritten with other line ends: only validity", async () => {
    const tls = await served(90);
    expect(await certificateWarnings(tls, NOW, { read: files(tls.cert, tls.key) })).toEqual([]);
    expect(
      await certificateWarnings(tls, NOW, { read: files(`${tls.cert.replaceAll("\n", "\r\n")}\n\n`, tls.key) }),
    ).toEqual([]);
  });

  test("a renewal with its key, waiting for a restart: named with its end", async () => {
    const tls = await served(5);
    const renewed = await served(90, false, new Date(NOW.getTime() - DAY));
    expect(await certificateWarnings(tls, NOW, { read: files(renewed.cert, renewed.key) })).toEqual([
      "the certificate in IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) expires in 5 days (2026-03-06T12:00:00Z): renew it and restart imgpress, which reads it at start only",
      `IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) has changed since imgpress started (valid until 2026-05-29T12:00:00Z): restart imgpress to serve it; until then ${kept}`,
    ]);
  });

  test("a change a restart would fail on, or serve to no avail, says so instead of asking for the restart", async () => {
    const tls = await served(90);
    const renewed = await served(90, false, new Date(NOW.getTime() - DAY));
    const expired = await served(1, false, new Date(NOW.getTime() - 10 * DAY));
    const gone = Object.assign(new Error("no such file"), { code: "ENOENT" });
    const said = async (cert: string | Error, key: string | Error) =>
      (await certificateWarnings(tls, NOW, { read: files(cert, key) }))[0];
    expect(await said(gone, tls.key)).toBe(
      `IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) cannot be read now (ENOENT): a restart would fail; ${kept}`,
    );
    expect(await said("-----BEGIN CERTIFICATE-----\nMIIB", tls.key)).toBe(
      `IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) holds no certificate that can be read now: a restart would fail; ${kept}`,
    );
    // The new certificate before its key: a renewal half done; or the key half copied, or gone.
    expect(await said(renewed.cert, tls.key)).toBe(
      `IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) has changed (valid until 2026-05-29T12:00:00Z), but IMGPRESS_TLS_KEY (/etc/imgpress/key.pem) is not the private key of the certificate that comes first in IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) (the server's certificate first, then the intermediates): a restart would fail; ${kept}`,
    );
    expect(await said(renewed.cert, renewed.key.slice(0, 100))).toBe(
      `IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) has changed (valid until 2026-05-29T12:00:00Z), but IMGPRESS_TLS_KEY (/etc/imgpress/key.pem) holds no private key that can be read now: a restart would fail; ${kept}`,
    );
    expect(await said(renewed.cert, gone)).toBe(
      `IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) has changed (valid until 2026-05-29T12:00:00Z), but IMGPRESS_TLS_KEY (/etc/imgpress/key.pem) cannot be read now (ENOENT): a restart would fail; ${kept}`,
    );
    // The certificate as it was, its key gone bad: a restart would fail as well.
    expect(await said(tls.cert, "")).toBe(
      `IMGPRESS_TLS_KEY (/etc/imgpress/key.pem) holds no private key that can be read now: a restart would fail; ${kept}`,
    );
    expect(await said(expired.cert, expired.key)).toBe(
      `IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) has changed, but the new certificate is not valid now (valid from 2026-02-19T11:00:00Z until 2026-02-20T12:00:00Z): a restart would serve it and clients would refuse it; ${kept}`,
    );
  });

  test("a certificate whose validity could not be read at start: only the files are compared", async () => {
    const tls = { ...(await served(1)), facts: null };
    expect(await certificateWarnings(tls, NOW, { read: files(tls.cert, tls.key) })).toEqual([]);
    expect(await certificateWarnings(tls, NOW, { read: files("other", tls.key) })).toEqual([
      `IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) holds no certificate that can be read now: a restart would fail; ${kept}`,
    ]);
  });

  test("the generated certificate is never compared with a file, and a restart alone renews it", async () => {
    const tls = await served(10, true);
    expect(await certificateWarnings(tls, NOW, { read: () => Promise.reject(new Error("must not be read")) })).toEqual([
      "the generated certificate (/etc/imgpress/cert.pem) expires in 10 days (2026-03-11T12:00:00Z): restart imgpress, which then makes a new one (clients need the new cert.pem)",
    ]);
  });
});

describe("certificateCheck: one check, as the hourly timer runs it", () => {
  test("says a warning when it appears, not again within the repeat time, again after it, and at once when it returns", async () => {
    const tls = await served(90);
    let clock = NOW.getTime();
    const next = await served(90, false, new Date(NOW.getTime() - DAY));
    let onDisk = tls.cert;
    let onDiskKey = tls.key;
    const renewed = next.cert;
    const said: string[] = [];
    const check = certificateCheck(tls, (m) => said.push(m), {
      repeatMs: 10 * DAY,
      now: () => new Date(clock),
      read: async (path) => (path.endsWith("cert.pem") ? onDisk : onDiskKey),
    });
    await check();
    expect(said).toEqual([]);
    onDisk = renewed;
    onDiskKey = next.key;
    await check();
    expect(said).toHaveLength(1);
    expect(said[0]).toContain("has changed since imgpress started");
    clock += 9 * DAY;
    await check();
    expect(said).toHaveLength(1);
    clock += DAY;
    await check();
    expect(said).toHaveLength(2);
    // Put back (a renewal undone): forgotten, so a second change is said at once.
    onDisk = tls.cert;
    onDiskKey = tls.key;
    await check();
    onDisk = renewed;
    await check();
    expect(said).toHaveLength(3);
  });

  test("warnings the start-up lines gave are not repeated at the first check", async () => {
    const tls = await served(10);
    const startup = validityWarnings(tls.facts!, NOW, "the certificate in IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem)");
    expect(startup).toHaveLength(1);
    const said: string[] = [];
    await certificateCheck(tls, (m) => said.push(m), {
      now: () => NOW,
      read: files(tls.cert, tls.key),
      said: startup,
    })();
    expect(said).toEqual([]);
    await certificateCheck(tls, (m) => said.push(m), { now: () => NOW, read: files(tls.cert, tls.key) })();
    expect(said).toEqual(startup);
  });

  test("every check tells its warnings (the dashboard shows them), logged or not", async () => {
    const tls = await served(10);
    const told: (readonly string[])[] = [];
    const check = certificateCheck(tls, () => {}, {
      now: () => NOW,
      read: files(tls.cert, tls.key),
      checked: (w) => told.push(w),
    });
    await check();
    await check();
    expect(told).toHaveLength(2);
    expect(told[1]).toEqual([expect.stringContaining("expires in 10 days")]);
  });

  test("the timer runs the check until stopped", async () => {
    const tls = await served(10);
    const said: string[] = [];
    const stop = watchCertificate(tls, (m) => said.push(m), {
      everyMs: 1,
      now: () => NOW,
      read: files(tls.cert, tls.key),
    });
    for (let i = 0; i < 500 && said.length === 0; i++) await Bun.sleep(5);
    stop();
    expect(said).toHaveLength(1);
  });
});

describe("TlsStatus: what the dashboard shows", () => {
  test("empty until the edge listens; then the served certificate with its fingerprint, and the watch's latest warnings", async () => {
    const status = new TlsStatus();
    expect(status.view()).toBeNull();
    const tls = await served(10, true);
    await status.serving(tls, ["first"]);
    const fingerprint = new X509Certificate(tls.cert).fingerprint256;
    expect(status.view()).toEqual({
      source: "generated",
      certPath: "/etc/imgpress/cert.pem",
      validUntil: "2026-03-11T12:00:00.000Z",
      names: ["imgpress.example.com"],
      sha256: fingerprint,
      warnings: ["first"],
    });
    status.warn([]);
    expect(status.view()!.warnings).toEqual([]);
    await status.serving(undefined, []);
    expect(status.view()).toEqual({ source: "proxy", warnings: [] });
    expect(await certificateFingerprint(tls.cert)).toBe(fingerprint);
  });
});
