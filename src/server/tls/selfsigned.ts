import { isIP } from "node:net";
import { DAY_MS } from "../../core/durations.ts";
import { bits, concat, explicit, octets, oid, pem, seq, set, time, tlv, uint, utf8, yes } from "./der.ts";

/** A PEM certificate and its PKCS#8 private key. */
export interface TlsPair {
  cert: string;
  key: string;
}

const ECDSA_SHA256 = seq(oid("1.2.840.10045.4.3.2"));

/**
 * Generates a self-signed ECDSA P-256 certificate valid for `names` (DNS names or IP addresses)
 * for `days`, using only Web Crypto so it works in any runtime.
 */
export async function selfSignedCertificate(names: string[], days = 3650, now = new Date()): Promise<TlsPair> {
  const keys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  const serial = crypto.getRandomValues(new Uint8Array(16));
  serial[0]! &= 0x7f;
  const subject = seq(
    set(seq(oid("2.5.4.3"), utf8(names[0] ?? "imgpress"))),
    set(seq(oid("2.5.4.10"), utf8("imgpress self-signed"))),
  );
  const altNames = names.map((n) => (isIP(n) ? tlv(0x87, ipBytes(n)) : tlv(0x82, new TextEncoder().encode(n))));
  const extensions = seq(
    seq(oid("2.5.29.19"), yes(), octets(seq())), // basicConstraints: not a CA
    seq(oid("2.5.29.15"), yes(), octets(tlv(0x03, new Uint8Array([7, 0x80])))), // keyUsage: digitalSignature
    seq(oid("2.5.29.37"), octets(seq(oid("1.3.6.1.5.5.7.3.1")))), // extKeyUsage: serverAuth
    seq(oid("2.5.29.17"), octets(seq(...altNames))),
  );
  const notBefore = new Date(now.getTime() - 60 * 60 * 1000); // tolerate clients whose clock is a little behind
  const notAfter = new Date(now.getTime() + days * DAY_MS);
  const tbs = seq(
    explicit(0, uint(new Uint8Array([2]))),
    uint(serial),
    ECDSA_SHA256,
    subject,
    seq(time(notBefore), time(notAfter)),
    subject,
    spki,
    explicit(3, extensions),
  );
  const raw = new Uint8Array(
    await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, keys.privateKey, tbs as Uint8Array<ArrayBuffer>),
  );
  // Web Crypto returns r ‖ s; X.509 wants SEQUENCE { INTEGER r, INTEGER s }.
  const signature = seq(uint(raw.subarray(0, 32)), uint(raw.subarray(32)));
  return { cert: pem("CERTIFICATE", seq(tbs, ECDSA_SHA256, bits(signature))), key: pem("PRIVATE KEY", pkcs8) };
}

function ipBytes(ip: string): Uint8Array {
  if (isIP(ip) === 4) return new Uint8Array(ip.split(".").map(Number));
  const [head = "", tail = ""] = ip.split("::");
  const groups = (s: string) => (s ? s.split(":").map((g) => parseInt(g, 16)) : []);
  const h = groups(head);
  const t = groups(tail);
  const words = ip.includes("::") ? [...h, ...Array(8 - h.length - t.length).fill(0), ...t] : h;
  return concat(words.map((w) => new Uint8Array([w >> 8, w & 0xff])));
}
