import { hostname } from "node:os";
import { join } from "node:path";
import type { Config } from "../config.ts";
import { readOrCreate } from "../files.ts";
import { selfSignedCertificate, type TlsPair } from "./selfsigned.ts";
import { readFile } from "node:fs/promises";

/**
 * The certificate the server presents: the operator's PEM files when configured, otherwise a
 * self-signed pair generated into `<data dir>/tls/` on first start and reused afterwards.
 */
export async function loadTls(config: Config): Promise<TlsPair & { generated: boolean; certPath: string }> {
  if (config.tlsCert && config.tlsKey) {
    const [cert, key] = await Promise.all([readFile(config.tlsCert, "utf8"), readFile(config.tlsKey, "utf8")]);
    return { cert, key, generated: false, certPath: config.tlsCert };
  }
  const names = [...new Set(["localhost", "127.0.0.1", "::1", hostname(), ...(isWildcard(config.host) ? [] : [config.host])])];
  const certPath = join(config.dataDir, "tls", "cert.pem");
  // Generate the pair once; the certificate and key are written as one file so they can never mismatch.
  const bundle = await readOrCreate(join(config.dataDir, "tls", "self-signed.pem"), async () => {
    const pair = await selfSignedCertificate(names);
    return pair.key + pair.cert;
  });
  const key = bundle.slice(0, bundle.indexOf("-----BEGIN CERTIFICATE-----"));
  const cert = bundle.slice(key.length);
  await readOrCreate(certPath, async () => cert, 0o644);
  return { cert, key, generated: true, certPath };
}

/** Whether `host` listens on every address (so a local client should use loopback). */
export function isWildcard(host: string): boolean {
  return host === "0.0.0.0" || host === "::" || host === "";
}
