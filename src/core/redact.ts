// Credentials out of URLs before they are shown anywhere (settings page, messages, logs).

/** URL query parameters that carry credentials (libSQL's authToken, …). */
const SECRET_PARAM = /token|secret|password|passwd|pass|key|auth|sig/i;

/**
 * Whether `raw` has an `@` only after its authority ends (at the first `/`, `?` or `#`): a password
 * holding one of those unencoded (`postgres://app:2024#Summer@db/x`), which the URL parser reads as
 * host `app`, port 2024 and no password at all.
 */
export function credentialsPastAuthority(raw: string): boolean {
  const rest = /^[a-z][a-z0-9+.-]*:\/\/(.*)$/is.exec(raw)?.[1];
  if (rest === undefined) return false;
  const end = rest.search(/[/?#]/);
  return end >= 0 && !rest.slice(0, end).includes("@") && rest.slice(end).includes("@");
}

/**
 * Whether the URL `raw` carries a credential: a password that is not empty, or a credential-like
 * query parameter (PostgreSQL's `sslkey`, `sslcert`… name files, not secrets).
 */
export function hasCredentials(raw: string): boolean {
  const text = raw.trim();
  if (credentialsPastAuthority(text)) return true;
  const url = URL.parse(text);
  if (!url) return /^[a-z][a-z0-9+.-]*:\/\/[^/@]*:[^/@]+@/i.test(text);
  return (
    url.password !== "" || [...url.searchParams.keys()].some((name) => SECRET_PARAM.test(name) && !/^ssl/i.test(name))
  );
}

/**
 * A URL without its password and credential-bearing query parameters. An address URL that cannot
 * parse, or whose password spills past its authority, keeps nothing between `://` and its last `@`.
 */
export function redactUrl(raw: string): string {
  let url: URL;
  try {
    if (credentialsPastAuthority(raw)) throw new Error("password past the authority");
    url = new URL(raw);
  } catch {
    return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/).*@/is, "$1******@");
  }
  if (url.password) url.password = "******";
  for (const name of [...url.searchParams.keys()]) if (SECRET_PARAM.test(name)) url.searchParams.set(name, "******");
  // URL escapes the asterisks it wrote; show them as typed.
  return url.toString().replaceAll("%2A", "*");
}

// API and secret keys (API_KEY_PREFIX, SECRET_KEY_PREFIX in src/data/keys/service.ts) followed by their random part.
const KEY_IN_PATH = /(imps?_)[A-Za-z0-9_-]{6,}/g;

/**
 * A URL path fit for a log line: a key a client put in the path (by mistake) is masked, as the
 * query string is left out. Its ASCII escapes are decoded first (up to three times, as the
 * /internal/ guard reads paths), each on its own, so `%69mps_…`, `imps%5F…` or `%2569mps_…` is
 * masked too whatever else the path holds; the line shows the path so decoded.
 */
export function redactPath(path: string): string {
  let shown = path;
  for (let round = 0; round < 3; round++) {
    const decoded = shown.replace(/%([0-7][0-9a-f])/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (decoded === shown) break;
    shown = decoded;
  }
  return shown.replace(KEY_IN_PATH, "$1******");
}

/** `text` with every password of `urls` (as typed and decoded) replaced, wherever a driver's or a server's message may have quoted it. */
export function scrub(text: string, urls: string[]): string {
  // Longest first: a shorter form may sit inside a longer one (the password's base64 at the end of AUTH PLAIN's).
  const secrets = urls
    .flatMap(passwords)
    .filter((p) => p.length > 0)
    .sort((a, b) => b.length - a.length);
  let out = text;
  for (const url of urls) out = out.replaceAll(url, url.startsWith("file:") ? url : redactUrl(url));
  for (const secret of secrets) out = out.replaceAll(secret, "******");
  return out;
}

// The password as typed and decoded, and as an SMTP login sends it (base64: AUTH LOGIN alone,
// AUTH PLAIN with the user), which a server may quote back in its refusal.
function passwords(url: string): string[] {
  let user = "";
  let typed: string | undefined;
  try {
    ({ username: user, password: typed } = new URL(url));
  } catch {
    const parts = /^[a-z][a-z0-9+.-]*:\/\/([^/@:]*):([^/@]*)@/i.exec(url);
    [user, typed] = [parts?.[1] ?? "", parts?.[2]];
  }
  if (!typed) return [];
  const password = safeDecode(typed);
  const base64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));
  return [typed, password, base64(password), base64(`\0${safeDecode(user)}\0${password}`)];
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
