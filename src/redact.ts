// Credentials out of URLs before they are shown anywhere (settings page, messages, logs).

/** URL query parameters that carry credentials (libSQL's authToken, …). */
const SECRET_PARAM = /token|secret|password|passwd|pass|key|auth|sig/i;

/**
 * A URL without its password and credential-bearing query parameters. An address URL cannot parse
 * (e.g. a `#` in the password) keeps nothing between `://` and `@`; anything else is unchanged.
 */
export function redactUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, "$1******@");
  }
  if (url.password) url.password = "******";
  for (const name of [...url.searchParams.keys()]) if (SECRET_PARAM.test(name)) url.searchParams.set(name, "******");
  // URL escapes the asterisks it wrote; show them as typed.
  return url.toString().replaceAll("%2A", "*");
}

// API and secret keys (API_KEY_PREFIX, SECRET_KEY_PREFIX in src/keys/service.ts) followed by their random part.
const KEY_IN_PATH = /(imps?_)[A-Za-z0-9_-]{6,}/g;

/** A URL path fit for a log line: a key a client put in the path (by mistake) is masked, as the query string is left out. */
export function redactPath(path: string): string {
  return path.replace(KEY_IN_PATH, "$1******");
}
