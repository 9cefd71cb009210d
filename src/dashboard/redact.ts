import { settings as settingRows, type Config } from "../config.ts";

/** How a hidden secret is shown: only whether it is set. */
const HIDDEN = "•••••• (set, hidden)";
const NOT_SET = "(not set)";
/** Settings whose whole value is secret, by variable name; also catches rows other features add later. */
const SECRET_NAME = /TOKEN|SECRET|PASSWORD|PASSPHRASE|MASTER_KEY|PEPPER|PRIVATE|API_KEY|CREDENTIAL/i;
/** URL query parameters that carry credentials (libSQL's authToken, …). */
const SECRET_PARAM = /token|secret|password|passwd|pass|key|auth|sig/i;

/**
 * A URL with its password and credential-bearing query parameters replaced, the rest kept
 * (so the operator still sees which host and user the service talks to).
 */
export function redactUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return raw;
  }
  if (url.password) url.password = "******";
  for (const name of [...url.searchParams.keys()]) if (SECRET_PARAM.test(name)) url.searchParams.set(name, "******");
  // URL escapes the asterisks it wrote; the page shows them as typed.
  return url.toString().replaceAll("%2A", "*");
}

/** One setting's value as the settings page shows it: secrets hidden, URLs without credentials. */
export function displayValue(env: string, value: unknown): string {
  if (value === undefined || value === null || value === "") return NOT_SET;
  if (SECRET_NAME.test(env)) return HIDDEN;
  const text = Array.isArray(value) ? value.join(", ") : String(value);
  // file: URLs hold a path only (and URL would rewrite file:x as file:///x).
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(text) && !text.startsWith("file:") ? redactUrl(text) : text;
}

/** Every setting of the settings table with its effective value, redacted. */
export function effectiveSettings(config: Config): { env: string; value: string; help: string }[] {
  return settingRows.map((s) => ({ env: s.env, value: displayValue(s.env, (config as Record<string, unknown>)[s.key]), help: s.help }));
}
