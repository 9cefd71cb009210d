import { DAY_MS, HOUR_MS, stepMs } from "../../core/durations.ts";

/** The ranges the overview and key pages offer, each with the step its charts use. */
export const RANGES = {
  "24h": { label: "24 h", ms: 24 * HOUR_MS, step: "hour" },
  "7d": { label: "7 d", ms: 7 * DAY_MS, step: "hour" },
  "30d": { label: "30 d", ms: 30 * DAY_MS, step: "day" },
  "365d": { label: "365 d", ms: 365 * DAY_MS, step: "day" },
} as const;

/** One of RANGES' names. */
export type RangeName = keyof typeof RANGES;

/** The range a query asked for, or 24 h for anything else (a page never fails on a bad range). */
export function rangeName(raw: string | undefined): RangeName {
  return raw !== undefined && Object.hasOwn(RANGES, raw) ? (raw as RangeName) : "24h";
}

/**
 * [from, to) of a range ending now, aligned to whole steps so the current hour or day is the last
 * step (days at 00:00 UTC: the usage buckets are UTC hours and the server does not know the
 * browser's zone).
 */
export function rangeBounds(
  name: RangeName,
  now: number,
): { from: number; to: number; step: "hour" | "day"; stepMs: number } {
  const { ms, step } = RANGES[name];
  const width = stepMs(step);
  const to = Math.floor(now / width) * width + width;
  return { from: to - ms, to, step, stepMs: width };
}
