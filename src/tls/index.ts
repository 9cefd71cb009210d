import { createPrivateKey, X509Certificate } from "node:crypto";
import { isIP } from "node:net";
import { hostname } from "node:os";
import { join } from "node:path";
import type { Config } from "../config.ts";
import { readOrCreate, replaceFile } from "../files.ts";
import { selfSignedCertificate, type TlsPair } from "./selfsigned.ts";
import { readFile, writeFile } from "node:fs/promises";

/** The certificate the server presents, with what clients will check of it. */
export interface ServedTls extends TlsPair {
  /** Its names and validity; null for an operator's certificate node:crypto cannot read (the runtime may still serve it). */
  facts: CertificateFacts | null;
  /** True for the self-signed pair kept in `<data dir>/tls/`. */
  generated: boolean;
  /** The file clients are given (`tls/cert.pem`, or IMGPRESS_TLS_CERT). */
  certPath: string;
  /** Why a new self-signed pair replaced the one in the data folder at this start, if it did. */
  replaced?: string;
}

/** The names and validity of a certificate, as a client checks them. */
export interface CertificateFacts {
  /** Its subject alternative names: DNS names as written, IP addresses in their short form. */
  names: string[];
  notBefore: Date;
  notAfter: Date;
}

/** A generated certificate this close to its end is replaced at start (it is valid for ten years). */
const RENEW_GENERATED_BEFORE_MS = 30 * 86_400_000;

/**
 * The certificate the server presents: the operator's PEM files when configured, otherwise a
 * self-signed pair generated into `<data dir>/tls/` on first start and reused afterwards, until it
 * lacks a name IMGPRESS_TLS_NAMES or IMGPRESS_HOST asks for, or nears its end.
 */
export async function loadTls(config: Config, now = new Date()): Promise<ServedTls> {
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
    return { cert, key, facts: certificateFacts(cert), generated: false, certPath: config.tlsCert };
  }
  const wanted = [...new Set([...config.tlsNames, ...(isWildcard(config.host) ? [] : [canonicalName(config.host)])])];
  const bundlePath = join(config.dataDir, "tls", "self-signed.pem");
  const generate = async (names: string[]) => {
    const pair = await selfSignedCertificate(names, undefined, now);
    // The certificate and key are written as one file so they can never mismatch.
    return pair.key + pair.cert;
  };
  let bundle = await readOrCreate(bundlePath, () => generate([...new Set([...DEFAULT_NAMES(), ...wanted])]));
  let pair = splitBundle(bundle);
  let facts = certificateFacts(pair.cert);
  let replaced: string | undefined;
  const missing = facts ? wanted.filter((name) => !facts!.names.includes(name)) : wanted;
  if (!facts) replaced = "the one in the data folder could not be read";
  else if (missing.length > 0) replaced = `the one in the data folder lacks ${missing.join(", ")}`;
  else if (facts.notAfter.getTime() - now.getTime() < RENEW_GENERATED_BEFORE_MS) replaced = `the one in the data folder ${facts.notAfter <= now ? "expired" : "expires"} on ${facts.notAfter.toISOString()}`;
  if (replaced) {
    // Every name the old one held stays, so clients that reached it by one still can.
    bundle = await generate([...new Set([...DEFAULT_NAMES(), ...(facts?.names ?? []), ...wanted])]);
    await replaceFile(bundlePath, bundle, 0o600);
    pair = splitBundle(bundle);
    facts = certificateFacts(pair.cert)!;
  }
  const certPath = join(config.dataDir, "tls", "cert.pem");
  // The copy clients are given: put right if it was edited or damaged, so it always matches what is served.
  if ((await readOrCreate(certPath, async () => pair.cert, 0o644)) !== pair.cert) await writeFile(certPath, pair.cert, { mode: 0o644 });
  return { ...pair, facts, generated: true, certPath, ...(replaced ? { replaced } : {}) };
}

/** The names every generated certificate holds: this machine by its loopback addresses and host name. */
const DEFAULT_NAMES = () => ["localhost", "127.0.0.1", "::1", canonicalName(hostname())];

function splitBundle(bundle: string): TlsPair {
  const key = bundle.slice(0, bundle.indexOf("-----BEGIN CERTIFICATE-----"));
  return { key, cert: bundle.slice(key.length) };
}

/** The names and validity of the first certificate in `pem`, or null when it cannot be read. */
export function certificateFacts(pem: string): CertificateFacts | null {
  try {
    const x509 = new X509Certificate(pem);
    // Bun writes "IP Address:0:0:0:0:0:0:0:1", Deno "IP Address:::1": both read back as ::1.
    const names = (x509.subjectAltName ?? "")
      .split(", ")
      .flatMap((entry) => (entry.startsWith("DNS:") ? [entry.slice(4)] : entry.startsWith("IP Address:") ? [canonicalName(entry.slice(11))] : []));
    return { names, notBefore: new Date(x509.validFrom), notAfter: new Date(x509.validTo) };
  } catch {
    return null;
  }
}

/** A host name in lower case, or an IP address in its short form (IPv6 as a URL writes it). */
export function canonicalName(name: string): string {
  if (isIP(name) === 6) return new URL(`http://[${name}]`).hostname.slice(1, -1);
  return name.toLowerCase();
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
