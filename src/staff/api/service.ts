import { memoryUsage } from "node:process";
import type { ConversionGate } from "../../conversion/gate.ts";
import { DAY_MS } from "../../core/durations.ts";
import { emailForLookup } from "../../core/email.ts";
import { AppError } from "../../core/errors.ts";
import type { RequestCounter } from "../../core/http/counter.ts";
import { version } from "../../core/version.ts";
import { AUDIT_TYPES, type AuditFilter, parseDuration, parseIsoDate } from "../../data/audit/service.ts";

const startedAt = Date.now();

/** The live state of /internal/api/live and of the dashboard's live panel. */
export function liveState(gate: ConversionGate, requests: RequestCounter) {
  return {
    version,
    uptime_s: Math.round((Date.now() - startedAt) / 1000),
    conversions: gate.stats(),
    memory: memoryUsage(),
    requests_per_second: { last_10s: requests.perSecond(10), last_60s: requests.perSecond(60) },
  };
}

/** Turns the audit query of the API into a filter; a malformed value is a 400 naming it. */
export function auditFilter(
  query: { type?: string; staff?: string; since?: string; until?: string; before?: number; limit?: number },
  now: number,
): AuditFilter {
  if (query.type !== undefined && !(AUDIT_TYPES as readonly string[]).includes(query.type)) {
    throw new AppError(400, "VALIDATION_ERROR", `type: one of ${AUDIT_TYPES.join(", ")}.`);
  }
  return {
    type: query.type,
    actor: query.staff === undefined ? undefined : emailForLookup(query.staff),
    since: query.since === undefined ? undefined : instant("since", query.since, now),
    until: query.until === undefined ? undefined : instant("until", query.until, now),
    before: query.before,
    limit: query.limit ?? 100,
  };
}

/** Throws 404 `code` unless `found`. */
export function notFoundUnless(found: boolean, code: string, message: string): asserts found {
  if (!found) throw new AppError(404, code, message);
}

/** The range of a usage query: `from`/`to` as ISO dates, Unix ms or (for `from`) a duration; default the last 7 days. */
export function usageRange(query: { from?: string; to?: string }, now: number): { from: number; to: number } {
  // `to` is exclusive: by default it lies just past now, so this very moment counts.
  const to = query.to === undefined ? now + 1 : instant("to", query.to, now);
  const from = query.from === undefined ? to - 7 * DAY_MS : instant("from", query.from, now);
  return { from, to };
}

// A duration counts back from now (24h); anything else must be an ISO date.
function instant(field: string, text: string, now: number): number {
  const back = parseDuration(text);
  if (back !== null) return now - back;
  if (/^\d{10,}$/.test(text)) return Number(text);
  const at = parseIsoDate(text);
  if (Number.isNaN(at))
    throw new AppError(
      400,
      "VALIDATION_ERROR",
      `${field}: an ISO date (2030-01-31T00:00:00Z) or a duration such as 24h or 7d.`,
    );
  return at;
}
