import { createPrivateKey, X509Certificate } from "node:crypto";
import { isIP } from "node:net";
import { hostname } from "node:os";
import { join } from "node:path";
import type { Config } from "../config.ts";
import { readOrCreate } from "../files.ts";
import { selfSignedCertificate, type TlsPair } from "./selfsigned.ts";
import { readFile, writeFile } from "node:fs/promises";

/**
 * The certificate the server presents: the operator's PEM files when configured, otherwise a
 * self-signed pair generated into `<data dir>/tls/` on first start and reused afterwards.
 */
export async function loadTls(config: Config): Promise<TlsPair & { generated: boolean; certPath: string }> {
  if (config.tlsCert && config.tlsKey) {
    const [cert, key] = await Promise.all([readFile(config.tlsCert, "utf8"), readFile(config.tlsKey, "utf8")]).catch((err: Error) => {
      throw new Error(`cannot read the TLS files (IMGPRESS_TLS_CERT ${config.tlsCert}, IMGPRESS_TLS_KEY ${config.tlsKey}): ${err.message}`);
    });
    // Bun and Deno would refuse them only at listen, with an OpenSSL code that names neither file.
    if (!cert.includes("-----BEGIN CERTIFICATE-----")) throw new Error(`IMGPRESS_TLS_CERT ${config.tlsCert} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
    if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key)) throw new Error(`IMGPRESS_TLS_KEY ${config.tlsKey} holds no PEM private key (-----BEGIN … PRIVATE KEY-----)`);
    // No passphrase can be given to the runtime: it would fail at listen with BAD_DECRYPT.
    if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(key)) {
      throw new Error(`IMGPRESS_TLS_KEY ${config.tlsKey} is encrypted with a passphrase, which imgpress cannot be given: decrypt it (openssl pkey -in ${config.tlsKey} -out key.pem) and keep the result readable by this user only`);
    }
    if (keyOfAnotherCertificate(cert, key)) throw new Error(`IMGPRESS_TLS_KEY ${config.tlsKey} is not the private key of the certificate in IMGPRESS_TLS_CERT ${config.tlsCert}`);
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
  // The copy clients are given: put right if it was edited or damaged, so it always matches what is served.
  if ((await readOrCreate(certPath, async () => cert, 0o644)) !== cert) await writeFile(certPath, cert, { mode: 0o644 });
  return { cert, key, generated: true, certPath };
}

/** Whether `host` listens on every address (so a local client should use loopback). */
export function isWildcard(host: string): boolean {
  return host === "0.0.0.0" || host === "::" || host === "";
}

/** `host` as it is written in a URL: an IPv6 address in brackets. */
export function urlHost(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}

// True only when both parse and the key is not the certificate's (the runtime would refuse at listen,
// naming neither file); anything they cannot parse here is left to the runtime's own message.
function keyOfAnotherCertificate(cert: string, key: string): boolean {
  try {
    return !new X509Certificate(cert).checkPrivateKey(createPrivateKey(key));
  } catch {
    return false;
  }
}
