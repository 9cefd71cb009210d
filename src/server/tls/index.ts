import { Buffer } from "node:buffer";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { isIP } from "node:net";
import { hostname } from "node:os";
import { join } from "node:path";
import { rootCertificates } from "node:tls";
import type { Config } from "../../core/config.ts";
import { sha256Hex } from "../../core/crypto.ts";
import { DAY_MS } from "../../core/durations.ts";
import { readOrCreate, replaceFile } from "../../core/files.ts";
import { canonicalName, coversName, isDnsName, isWildcard } from "./names.ts";
import { selfSignedCertificate, type TlsPair } from "./selfsigned.ts";

/** The certificate the server presents, with what clients will check of it. */
export interface ServedTls extends TlsPair {
  /** Its names and validity; null for an operator's certificate node:crypto cannot read (the runtime may still serve it). */
  facts: CertificateFacts | null;
  /** True for the self-signed pair kept in `<data dir>/tls/`. */
  generated: boolean;
  /** The file clients are given (`tls/cert.pem`, or IMGPRESS_TLS_CERT). */
  certPath: string;
  /** The file holding the private key: IMGPRESS_TLS_KEY, or the generated pair's `tls/self-signed.pem`. */
  keyPath?: string;
  /** Set when a new self-signed pair replaced the one in the data folder at this start. */
  replaced?: Replacement;
}

/** Why the generated pair was replaced, and what became of the old one. */
export interface Replacement {
  /** e.g. "the one in the data folder lacks nas.local". */
  reason: string;
  /** SHA-256 of the certificate replaced, when it could be read. */
  previousSha256?: string;
  /** Where the replaced pair was kept (`self-signed.pem.previous`). */
  keptAt?: string;
}

/** The names and validity of a certificate file, as a client checks them. */
export interface CertificateFacts {
  /** The first (the server's) certificate's subject alternative names, as `canonicalName` writes them. */
  names: string[];
  /** The server's certificate's start. */
  notBefore: Date;
  /** The server's certificate's end. */
  notAfter: Date;
  /** The earliest end of an intermediate in the file, when it comes before the server's certificate's. */
  intermediateEnds?: Date;
  /** The issuer of the server's certificate (e.g. "CN=R11, O=Let's Encrypt, C=US") when the file lacks it and it is no trusted root: see `missingIssuer`. */
  missingIssuer?: string;
}

/** A generated certificate this close to its end is replaced at start (it is valid for ten years). */
const RENEW_GENERATED_BEFORE_MS = 30 * DAY_MS;

/**
 * The certificate the server presents: the operator's PEM files when configured, otherwise a
 * self-signed pair generated into `<data dir>/tls/` on first start and reused afterwards, until it
 * lacks a name IMGPRESS_TLS_NAMES or IMGPRESS_HOST asks for, cannot be read, or nears its end. One
 * not valid yet is kept: the clock may be the one that is wrong (a NAS before its time sync).
 */
export async function loadTls(config: Config, now = new Date()): Promise<ServedTls> {
  if (config.tlsCert && config.tlsKey) {
    const [cert, key] = await Promise.all([readFile(config.tlsCert, "utf8"), readFile(config.tlsKey, "utf8")]).catch(
      (err: Error) => {
        throw new Error(
          `cannot read the TLS files (IMGPRESS_TLS_CERT ${config.tlsCert}, IMGPRESS_TLS_KEY ${config.tlsKey}): ${err.message}`,
        );
      },
    );
    // Bun and Deno would refuse them only at listen, with an OpenSSL code that names neither file.
    if (!cert.includes("-----BEGIN CERTIFICATE-----"))
      throw new Error(`IMGPRESS_TLS_CERT ${config.tlsCert} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
    if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key))
      throw new Error(`IMGPRESS_TLS_KEY ${config.tlsKey} holds no PEM private key (-----BEGIN … PRIVATE KEY-----)`);
    // No passphrase can be given to the runtime: it would fail at listen with BAD_DECRYPT.
    if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(key)) {
      throw new Error(
        `IMGPRESS_TLS_KEY ${config.tlsKey} is encrypted with a passphrase, which imgpress cannot be given: decrypt it (openssl pkey -in ${config.tlsKey} -out key.pem) and keep the result readable by this user only`,
      );
    }
    if (keyFits(cert, key) === false) {
      throw new Error(
        `IMGPRESS_TLS_KEY ${config.tlsKey} is not the private key of the certificate in IMGPRESS_TLS_CERT ${config.tlsCert} (the file's first certificate must be the server's, then its intermediates)`,
      );
    }
    return {
      cert,
      key,
      facts: certificateFacts(cert),
      generated: false,
      certPath: config.tlsCert,
      keyPath: config.tlsKey,
    };
  }
  return generatedTls(config, now);
}

// The self-signed pair of the data folder, replaced when it no longer serves (see loadTls).
async function generatedTls(config: Config, now: Date): Promise<ServedTls> {
  const wanted = [...new Set([...config.tlsNames, ...(isWildcard(config.host) ? [] : [canonicalName(config.host)])])];
  const bundlePath = join(config.dataDir, "tls", "self-signed.pem");
  const generate = async (names: string[]) => {
    const pair = await selfSignedCertificate(names, undefined, now);
    // The certificate and key are written as one file so they can never mismatch.
    return pair.key + pair.cert;
  };
  const bundle = await readOrCreate(bundlePath, () => generate([...new Set([...defaultNames(), ...wanted])]));
  const found = readBundle(bundle);
  // The old certificate's names and fingerprint count even when its key is what is damaged.
  const oldCert = pemBlocks(bundle, "CERTIFICATE")[0];
  const oldFacts = oldCert ? certificateFacts(oldCert) : null;
  // A name a wildcard of the certificate already covers (nas.example.lan under *.example.lan) is no reason for a new one.
  const missing = oldFacts ? wanted.filter((name) => !coversName(oldFacts.names, name)) : wanted;
  let reason: string | null = null;
  if (!found || !oldFacts)
    reason = "the one in the data folder could not be read (its key or certificate is missing, damaged or not a pair)";
  else if (missing.length > 0) reason = `the one in the data folder lacks ${missing.join(", ")}`;
  else if (oldFacts.notAfter.getTime() - now.getTime() < RENEW_GENERATED_BEFORE_MS)
    reason = `the one in the data folder ${oldFacts.notAfter <= now ? "expired" : "expires"} on ${isoSeconds(oldFacts.notAfter)}`;
  let pair: TlsPair;
  let replaced: Replacement | undefined;
  // (Without a pair `reason` is always set; the test on `found` is for the type checker.)
  if (reason || !found) {
    const why = reason ?? "the one in the data folder could not be read";
    // Every name the old one held stays, so clients that reached it by one still can.
    const fresh = await generate([...new Set([...defaultNames(), ...(oldFacts?.names ?? []), ...wanted])]);
    const previous = `${bundlePath}.previous`;
    await writeOwnerOnly(previous, bundle, why);
    await writeOwnerOnly(bundlePath, fresh, why);
    pair = readBundle(fresh)!;
    replaced = {
      reason: why,
      keptAt: previous,
      ...(oldCert && oldFacts ? { previousSha256: await certificateFingerprint(oldCert) } : {}),
    };
  } else pair = found;
  const certPath = servedCertificatePath(config);
  // The copy clients are given (certificate blocks only): put right if it was edited or damaged, so it always matches what is served.
  const copy = await readOrCreate(certPath, async () => pair.cert, 0o644).catch(unwritable(certPath));
  if (copy !== pair.cert) await writeFile(certPath, pair.cert, { mode: 0o644 }).catch(unwritable(certPath));
  return {
    ...pair,
    facts: replaced ? certificateFacts(pair.cert) : oldFacts,
    generated: true,
    certPath,
    keyPath: bundlePath,
    ...(replaced ? { replaced } : {}),
  };
}

/** The certificate file clients are given: IMGPRESS_TLS_CERT, or the data folder's `tls/cert.pem` (the generated one's copy). */
export function servedCertificatePath(config: Config): string {
  return config.tlsCert ?? join(config.dataDir, "tls", "cert.pem");
}

// A read-only folder gets a sentence that says what was to be written and why.
async function writeOwnerOnly(path: string, content: string, reason: string): Promise<void> {
  await replaceFile(path, content, 0o600).catch(
    unwritable(path, `to make a new self-signed certificate, because ${reason}`),
  );
}

function unwritable(path: string, why = "(the copy of the certificate for clients)") {
  return (err: NodeJS.ErrnoException): never => {
    throw new Error(
      `cannot write ${path} (${err.code ?? err.message}) ${why}: the data folder's tls/ must be writable by this user`,
    );
  };
}

/** The names every generated certificate holds: this machine by its loopback addresses and host name (if it is one a certificate can hold). */
function defaultNames(): string[] {
  const host = canonicalName(hostname());
  return ["localhost", "127.0.0.1", "::1", ...(isDnsName(host) ? [host] : [])];
}

// The key and certificate of the data folder's pair, each its own PEM block, or null unless both
// are there and belong together (a damaged key would fail at listen, naming the address).
function readBundle(bundle: string): TlsPair | null {
  const key = pemBlocks(bundle, "[A-Z ]*PRIVATE KEY")[0];
  const cert = pemBlocks(bundle, "CERTIFICATE")[0];
  return key && cert && keyFits(cert, key) ? { key, cert } : null;
}

/** The PEM blocks whose label matches `label` (`CERTIFICATE`, or a pattern such as `[A-Z ]*PRIVATE KEY`) in `text`, in order, each ending in a newline. */
function pemBlocks(text: string, label: string): string[] {
  const pattern = new RegExp(`-----BEGIN (${label})-----[\\s\\S]*?-----END \\1-----`, "g");
  return [...text.matchAll(pattern)].map((m) => `${m[0].replace(/\r\n/g, "\n")}\n`);
}

/** Clock difference a certificate's start may show before it counts as not valid yet (the generated one starts an hour back). */
const CLOCK_SKEW_MS = 5 * 60_000;

/** Whether a client at `now` refuses the certificate as not valid yet or expired. */
export function notValidAt(facts: CertificateFacts, now: Date): "not yet" | "expired" | null {
  if (facts.notBefore.getTime() > now.getTime() + CLOCK_SKEW_MS) return "not yet";
  return facts.notAfter <= now ? "expired" : null;
}

/** A time to the second, as openssl and the warnings write it. */
export function isoSeconds(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, "Z");
}

/** The names and validity of the certificates in `pem` (a chain, or a key and chain in one file), or null when there is none it can read. */
export function certificateFacts(pem: string): CertificateFacts | null {
  const chain: X509Certificate[] = [];
  for (const block of pemBlocks(pem, "CERTIFICATE")) {
    try {
      chain.push(new X509Certificate(block));
    } catch {
      // An intermediate it cannot read leaves the leaf's facts.
      if (chain.length === 0) return null;
    }
  }
  const leaf = chain[0];
  if (!leaf) return null;
  // Bun writes "IP Address:0:0:0:0:0:0:0:1", Deno "IP Address:::1": both read back as ::1. Bun quotes
  // (JSON-style, each byte of UTF-8 a \u00XX) a name with characters a DNS name cannot hold.
  const names = (leaf.subjectAltName ?? "").split(", ").flatMap((entry) => {
    const [kind, value = ""] = entry.split(/:(.*)/s);
    if (kind !== "DNS" && kind !== "IP Address") return [];
    return [canonicalName(value.startsWith('"') ? unquoted(value) : value)];
  });
  const leafEnd = new Date(leaf.validTo);
  const intermediateEnd = Math.min(...chain.slice(1).map((c) => new Date(c.validTo).getTime()));
  const gap = missingIssuer(chain);
  return {
    names,
    notBefore: new Date(leaf.validFrom),
    notAfter: leafEnd,
    ...(intermediateEnd < leafEnd.getTime() ? { intermediateEnds: new Date(intermediateEnd) } : {}),
    ...(gap ? { missingIssuer: gap } : {}),
  };
}

/**
 * The issuer of the server's certificate when clients cannot find it: not in the file (in any order:
 * clients build the chain from whatever certificates come along) and not a root the runtime trusts.
 * That is certbot's cert.pem given instead of fullchain.pem, which browsers may paper over and PHP
 * cURL does not. A root of a private CA that the clients were given looks the same, so the warning
 * says so. A self-signed certificate needs nothing more.
 */
function missingIssuer([leaf, ...others]: X509Certificate[]): string | null {
  if (!leaf || issuedBy(leaf, leaf) || others.some((other) => issuedBy(leaf, other))) return null;
  return trustedRootSubjects().has(leaf.issuer) ? null : distinguishedName(leaf.issuer);
}

// By name and signature: a name alone would take another CA's intermediate of the same name for the
// issuer. (checkIssued also wants the issuer's key usage to allow signing certificates, which a
// self-signed server certificate such as the generated one does not.)
function issuedBy(cert: X509Certificate, issuer: X509Certificate): boolean {
  return cert.issuer === issuer.subject && cert.verify(issuer.publicKey);
}

let rootSubjects: Set<string> | null = null;
// The subjects of the root certificates this runtime trusts, read once and only when asked (~2 ms).
function trustedRootSubjects(): Set<string> {
  return (rootSubjects ??= new Set(rootCertificates.map((root) => new X509Certificate(root).subject)));
}

// node:crypto writes a name one attribute per line: on one line, as openssl prints it.
function distinguishedName(name: string): string {
  return name.split("\n").join(", ");
}

function unquoted(value: string): string {
  try {
    const text = String(JSON.parse(value));
    // Bytes written one by one as \u00XX are UTF-8 read as Latin-1: put them back together.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the Latin-1 range, control characters included, on purpose
    return /^[\x00-\xff]*$/.test(text) ? Buffer.from(text, "latin1").toString("utf8") : text;
  } catch {
    return value;
  }
}

/** SHA-256 of the first certificate in a PEM file, as colon-separated upper-case hex (as openssl prints it). */
export async function certificateFingerprint(pem: string): Promise<string> {
  const block = pemBlocks(pem, "CERTIFICATE")[0] ?? pem;
  const der = Buffer.from(block.replace(/-----[^-]+-----|\s/g, ""), "base64");
  return (await sha256Hex(der)).match(/../g)!.join(":").toUpperCase();
}

/** Whether `key` is the private key of the first certificate in `cert`; null when either cannot be read here (the runtime then has its say). */
export function keyFits(cert: string, key: string): boolean | null {
  try {
    return new X509Certificate(pemBlocks(cert, "CERTIFICATE")[0] ?? cert).checkPrivateKey(createPrivateKey(key));
  } catch {
    return null;
  }
}

/** `host` as it is written in a URL: an IPv6 address in brackets. */
export function urlHost(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}
