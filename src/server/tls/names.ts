import { isIP } from "node:net";

/**
 * A name as a client compares it with a certificate's: DNS names in lower case without a trailing
 * dot and in their xn-- form when they hold other than ASCII letters (as clients send them), IP
 * addresses in their short form (IPv6 as a URL writes it), an IPv6 zone (`%eth0`) left off, since a
 * client checks the address alone.
 */
export function canonicalName(name: string): string {
  const address = name.replace(/%.*$/, "");
  if (isIP(address) === 6) return new URL(`http://[${address}]`).hostname.slice(1, -1);
  const lower = name.toLowerCase().replace(/\.$/, "");
  if (/^[\x21-\x7e]*$/.test(lower)) return lower;
  // WHATWG URL's host parser applies IDNA; a wildcard label is kept aside, as it is no letter of a name.
  const wildcard = lower.startsWith("*.");
  const host = URL.parse(`http://${wildcard ? `x${lower.slice(1)}` : lower}/`)?.hostname;
  return host ? (wildcard ? `*${host.slice(1)}` : host) : lower;
}

/** Whether `host` listens on every address (so a local client should use loopback). */
export function isWildcard(host: string): boolean {
  const name = canonicalName(host);
  return name === "0.0.0.0" || name === "::" || name === "";
}

/** Whether a certificate holding `names` (canonical) is accepted by a client that connects to `host`: exactly, or by a wildcard for its first label. */
export function coversName(names: readonly string[], host: string): boolean {
  const wanted = canonicalName(host);
  if (names.includes(wanted)) return true;
  const dot = wanted.indexOf(".");
  return isIP(wanted) === 0 && dot > 0 && names.includes(`*${wanted.slice(dot)}`);
}

// Labels as self-signed certificates hold them: host names with underscores (NAS defaults) included.
const DNS_LABEL = "[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?";
const DNS_NAME = new RegExp(`^(?:\\*\\.)?${DNS_LABEL}(?:\\.${DNS_LABEL})*$`);
const ADDRESSES_NO_CLIENT_USES = new Set(["0.0.0.0", "::", "255.255.255.255"]);

/** Whether `name` (canonical) is a DNS name a certificate can hold. */
export function isDnsName(name: string): boolean {
  // A last label of digits only ("10.1.2") is read by clients as an IPv4 address, never as this name.
  return name.length <= 253 && DNS_NAME.test(name) && !/(^|\.)\d+$/.test(name);
}

/**
 * An entry of IMGPRESS_TLS_NAMES as the certificate will hold it; otherwise it throws why no client
 * could ever match it (or "" when it is simply no name): IPv4-mapped addresses become IPv4 (clients
 * compare the IPv4 form), internationalised names their xn-- form, and a wildcard must stand for one
 * label under a name of two or more (`*.local` matches no host in any client).
 */
export function certificateName(entry: string): string {
  if (/\s/.test(entry)) throw "separate names with commas";
  if (entry.includes("%") && isIP(entry.replace(/%.*$/, "")) === 6)
    throw "a certificate cannot hold an IPv6 zone such as %eth0";
  if (entry.startsWith("[")) throw "an IPv6 address is written without brackets";
  if (/^[^:]+:\d+$/.test(entry)) throw "a name is written without a port";
  if (isIP(entry) !== 0) {
    const address = canonicalName(entry);
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(address);
    const name = mapped
      ? [mapped[1]!, mapped[2]!].flatMap((w) => [parseInt(w, 16) >> 8, parseInt(w, 16) & 0xff]).join(".")
      : address;
    if (ADDRESSES_NO_CLIENT_USES.has(name)) throw "no client connects to this address";
    return name;
  }
  const name = canonicalName(entry);
  if (!isDnsName(name)) throw "";
  if (name.startsWith("*.") && name.slice(2).split(".").length < 2)
    throw "a wildcard stands for one label under a name of two labels or more (*.example.lan): name the host itself";
  return name;
}
