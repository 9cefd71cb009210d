// An address is one identity everywhere it is read: key issuance, staff sign-in, the allowlists
// of the configuration and the command line all normalise it here.

import { AppError } from "./errors.ts";

/**
 * Normalises an e-mail address or throws 400 INVALID_EMAIL. The domain is lower-cased and turned
 * into its ASCII (punycode) form; the local part is lower-cased too, because every mainstream
 * provider treats it case-insensitively and one person should get one key pair. Quoted local
 * parts and IP-literal domains are refused.
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
  if (/[\s\p{Cc}\p{Cf}<>()[\]\\,;:"]/u.test(local)) throw invalid("the part before @ has a forbidden character");
  if (local.startsWith(".") || local.endsWith(".") || local.includes("..")) throw invalid("misplaced dot before @");
  let domain: string;
  try {
    domain = new URL(`http://${domainText}`).hostname;
  } catch {
    throw invalid("the domain is not valid");
  }
  const labels = domain.split(".");
  if (
    (domain !== domainText.toLowerCase() && !domain.includes("xn--")) ||
    labels.length < 2 ||
    labels.some((l) => !/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(l)) ||
    /^\d+$/.test(labels.at(-1)!)
  ) {
    throw invalid("the domain is not valid");
  }
  return `${local.toLowerCase()}@${domain}`;
}

/** True when a normalised address matches the allowlist (`*`, exact addresses, `@domain` entries). */
export function isAllowed(email: string, allowlist: readonly string[]): boolean {
  const domain = email.slice(email.lastIndexOf("@"));
  return allowlist.some((entry) => entry === "*" || entry === email || entry === domain);
}
