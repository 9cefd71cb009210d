/**
 * How the dashboard writes numbers: tabular figures with units. Byte sizes come from the one
 * formatter the CLI uses too (binary units, KiB/MiB), so both say the same of the same number.
 */

// Made on a page's first use, not at import: the first Intl object loads ICU's locale data, ~3 ms
// of every start-up (bench/README.md, "Start-up") that a server whose dashboard nobody opens needn't pay.
let formats: Intl.NumberFormat[] | undefined;

/** `n` with exactly `decimals` decimals and thousands separators (en-US). */
function fixed(n: number, decimals: 0 | 1 | 2): string {
  formats ??= [0, 1, 2].map(
    (d) => new Intl.NumberFormat("en-US", { minimumFractionDigits: d, maximumFractionDigits: d }),
  );
  return formats[decimals]!.format(n);
}

/** A whole count with thousands separators: 12,345. */
export function count(n: number): string {
  return fixed(n, 0);
}

/** A byte size, written as everywhere else in imgpress (src/core/bytes.ts): 950 B, 12.3 KiB, 4.1 MiB. */
export { formatBytes as bytes } from "../../core/bytes.ts";

/** A percentage with one decimal; an en dash when there is nothing to divide. */
export function percent(n: number | null): string {
  return n === null ? "–" : `${fixed(n, 1)} %`;
}

/** A ratio with two decimals (0.73, 2.90); an en dash when there is nothing to divide. */
export function ratio(n: number | null): string {
  return n === null ? "–" : fixed(n, 2);
}

/** Milliseconds, whole from 10 ms up; seconds from 10 s up; an en dash for no value. */
export function ms(n: number | null): string {
  if (n === null) return "–";
  if (n === 0) return "0 ms";
  if (n >= 10_000) return `${fixed(n / 1000, 1)} s`;
  return n >= 10 ? `${fixed(n, 0)} ms` : `${fixed(n, 1)} ms`;
}

/** An uptime such as "3 d 4 h", "2 h 5 min" or "42 s". */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${m} min`;
  if (m > 0) return `${m} min ${s % 60} s`;
  return `${s} s`;
}

/** An ISO 8601 UTC timestamp (the `datetime` of a `<time>` and its fallback text). */
export function iso(msSinceEpoch: number): string {
  return new Date(msSinceEpoch).toISOString();
}

/** UTC text shown until the browser script rewrites it in local time: "2026-11-23 01:34 UTC". */
export function utcText(msSinceEpoch: number, withTime = true): string {
  const s = iso(msSinceEpoch);
  return withTime ? `${s.slice(0, 10)} ${s.slice(11, 16)} UTC` : s.slice(0, 10);
}

/** The UTC date alone: "2026-11-23". */
export function utcDate(msSinceEpoch: number): string {
  return iso(msSinceEpoch).slice(0, 10);
}

// What each audit event is called on the pages; the raw type stays beside it for log searches.
const EVENT_LABELS: Record<string, string> = {
  "staff.sign_in": "Staff signed in",
  "staff.sign_in_failed": "Wrong sign-in code",
  "staff.sign_out": "Staff signed out",
  "staff.sign_out_everywhere": "Signed out everywhere",
  "staff.added": "Staff member added",
  "staff.removed": "Staff member removed",
  "key.issued": "Key issued",
  "key.revoked": "Key revoked",
  "settings.secrets_read": "Secrets shown on the command line",
  "settings.test_mail": "Test e-mail sent",
  "audit.pruned": "Old events deleted",
};

/** An audit event type in plain words ("Key issued" for key.issued); an unknown type as it is. */
export function eventLabel(type: string): string {
  return EVENT_LABELS[type] ?? type;
}

/** What the "Extra encodes to keep quality" figure counts (the quality guard of docs/api.md). */
export const GUARD_HELP =
  "Quality guard: when a lossy image would lose visible detail, imgpress encodes it again at a higher quality. This counts those extra encodes.";

// What each answer code means, in a few words; the code itself stays beside it for log searches.
const CODE_LABELS: Record<string, string> = {
  INVALID_IMAGE: "Not a readable image",
  UNSUPPORTED_FORMAT: "Not a JPEG or PNG",
  IMAGE_TOO_LARGE: "Too many pixels",
  FILE_TOO_LARGE: "File too large",
  CONVERSION_FAILED: "Conversion failed",
  CONVERSION_TIMEOUT: "Conversion too slow",
  SERVER_BUSY: "Server busy",
  TOO_MANY_IN_PROGRESS: "Too many at once",
  MISSING_IMAGE: "No image sent",
  INVALID_MULTIPART: "Malformed upload",
  INVALID_PARAMETER: "Bad option",
  VALIDATION_ERROR: "Malformed request",
  UNSUPPORTED_MEDIA_TYPE: "Wrong content type",
  PAYLOAD_TOO_LARGE: "Upload too large",
  INCOMPLETE_BODY: "Upload cut short",
  CLIENT_CLOSED_REQUEST: "Client hung up",
  REQUEST_TIMEOUT: "Upload too slow",
  HEADERS_TOO_LARGE: "Headers too large",
  STORAGE_UNAVAILABLE: "Database unavailable",
  INTERNAL_ERROR: "Internal error",
  NOT_READY: "Not ready",
  INVALID_API_KEY: "Unknown or revoked key",
  INVALID_SIGNATURE: "Bad signature",
  REPLAYED_REQUEST: "Replayed request",
  TIMESTAMP_OUT_OF_RANGE: "Clock off",
  RATE_LIMITED: "Rate limited",
  HTTPS_REQUIRED: "Plain HTTP",
  SCHEME_DISABLED: "Auth scheme off",
  UNAUTHORIZED: "No or malformed credentials",
  INVALID_HOST: "Bad Host header",
  INVALID_EMAIL: "Bad e-mail address",
  EMAIL_NOT_ALLOWED: "Address not allowed",
  INVALID_OTP: "Wrong code",
  TOO_MANY_ATTEMPTS: "Too many wrong codes",
  MAIL_DELIVERY_FAILED: "Mail not delivered",
  INVALID_METRICS_TOKEN: "Bad metrics token",
};

/** An answer code in plain words ("Bad signature" for INVALID_SIGNATURE); an unknown code as it is. */
export function codeLabel(code: string): string {
  return CODE_LABELS[code] ?? code;
}
