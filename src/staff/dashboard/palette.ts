/**
 * One colour per identity (error code, format, quality), the same on every page and at every
 * range: a colour follows the name, never its rank in the data, so INVALID_IMAGE does not turn
 * from pink to blue when another code overtakes it. Colours are CSS classes (s0…s9 in
 * dashboard.css, light and dark, each at least 3:1 against the page and the panels); "other" is
 * always the neutral grey no identity gets. Every colour stands beside its name in a legend,
 * label or tooltip: never colour alone.
 */

/** How many distinct colours the stylesheet defines (s0 … s9). */
export const TONE_COUNT = 10;

/** The class of the "other" series: neutral grey, never given to an identity. */
export const OTHER_TONE = "s-other";

/** Name of the series that sums what the top N leave out. */
export const OTHER = "other";

/** How many codes a chart draws on their own before summing the rest as "other". */
export const TOP_SHOWN = 6;

// Codes likely to appear together (conversion failures; signed-request refusals) get distinct
// colours; every code the API answers with is listed (src/core/errors.ts, docs/api.md).
const KNOWN: Readonly<Record<string, number>> = {
  // Formats, qualities and their pairs (the split charts).
  webp: 0,
  avif: 2,
  lossy: 1,
  lossless: 4,
  "webp lossy": 0,
  "webp lossless": 7,
  "avif lossy": 2,
  "avif lossless": 6,
  // Conversion outcomes.
  INVALID_IMAGE: 3,
  UNSUPPORTED_FORMAT: 2,
  IMAGE_TOO_LARGE: 4,
  FILE_TOO_LARGE: 0,
  CONVERSION_FAILED: 8,
  CONVERSION_TIMEOUT: 7,
  SERVER_BUSY: 5,
  TOO_MANY_IN_PROGRESS: 9,
  MISSING_IMAGE: 1,
  INVALID_MULTIPART: 6,
  INVALID_PARAMETER: 9,
  VALIDATION_ERROR: 1,
  UNSUPPORTED_MEDIA_TYPE: 7,
  PAYLOAD_TOO_LARGE: 6,
  INCOMPLETE_BODY: 1,
  CLIENT_CLOSED_REQUEST: 4,
  REQUEST_TIMEOUT: 8,
  HEADERS_TOO_LARGE: 3,
  STORAGE_UNAVAILABLE: 9,
  INTERNAL_ERROR: 8,
  NOT_READY: 5,
  // Refusals before a conversion (authentication, limits).
  INVALID_API_KEY: 0,
  INVALID_SIGNATURE: 1,
  REPLAYED_REQUEST: 2,
  TIMESTAMP_OUT_OF_RANGE: 4,
  RATE_LIMITED: 6,
  HTTPS_REQUIRED: 7,
  SCHEME_DISABLED: 8,
  UNAUTHORIZED: 3,
  INVALID_HOST: 5,
  NOT_FOUND: 9,
  METHOD_NOT_ALLOWED: 9,
  // Key issuance.
  INVALID_EMAIL: 0,
  EMAIL_NOT_ALLOWED: 2,
  INVALID_OTP: 3,
  TOO_MANY_ATTEMPTS: 4,
  MAIL_DELIVERY_FAILED: 8,
  INVALID_METRICS_TOKEN: 7,
};

/** The colour class of an identity: its fixed tone, or for a name not listed a hash of it. */
export function toneOf(name: string): string {
  if (name === OTHER) return OTHER_TONE;
  return `s${Object.hasOwn(KNOWN, name) ? KNOWN[name] : hashName(name) % TONE_COUNT}`;
}

// Series that name no identity (In / Out / Saved, p50 / p95) take the first colours by place.
const PLACE_TONES = 6;

/** A series' colour class: its identity's when it has one (the same on every page), else by its place `k`. */
export function toneFor(tone: string | undefined, k: number): string {
  return tone ?? `s${k % PLACE_TONES}`;
}

/** A chart series named after an identity. */
export interface ToneSeries {
  name: string;
  values: number[];
  tone: string;
  /** The identity a plain-words `name` stands for. */
  code?: string;
}

/**
 * The `ranked` names' series (busiest first) cut to the first TOP_SHOWN, plus "other" with what
 * they leave out of `totals` when there are more; each in its identity's colour.
 */
export function topWithOther(
  ranked: readonly string[],
  valuesOf: (name: string) => number[],
  totals: readonly number[],
  { label }: { label?: (name: string) => string } = {},
): ToneSeries[] {
  // The colour follows the identity; a `label` only changes the words shown for it.
  const shown = ranked.slice(0, TOP_SHOWN).map((name) => ({
    name: label ? label(name) : name,
    values: valuesOf(name),
    tone: toneOf(name),
    ...(label ? { code: name } : {}),
  }));
  if (ranked.length <= TOP_SHOWN) return shown;
  const rest = totals.map((total, i) => total - shown.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  return [...shown, { name: OTHER, values: rest, tone: OTHER_TONE }];
}

// FNV-1a: stable across runs and runtimes, so an unknown code keeps its colour from page to page.
function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}
