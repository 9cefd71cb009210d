import { isIP } from "node:net";

/** One allowlist entry: an address and how many leading bits must match. */
interface Range {
  bytes: number[];
  bits: number;
}

/**
 * Parses one IMGPRESS_INTERNAL_ALLOW entry (`127.0.0.1`, `::1`, `192.168.1.0/24`, `fd00::/8`) into
 * its canonical text; throws a string naming the entry when it is not an address or CIDR range.
 */
export function parseAllowEntry(entry: string): string {
  const range = toRange(entry);
  if (!range) throw `IP addresses or CIDR ranges such as 192.168.1.0/24 or fd00::/8 (bad entry: ${entry})`;
  return entry.trim().toLowerCase();
}

/** Matches client addresses against address and CIDR entries; IPv4-mapped IPv6 clients match IPv4 entries. */
export class IpAllowlist {
  private readonly ranges: Range[];

  constructor(entries: readonly string[]) {
    this.ranges = entries.map((e) => {
      const range = toRange(e);
      if (!range) throw new Error(`not an address or CIDR range: ${e}`);
      return range;
    });
  }

  /** True when `address` (as the runtime or the proxy reports it) lies in one of the ranges. */
  has(address: string): boolean {
    const bytes = addressBytes(address);
    if (!bytes) return false;
    return this.ranges.some((r) => r.bytes.length === bytes.length && prefixEqual(r.bytes, bytes, r.bits));
  }
}

/** Whether a URL's host names this machine by its loopback: `localhost`, or a loopback address (`isLoopbackAddress`). */
export function isLoopbackHost(hostname: string): boolean {
  return hostname.replace(/\.$/, "").toLowerCase() === "localhost" || isLoopbackAddress(hostname);
}

/**
 * Whether a URL's host is a loopback address as written: 127.0.0.0/8 (also short, `127.1`), `::1`
 * or an IPv4-mapped one, with or without brackets or a final dot (a URL of a scheme the URL
 * standard does not know, `smtp:`, keeps its host as written). No name counts: a client may ask
 * DNS for `localhost` before the hosts file (nodemailer does).
 */
export function isLoopbackAddress(hostname: string): boolean {
  const bare = hostname
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "")
    .toLowerCase();
  if (/^127(\.\d+){0,3}$/.test(bare)) return true;
  // An IPv4-mapped address comes back as its 4 IPv4 bytes.
  const bytes = addressBytes(bare);
  return bytes !== null && (bytes.length === 4 ? bytes[0] === 127 : bytes.every((b, i) => b === (i === 15 ? 1 : 0)));
}

/**
 * What a per-address limit counts a client as: an IPv4 address as it is, an IPv6 address by its
 * /64 (one home or server network gets a whole /64, so counting single addresses would give one
 * client 2^64 quotas); anything else (e.g. "unknown") as it is.
 */
export function rateLimitSubject(address: string): string {
  const bytes = addressBytes(address);
  if (!bytes) return address;
  if (bytes.length === 4) return bytes.join(".");
  const groups = Array.from({ length: 4 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16));
  return `${groups.join(":")}::/64`;
}

/**
 * What the conversion shares count a client as: an IPv4 address as it is, an IPv6 address by its
 * first `v6PrefixBits` bits (IMGPRESS_CLIENT_IPV6_PREFIX: a subscriber commonly gets a /56 or a
 * /48, so a /64 grouping would give one of them 256 or 65 536 shares); anything else as it is.
 */
export function clientGroup(address: string, v6PrefixBits: number): string {
  const bytes = addressBytes(address);
  if (!bytes || bytes.length === 4) return rateLimitSubject(address);
  const kept = bytes.map((byte, i) => byte & ((0xff << (8 - Math.min(8, Math.max(0, v6PrefixBits - i * 8)))) & 0xff));
  const groups = Array.from({ length: 8 }, (_, i) => ((kept[2 * i]! << 8) | kept[2 * i + 1]!).toString(16));
  return `${groups.join(":")}/${v6PrefixBits}`;
}

function toRange(entry: string): Range | null {
  const [address = "", bits, extra] = entry.trim().split("/");
  if (extra !== undefined) return null;
  const bytes = addressBytes(address);
  if (!bytes) return null;
  // An entry written as a mapped address (::ffff:10.0.0.0/104) becomes the IPv4 range it means.
  const mappedShift = bytes.length === 4 && isIP(address) === 6 ? 96 : 0;
  const max = bytes.length * 8 + mappedShift;
  if (bits === undefined) return { bytes, bits: bytes.length * 8 };
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > max || Number(bits) < mappedShift) return null;
  return { bytes, bits: Number(bits) - mappedShift };
}

// 4 bytes for IPv4 (and IPv4-mapped IPv6), 16 for IPv6; null when not an address.
function addressBytes(text: string): number[] | null {
  const address = text
    .trim()
    .replace(/^\[|\]$/g, "")
    .split("%")[0]!;
  const version = isIP(address);
  if (version === 4) return address.split(".").map(Number);
  if (version !== 6) return null;
  const bytes = v6Bytes(address.toLowerCase());
  const mapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  return mapped ? bytes.slice(12) : bytes;
}

function v6Bytes(address: string): number[] {
  let text = address;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  return groups.flatMap((g) => {
    const n = parseInt(g, 16);
    return [n >> 8, n & 0xff];
  });
}

function prefixEqual(a: number[], b: number[], bits: number): boolean {
  for (let i = 0; i < a.length && bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((a[i]! & mask) !== (b[i]! & mask)) return false;
  }
  return true;
}
