import { isIP } from "node:net";

/**
 * A name as a client compares it with a certificate's: DNS names in lower case without a trailing
 * dot, IP addresses in their short form (IPv6 as a URL writes it), an IPv6 zone (`%eth0`) left off,
 * since a client checks the address alone.
 */
export function canonicalName(name: string): string {
  const address = name.replace(/%.*$/, "");
  if (isIP(address) === 6) return new URL(`http://[${address}]`).hostname.slice(1, -1);
  return name.toLowerCase().replace(/\.$/, "");
}

/** Whether `host` listens on every address (so a local client should use loopback). */
export function isWildcard(host: string): boolean {
  const name = canonicalName(host);
  return name === "0.0.0.0" || name === "::" || name === "";
}

const DNS_LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const DNS_NAME = new RegExp(`^(?:\\*\\.)?${DNS_LABEL}(?:\\.${DNS_LABEL})*$`);
const ADDRESSES_NO_CLIENT_USES = new Set(["0.0.0.0", "::", "255.255.255.255"]);

/**
 * An entry of IMGPRESS_TLS_NAMES as the certificate will hold it; otherwise it throws why no client
 * could ever match it (or "" when it is simply no name): IPv4-mapped addresses become IPv4 (clients compare the IPv4
 * form), internationalised names their xn-- form, and a wildcard must stand for one label under a
 * name of two or more (`*.local` matches no host in any client).
 */
export function certificateName(entry: string): string {
  if (/\s/.test(entry)) throw "separate names with commas";
  if (entry.includes("%")) throw "a certificate cannot hold an IPv6 zone such as %eth0";
  if (isIP(entry) !== 0) {
    const address = canonicalName(entry);
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(address);
    const name = mapped ? [mapped[1]!, mapped[2]!].flatMap((w) => [parseInt(w, 16) >> 8, parseInt(w, 16) & 0xff]).join(".") : address;
    if (ADDRESSES_NO_CLIENT_USES.has(name)) throw "no client connects to this address";
    return name;
  }
  // WHATWG URL's host parser writes a name with non-ASCII letters in its xn-- form, as clients send it.
  const host = /^[\x21-\x7e]*$/.test(entry) ? entry : (URL.parse(`http://${entry.replace(/^\*\./, "x.")}/`)?.hostname.replace(/^x\./, entry.startsWith("*.") ? "*." : "") ?? entry);
  const name = canonicalName(host);
  // A last label of digits only ("10.1.2") is read by clients as an IPv4 address, never as this name.
  if (name.length > 253 || !DNS_NAME.test(name) || /(^|\.)\d+$/.test(name)) throw "";
  if (name.startsWith("*.") && name.slice(2).split(".").length < 2) throw "a wildcard stands for one label under a name of two or more (*.example.lan): name the host itself";
  return name;
}
