/** Just enough DER (X.690) to write one self-signed certificate. */
import { Buffer } from "node:buffer";

/** Encodes a tag-length-value triple. */
export function tlv(tag: number, ...content: Uint8Array[]): Uint8Array {
  const body = concat(content);
  const n = body.length;
  const length =
    n < 0x80
      ? [n]
      : n < 0x100
        ? [0x81, n]
        : n < 0x10000
          ? [0x82, n >> 8, n & 0xff]
          : [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  return concat([new Uint8Array([tag, ...length]), body]);
}

/** Joins byte arrays. */
export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, p) => sum + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

/** SEQUENCE. */
export const seq = (...items: Uint8Array[]) => tlv(0x30, ...items);
/** SET. */
export const set = (...items: Uint8Array[]) => tlv(0x31, ...items);
/** Context-specific constructed tag [n]. */
export const explicit = (n: number, item: Uint8Array) => tlv(0xa0 + n, item);
/** OCTET STRING. */
export const octets = (bytes: Uint8Array) => tlv(0x04, bytes);
/** BIT STRING with no unused bits. */
export const bits = (bytes: Uint8Array) => tlv(0x03, new Uint8Array([0]), bytes);
/** UTF8String. */
export const utf8 = (s: string) => tlv(0x0c, new TextEncoder().encode(s));
/** BOOLEAN true. */
export const yes = () => tlv(0x01, new Uint8Array([0xff]));

/** INTEGER from big-endian unsigned bytes (minimal, with a 0 byte where the top bit is set). */
export function uint(bytes: Uint8Array): Uint8Array {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  const trimmed = bytes.subarray(i);
  return tlv(0x02, (trimmed[0] ?? 0) & 0x80 ? concat([new Uint8Array([0]), trimmed]) : trimmed);
}

/** OBJECT IDENTIFIER from dotted text. */
export function oid(dotted: string): Uint8Array {
  const [a, b, ...rest] = dotted.split(".").map(Number);
  const out = [a! * 40 + b!];
  for (const n of rest) {
    const chunk = [n & 0x7f];
    for (let v = n >>> 7; v > 0; v >>>= 7) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, new Uint8Array(out));
}

/** UTCTime before 2050, GeneralizedTime after, as RFC 5280 requires. */
export function time(date: Date): Uint8Array {
  const iso = `${date.toISOString().replace(/[-:T]/g, "").slice(0, 14)}Z`;
  return date.getUTCFullYear() < 2050
    ? tlv(0x17, new TextEncoder().encode(iso.slice(2)))
    : tlv(0x18, new TextEncoder().encode(iso));
}

/** PEM armour. */
export function pem(label: string, der: Uint8Array): string {
  const b64 = Buffer.from(der)
    .toString("base64")
    .replace(/(.{64})/g, "$1\n")
    .trimEnd();
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}
