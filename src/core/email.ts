// An address is one identity everywhere it is read: key issuance, staff sign-in, the allowlists
// of the configuration and the command line all normalise it here.

import { domainToASCII, domainToUnicode } from "node:url";
import { AppError } from "./errors.ts";

/**
 * Normalises an e-mail address or throws 400 INVALID_EMAIL. The domain is lower-cased and turned
 * into its ASCII (punycode) form; the local part is lower-cased too, because every mainstream
 * provider treats it case-insensitively and one person should get one key pair. Quoted local
 * parts, IP-literal domains and the source routes some relays still follow (`%`, `!`) are refused.
 */
export function normalizeEmail(raw: string): string {
  const value = raw.trim();
  const at = value.lastIndexOf("@");
  const local = value.slice(0, at);
  const domainText = value.slice(at + 1);
  const invalid = (why: string) => new AppError(400, "INVALID_EMAIL", `email is not a valid address: ${why}.`);
  if (value.length > 254) throw invalid("longer than 254 characters");
  if (at <= 0 || local.includes("@")) throw invalid("expected exactly one @ with text before it");
  if (local.length > 64) throw invalid("the part before @ is longer than 64 characters");
  // Control characters, spaces and the specials of RFC 5322 have no place in an unquoted address.
  // `%` and `!` route mail onward on relays that still honour them (Postfix does for its own
  // domains): `someone%elsewhere.example@allowed.example` would pass an allowlist of
  // @allowed.example and be delivered elsewhere. No mainstream mailbox uses either.
  if (/[\s\p{Cc}\p{Cf}<>()[\]\\,;:"%!]/u.test(local)) throw invalid("the part before @ has a forbidden character");
  if (local.startsWith(".") || local.endsWith(".") || local.includes("..")) throw invalid("misplaced dot before @");
  let domain: string;
  try {
    domain = new URL(`http://${domainText}`).hostname;
  } catch {
    throw invalid("the domain is not valid");
  }
  const labels = domain.split(".");
  // The parser drops what follows a host (`/`, `?`, `#`, a port) and maps look-alike characters:
  // the domain must be the text as written, or its ASCII form.
  const asWritten = domainText.normalize("NFC").toLowerCase();
  if (
    (domain !== asWritten && domainToUnicode(domain) !== asWritten) ||
    labels.length < 2 ||
    labels.some((l) => !/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(l)) ||
    /^\d+$/.test(labels.at(-1)!)
  ) {
    throw invalid("the domain is not valid");
  }
  const address = `${local.toLowerCase()}@${domain}`;
  // Said again of the ASCII form, which is what the mail server receives.
  if (address.length > 254) throw invalid("longer than 254 characters once the domain is in its ASCII form");
  return address;
}

/** `raw` as an address to look up: normalised when it is one, else trimmed and lower-cased (a filter may hold anything). */
export function emailForLookup(raw: string): string {
  try {
    return normalizeEmail(raw);
  } catch {
    return raw.trim().toLowerCase();
  }
}

/**
 * A search text as addresses are stored: its domain (what follows the last `@`, or all of it) in
 * ASCII when written in Unicode, so `bücher.example` finds `…@xn--bcher-kva.example`; else `text`.
 */
export function storedSpelling(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range, control characters included, on purpose
  if (!/[^\x00-\x7f]/.test(text)) return text;
  const at = text.lastIndexOf("@");
  const domain = domainToASCII(text.slice(at + 1).toLowerCase());
  return domain ? `${text.slice(0, at + 1)}${domain}` : text;
}

/** True when a normalised address matches the allowlist (`*`, exact addresses, `@domain` entries). */
export function isAllowed(email: string, allowlist: readonly string[]): boolean {
  const domain = email.slice(email.lastIndexOf("@"));
  return allowlist.some((entry) => entry === "*" || entry === email || entry === domain);
}
