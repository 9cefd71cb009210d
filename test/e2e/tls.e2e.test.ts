/**
 * The certificate the real service serves (Bun, or Deno with E2E_RUNTIME=deno): a client that
 * reaches it by a name given in IMGPRESS_TLS_NAMES verifies it, a name added later makes a new
 * certificate at the next start, and the operator's certificate near its end is warned about at
 * start and reported to Prometheus.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:tls";
import { selfSignedCertificate } from "../../src/server/tls/selfsigned.ts";
import { certificateChain } from "../support/ca.ts";
import { parseMetrics } from "../support/metrics.ts";
import { type RunningServer, startServer } from "../support/server.ts";

let server: RunningServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** Whether a TLS client that trusts only `ca` and asks for `name` accepts the server's certificate. */
function verifiesAs(port: number, name: string, ca: string): Promise<{ authorized: boolean; error?: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, servername: name, ca, rejectUnauthorized: false }, () => {
      resolve({
        authorized: socket.authorized,
        ...(socket.authorizationError ? { error: String(socket.authorizationError) } : {}),
      });
      socket.end();
    });
    socket.on("error", reject);
  });
}

describe("the generated certificate and IMGPRESS_TLS_NAMES", () => {
  test("a client reaching the server by a listed name verifies it; a name added later makes a new certificate, said at start", async () => {
    server = await startServer({ env: { IMGPRESS_TLS_NAMES: "nas.local,192.168.1.10" } });
    expect(await verifiesAs(server.port, "nas.local", server.ca)).toEqual({ authorized: true });
    expect(await verifiesAs(server.port, "imgpress.example.lan", server.ca)).toEqual({
      authorized: false,
      error: expect.stringContaining("ERR_TLS_CERT_ALTNAME_INVALID"),
    });
    const listening = (await server.waitForLog((l) => l.json?.msg === "imgpress listening")).json!;
    expect(listening.certNames).toEqual(
      expect.arrayContaining(["localhost", "127.0.0.1", "nas.local", "192.168.1.10"]),
    );
    const first = server.ca;

    server.env.IMGPRESS_TLS_NAMES = "nas.local,imgpress.example.lan";
    await server.restart();
    const made = (await server.waitForLog((l) => String(l.json?.msg).startsWith("made a new self-signed certificate")))
      .json;
    expect(made).toMatchObject({
      level: "warn",
      msg: expect.stringContaining("lacks imgpress.example.lan: give clients the new"),
    });
    expect(server.ca).not.toBe(first);
    expect(await verifiesAs(server.port, "imgpress.example.lan", server.ca)).toEqual({ authorized: true });
    // The old names stay in it; a client still holding the old copy no longer trusts the server.
    expect(new X509Certificate(server.ca).checkIP("192.168.1.10")).toBe("192.168.1.10");
    expect((await verifiesAs(server.port, "nas.local", first)).authorized).toBe(false);
    expect((await server.fetch("/health")).status).toBe(200);
  }, 60_000);
});

describe("the operator's certificate", () => {
  test("one that ends in 5 days: a warning at start, its end on the listening line and in the metric", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "imgpress-own-tls-"));
    // Where the test helper reads the certificate to trust, so it is the operator's file itself.
    const [cert, key] = [join(dataDir, "tls", "cert.pem"), join(dataDir, "tls", "key.pem")];
    await mkdir(join(dataDir, "tls"), { recursive: true });
    const pair = await selfSignedCertificate(["localhost", "127.0.0.1"], 5);
    await writeFile(cert, pair.cert);
    await writeFile(key, pair.key, { mode: 0o600 });
    server = await startServer({ dataDir, env: { IMGPRESS_TLS_CERT: cert, IMGPRESS_TLS_KEY: key } });
    const end = new Date(new X509Certificate(pair.cert).validTo);
    const warned = (
      await server.waitForLog(
        (l) => l.json?.level === "warn" && String(l.json.msg).startsWith("the certificate in IMGPRESS_TLS_CERT"),
      )
    ).json!;
    expect(warned.msg).toBe(
      `the certificate in IMGPRESS_TLS_CERT (${cert}) expires in 5 days (${end.toISOString().replace(".000Z", "Z")}): renew it and restart imgpress, which reads it at start only`,
    );
    const listening = (await server.waitForLog((l) => l.json?.msg === "imgpress listening")).json!;
    expect(listening).toMatchObject({ certValidUntil: end.toISOString().replace(".000Z", "Z") });
    expect(listening.certNames).toBeUndefined();
    // It holds the address the server listens on (127.0.0.1), so nothing is said of IMGPRESS_HOST.
    expect(server.logs.some((l) => String(l.json?.msg).includes("does not hold IMGPRESS_HOST"))).toBe(false);
    const metrics = parseMetrics(await (await server.fetch("/internal/metrics")).text());
    expect(metrics.get("imgpress_tls_certificate_expiry_timestamp_seconds")).toBe(end.getTime() / 1000);
  }, 60_000);

  test("one that does not hold the address the server listens on is named at start", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "imgpress-own-tls-"));
    const [cert, key] = [join(dataDir, "tls", "cert.pem"), join(dataDir, "tls", "key.pem")];
    await mkdir(join(dataDir, "tls"), { recursive: true });
    const pair = await selfSignedCertificate(["imgpress.example.com"], 90);
    await writeFile(cert, pair.cert);
    await writeFile(key, pair.key, { mode: 0o600 });
    server = await startServer({ dataDir, env: { IMGPRESS_TLS_CERT: cert, IMGPRESS_TLS_KEY: key } });
    const warned = (await server.waitForLog((l) => String(l.json?.msg).includes("does not hold IMGPRESS_HOST"))).json!;
    expect(warned.msg).toBe(
      `the certificate in IMGPRESS_TLS_CERT (${cert}) does not hold IMGPRESS_HOST (127.0.0.1) among its names (imgpress.example.com): clients that connect by that address refuse it`,
    );
  }, 60_000);

  test("the server's certificate without its intermediate (certbot's cert.pem): a client trusting the root refuses it, and the start says why; the full chain passes", async () => {
    const chain = await certificateChain(["localhost", "127.0.0.1"]);
    const dataDir = await mkdtemp(join(tmpdir(), "imgpress-own-tls-"));
    const [cert, key] = [join(dataDir, "tls", "cert.pem"), join(dataDir, "tls", "key.pem")];
    await mkdir(join(dataDir, "tls"), { recursive: true });
    await writeFile(cert, chain.leaf);
    await writeFile(key, chain.key, { mode: 0o600 });
    server = await startServer({ dataDir, env: { IMGPRESS_TLS_CERT: cert, IMGPRESS_TLS_KEY: key } });
    expect(await verifiesAs(server.port, "localhost", chain.root)).toEqual({
      authorized: false,
      error: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    });
    // curl (and PHP's cURL, with the same libcurl) in the words the warning quotes.
    const rootFile = join(dataDir, "root.pem");
    await writeFile(rootFile, chain.root);
    const curl = Bun.spawnSync([
      "curl",
      "-sS",
      "-o",
      "/dev/null",
      "--cacert",
      rootFile,
      `https://localhost:${server.port}/health`,
    ]);
    expect({ exit: curl.exitCode, stderr: curl.stderr.toString() }).toEqual({
      exit: 60,
      stderr: expect.stringContaining("unable to get local issuer certificate"),
    });
    const warned = (
      await server.waitForLog((l) => String(l.json?.msg).includes("comes without the certificate that issued it"))
    ).json!;
    expect(warned).toMatchObject({
      level: "warn",
      msg: expect.stringContaining(
        `the certificate in IMGPRESS_TLS_CERT (${cert}) comes without the certificate that issued it (CN=imgpress test intermediate, O=imgpress tests)`,
      ),
    });

    await writeFile(cert, chain.fullchain);
    const linesBefore = server.logs.length;
    await server.restart();
    expect(await verifiesAs(server.port, "localhost", chain.root)).toEqual({ authorized: true });
    expect(
      Bun.spawnSync(["curl", "-sS", "-o", "/dev/null", "--cacert", rootFile, `https://localhost:${server.port}/health`])
        .exitCode,
    ).toBe(0);
    expect(
      server.logs
        .slice(linesBefore)
        .some((l) => l.json?.level === "warn" && String(l.json.msg).startsWith("the certificate in IMGPRESS_TLS_CERT")),
    ).toBe(false);
  }, 60_000);
});
