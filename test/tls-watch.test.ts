/**
 * What the server says of the certificate it serves (src/tls/watch.ts): validity warnings at a given
 * time, a renewed IMGPRESS_TLS_CERT waiting for a restart, and the watcher's once-a-day repetition,
 * on real certificates parsed by node:crypto.
 */
import { describe, expect, test } from "bun:test";
import { certificateFacts, type ServedTls } from "../src/tls/index.ts";
import { selfSignedCertificate } from "../src/tls/selfsigned.ts";
import { certificateFingerprint, TlsStatus } from "../src/tls/status.ts";
import { X509Certificate } from "node:crypto";
import { certificateWarnings, certificateWatch, validityWarnings, watchCertificate } from "../src/tls/watch.ts";

const NOW = new Date("2026-03-01T12:00:00Z");
const DAY = 86_400_000;

async function served(days: number, generated = false, issued = NOW): Promise<ServedTls> {
  const pair = await selfSignedCertificate(["imgpress.example.com"], days, issued);
  return { ...pair, facts: certificateFacts(pair.cert)!, generated, certPath: "/etc/imgpress/cert.pem" };
}

describe("validityWarnings", () => {
  const at = (days: number) => new Date(NOW.getTime() + days * DAY);
  test("nothing while more than 14 days are left", async () => {
    expect(validityWarnings((await served(90)).facts!, at(75), "the certificate")).toEqual([]);
  });

  test("the days left within 14, singular and under a day", async () => {
    const tls = await served(90);
    const end = "2026-05-30T12:00:00Z";
    expect(validityWarnings(tls.facts!, at(80), "the certificate")).toEqual([`the certificate expires in 10 days (${end}): renew it and restart imgpress, which reads it at start only`]);
    expect(validityWarnings(tls.facts!, at(88.5), "the certificate")).toEqual([`the certificate expires in 1 day (${end}): renew it and restart imgpress, which reads it at start only`]);
    expect(validityWarnings(tls.facts!, at(89.9), "the certificate")).toEqual([`the certificate expires within a day (${end}): renew it and restart imgpress, which reads it at start only`]);
  });

  test("expired, and not valid yet (a clock behind); a few minutes early is no matter", async () => {
    const tls = await served(90);
    expect(validityWarnings(tls.facts!, at(90), "the certificate")).toEqual(["the certificate expired on 2026-05-30T12:00:00Z: clients that check it refuse to connect; renew it and restart imgpress"]);
    // The writer back-dates its certificates by an hour.
    expect(validityWarnings(tls.facts!, new Date(NOW.getTime() - 2 * 60 * 60_000), "the certificate")).toEqual([
      "the certificate is not valid before 2026-03-01T11:00:00Z: clients refuse it until then; check this machine's clock",
    ]);
    expect(validityWarnings(tls.facts!, new Date(NOW.getTime() - 64 * 60_000), "the certificate")).toEqual([]);
  });
});

describe("certificateWarnings: the operator's file on disk against the one served", () => {
  test("the same file: only validity", async () => {
    const tls = await served(90);
    expect(await certificateWarnings(tls, NOW, async () => tls.cert)).toEqual([]);
  });

  test("a renewed file waiting for a restart, named with its end; an unreadable or half-written one too", async () => {
    const tls = await served(5);
    const renewed = await served(90, false, new Date(NOW.getTime() + DAY));
    const expiring = "the certificate in IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) expires in 5 days (2026-03-06T12:00:00Z): renew it and restart imgpress, which reads it at start only";
    expect(await certificateWarnings(tls, NOW, async () => renewed.cert)).toEqual([
      expiring,
      "IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) has changed since imgpress started (valid until 2026-05-31T12:00:00Z): restart imgpress to serve it; until then the one read at start is served",
    ]);
    const gone = Object.assign(new Error("no such file"), { code: "ENOENT" });
    expect((await certificateWarnings(tls, NOW, () => Promise.reject(gone)))[1]).toBe(
      "IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) has changed since imgpress started (unreadable: ENOENT): restart imgpress to serve it; until then the one read at start is served",
    );
    expect((await certificateWarnings(tls, NOW, async () => "-----BEGIN CERTIFICATE-----\nMIIB"))[1]).toContain("has changed since imgpress started (it cannot be read as a certificate yet)");
  });

  test("a certificate whose validity could not be read: only the file is compared", async () => {
    const tls = { ...(await served(1)), facts: null };
    expect(await certificateWarnings(tls, NOW, async () => tls.cert)).toEqual([]);
    expect(await certificateWarnings(tls, NOW, async () => "other")).toEqual([
      "IMGPRESS_TLS_CERT (/etc/imgpress/cert.pem) has changed since imgpress started (it cannot be read as a certificate yet): restart imgpress to serve it; until then the one read at start is served",
    ]);
  });

  test("the generated certificate is never compared with a file", async () => {
    const tls = await served(3650, true);
    expect(await certificateWarnings(tls, NOW, () => Promise.reject(new Error("must not be read")))).toEqual([]);
  });
});

describe("certificateWatch: one check, as the hourly timer runs it", () => {
  test("says a warning when it appears, not again within the repeat time, again after it, and at once when it returns", async () => {
    const tls = await served(90);
    let clock = NOW.getTime();
    let onDisk = tls.cert;
    const renewed = (await served(90, false, new Date(NOW.getTime() + DAY))).cert;
    const said: string[] = [];
    const check = certificateWatch(tls, (m) => said.push(m), { repeatMs: 10 * DAY, now: () => new Date(clock), readCert: async () => onDisk });
    await check();
    expect(said).toEqual([]);
    onDisk = renewed;
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
    await certificateWatch(tls, (m) => said.push(m), { now: () => NOW, readCert: async () => tls.cert, said: startup })();
    expect(said).toEqual([]);
    await certificateWatch(tls, (m) => said.push(m), { now: () => NOW, readCert: async () => tls.cert })();
    expect(said).toEqual(startup);
  });

  test("every check tells its warnings (the dashboard shows them), logged or not", async () => {
    const tls = await served(10);
    const told: (readonly string[])[] = [];
    const check = certificateWatch(tls, () => {}, { now: () => NOW, readCert: async () => tls.cert, checked: (w) => told.push(w) });
    await check();
    await check();
    expect(told).toHaveLength(2);
    expect(told[1]).toEqual([expect.stringContaining("expires in 10 days")]);
  });

  test("the timer runs the check until stopped", async () => {
    const tls = await served(10);
    const said: string[] = [];
    const stop = watchCertificate(tls, (m) => said.push(m), { everyMs: 1, now: () => NOW, readCert: async () => tls.cert });
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
    expect(status.view()).toEqual({ source: "generated", certPath: "/etc/imgpress/cert.pem", validUntil: "2026-03-11T12:00:00.000Z", names: ["imgpress.example.com"], sha256: fingerprint, warnings: ["first"] });
    status.warn([]);
    expect(status.view()!.warnings).toEqual([]);
    await status.serving(undefined, []);
    expect(status.view()).toEqual({ source: "proxy", warnings: [] });
    expect(await certificateFingerprint(tls.cert)).toBe(fingerprint);
  });
});
