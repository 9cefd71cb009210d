/**
 * Bar widths that keep a chart readable at every range: at most about 60 bars, so a week of hours
 * is drawn in 3-hour bars and a year of days in weeks. Regrouping is done in memory on the
 * points the page already read (one query per chart, never one per bar).
 */
import { DAY_MS, HOUR_MS, stepMs } from "../../core/durations.ts";
import type { Series, SeriesPoint } from "../../data/usage/model.ts";
import { utcDate, utcText } from "./format.ts";

/** The most bars a time chart draws. */
export const MAX_BARS = 60;

const WEEK_MS = 7 * DAY_MS;
// 1970-01-01 was a Thursday: weeks counted from Monday 1970-01-05, 00:00 UTC.
const MONDAY_MS = 4 * DAY_MS;
const WIDTHS = [HOUR_MS, 3 * HOUR_MS, 6 * HOUR_MS, 12 * HOUR_MS, DAY_MS, WEEK_MS];

/** A bar width: its length and the instant its bars are counted from. */
export interface BarStep {
  ms: number;
  origin: number;
}

/** The narrowest width, no narrower than the data's own step, that draws `span` in at most MAX_BARS bars. */
export function barStep(dataStepMs: number, spanMs: number): BarStep {
  const ms = WIDTHS.find((w) => w >= dataStepMs && spanMs / w <= MAX_BARS) ?? WEEK_MS;
  return { ms, origin: ms === WEEK_MS ? MONDAY_MS : 0 };
}

/** A bar width in words for axes and tooltips: "hour", "3 hours", "day", "week (from Monday)". */
export function stepWords(ms: number): string {
  if (ms === WEEK_MS) return "week (from Monday)";
  if (ms === DAY_MS) return "day";
  return ms === HOUR_MS ? "hour" : `${ms / HOUR_MS} hours`;
}

/** The start of the bar that holds instant `t`. */
export function barStart(t: number, step: BarStep): number {
  return Math.floor((t - step.origin) / step.ms) * step.ms + step.origin;
}

/**
 * Points grouped into bars of `step` (each point with a `t` goes to the bar that holds it),
 * merged by `merge`; each bar's time is its start, which may lie before the first point.
 */
export function regroup<P extends { t: number }>(
  points: readonly P[],
  step: BarStep,
  merge: (group: readonly P[], t: number) => P,
): P[] {
  const groups = new Map<number, P[]>();
  for (const p of points) {
    const start = barStart(p.t, step);
    const group = groups.get(start);
    if (group) group.push(p);
    else groups.set(start, [p]);
  }
  return [...groups].map(([t, group]) => merge(group, t));
}

/** Sums of each code over a group of `{code: count}` maps. */
export function sumByCode(maps: readonly Record<string, number>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of maps) for (const [code, n] of Object.entries(m)) out[code] = (out[code] ?? 0) + n;
  return out;
}

/** What a bar's tooltip calls its time, and whether the bar holds only part of its step. */
export function stepTitle(
  t: number,
  ms: number,
  range?: { from: number; to: number },
): { text: string; partial: boolean } {
  const when =
    ms >= WEEK_MS
      ? `week from ${utcDate(t)} (UTC)`
      : ms >= DAY_MS
        ? `${utcDate(t)} (UTC day)`
        : `${utcText(t)}${ms > HOUR_MS ? ` + ${stepWords(ms)}` : ""}`;
  // range.to ends the step that holds "now": the bar reaching it is still being counted.
  if (range && t + ms >= range.to) return { text: `${when}, so far`, partial: true };
  if (range && t < range.from) return { text: `${when}, only from ${utcText(range.from)}`, partial: true };
  return { text: when, partial: false };
}

/** A usage series regrouped into at most about MAX_BARS bars (see barStep), and the bars' width. */
export function coarseSeries(series: Series): { points: SeriesPoint[]; stepMs: number } {
  const step = barStep(stepMs(series.step), series.to - series.from);
  if (step.ms === stepMs(series.step)) return { points: series.points, stepMs: step.ms };
  return { points: regroup(series.points, step, mergePoints), stepMs: step.ms };
}

// Sums add up; percentiles cannot be merged exactly: the p50 is the steps' p50 weighted by their
// conversions, the p95 the highest of theirs (an upper bound, so a slow hour stays visible).
function mergePoints(group: readonly SeriesPoint[], t: number): SeriesPoint {
  const sum = (pick: (p: SeriesPoint) => number) => group.reduce((s, p) => s + pick(p), 0);
  const timed = group.filter((p) => p.p50Ms !== null && p.conversions > 0);
  const weight = timed.reduce((s, p) => s + p.conversions, 0);
  const p95s = group.flatMap((p) => (p.p95Ms === null ? [] : [p.p95Ms]));
  return {
    t,
    conversions: sum((p) => p.conversions),
    bytesIn: sum((p) => p.bytesIn),
    bytesOut: sum((p) => p.bytesOut),
    bytesSaved: sum((p) => p.bytesSaved),
    guardEncodes: sum((p) => p.guardEncodes),
    errors: sum((p) => p.errors),
    errorsByCode: sumByCode(group.map((p) => p.errorsByCode)),
    p50Ms: weight > 0 ? timed.reduce((s, p) => s + p.p50Ms! * p.conversions, 0) / weight : null,
    p95Ms: p95s.length > 0 ? Math.max(...p95s) : null,
  };
}
