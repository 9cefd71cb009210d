/**
 * Charts readable at every range: at most about 60 bars (a week in 3-hour bars, a year in weeks),
 * the step said on the chart and in each tooltip, the running step drawn as partial ("so far"),
 * every time in UTC, each step reachable by keyboard and by tap.
 */
import { describe, expect, test } from "bun:test";
import { html } from "../../../src/core/html.ts";
import type { Overview, Series } from "../../../src/data/usage/model.ts";
import { overviewPage } from "../../../src/staff/dashboard/pages/overview.ts";
import type { RangeName } from "../../../src/staff/dashboard/ranges.ts";
import { barStep, coarseSeries, MAX_BARS } from "../../../src/staff/dashboard/steps.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
// The hour still running ends at 2030-03-10 14:00 UTC: ranges start at 13:00 or 14:00, not on a 3-hour line.
const TO = Date.UTC(2030, 2, 10, 14);
const viewer = { email: "staff@x.io", csrfToken: "tok" };
const live = { src: "/l", sparkSrc: "/s", spark: html``, everyS: 5, pauseS: 60, fields: [] };

/** A range of `steps` steps ending at TO, one conversion (and one INVALID_IMAGE) in each. */
function series(step: "hour" | "day", steps: number): Series {
  const ms = step === "hour" ? HOUR : DAY;
  const to = step === "hour" ? TO : Date.UTC(2030, 2, 11);
  const zero = { bytesIn: 10, bytesOut: 4, bytesSaved: 6, guardEncodes: 0 };
  const points = Array.from({ length: steps }, (_, i) => ({
    t: to - (steps - i) * ms,
    conversions: 1,
    ...zero,
    errors: 1,
    errorsByCode: { INVALID_IMAGE: 1 },
    p50Ms: 10 + i,
    p95Ms: 20 + i,
  }));
  return { step, from: to - steps * ms, to, points };
}

function page(range: RangeName, s: Series): string {
  const zero = { bytesIn: 0, bytesOut: 0, bytesSaved: 0, guardEncodes: 0 };
  const overview: Overview = {
    from: s.from,
    to: s.to,
    totals: { conversions: s.points.length, ...zero, errors: 1, savingsPercent: null, p50Ms: 1, p95Ms: 2 },
    byFormat: [],
    byQuality: [],
    byFormatQuality: [],
    errorsByCode: [{ code: "INVALID_IMAGE", count: s.points.length }],
  };
  const refused = { codes: { total: 0, byCode: [] }, points: [], stepMs: HOUR, from: s.from, to: s.to };
  return overviewPage({ viewer, range, overview, series: s, refused, live }).text;
}

/** The steps of the chart `id`: each one's tooltip and whether it is drawn as partial. */
function steps(text: string, id: string): { title: string; partial: boolean; focusable: boolean }[] {
  const figure = text.slice(text.indexOf(`id="${id}"`), text.indexOf("</figure>", text.indexOf(`id="${id}"`)));
  return [...figure.matchAll(/<g class="step( partial)?"( tabindex="0")?><title>([^<]*)<\/title>/g)].map((m) => ({
    title: m[3]!,
    partial: m[1] !== undefined,
    focusable: m[2] !== undefined,
  }));
}

describe("bars per range", () => {
  test.each([
    ["hour", 24 * HOUR, HOUR],
    ["hour", 7 * DAY, 3 * HOUR],
    ["day", 30 * DAY, DAY],
    ["day", 365 * DAY, 7 * DAY],
  ] as const)("%s data over %d ms: bars of %d ms", (step, span, width) => {
    const bar = barStep(step === "hour" ? HOUR : DAY, span);
    expect(bar.ms).toBe(width);
    expect(Math.ceil(span / bar.ms)).toBeLessThanOrEqual(MAX_BARS + 1);
  });

  test("a week of hours is drawn in 3-hour bars holding every conversion, each tooltip naming its step", () => {
    const s = series("hour", 7 * 24);
    const bars = steps(page("7d", s), "overview-conversions");
    expect(bars.length).toBeGreaterThan(50);
    expect(bars.length).toBeLessThanOrEqual(MAX_BARS + 1);
    expect(bars[1]!.title).toMatch(/^2030-03-03 \d\d:00 UTC \+ 3 hours — Conversions: 3$/);
    const coarse = coarseSeries(s);
    expect(coarse.points.reduce((n, p) => n + p.conversions, 0)).toBe(7 * 24);
    expect(coarse.points.reduce((n, p) => n + (p.errorsByCode.INVALID_IMAGE ?? 0), 0)).toBe(7 * 24);
    // p95 of a bar is the highest of its hours; p50 their mean weighted by conversions.
    expect(coarse.points[1]!.p95Ms).toBe(
      Math.max(...s.points.filter((p) => p.t >= coarse.points[1]!.t && p.t < coarse.points[2]!.t).map((p) => p.p95Ms!)),
    );
  });

  test("a year of days is drawn in weeks from Monday", () => {
    const bars = steps(page("365d", series("day", 365)), "overview-errors");
    expect(bars.length).toBeLessThanOrEqual(MAX_BARS);
    expect(bars[1]!.title).toMatch(/^week from 2029-03-\d\d \(UTC\) — Not a readable image: 7$/);
    const monday = /week from (\d{4}-\d\d-\d\d)/.exec(bars[1]!.title)![1]!;
    expect(new Date(`${monday}T00:00:00Z`).getUTCDay()).toBe(1);
    expect(page("365d", series("day", 365))).toContain("Each step: week (from Monday), UTC");
  });
});

describe("partial steps", () => {
  test("the running bar is faded and says so far; one cut by the range's start says from when; the rest are whole", () => {
    for (const [range, s] of [
      ["24h", series("hour", 24)],
      ["7d", series("hour", 7 * 24)],
      ["365d", series("day", 365)],
    ] as const) {
      const text = page(range, s);
      const bars = steps(text, "overview-conversions");
      // Lines reach the running step with a dashed segment, not a solid fall.
      const latency = text.slice(text.indexOf('id="overview-latency"'));
      expect(latency.slice(0, latency.indexOf("</figure>"))).toMatch(
        /<path class="line partial s\d" d="M[\d. ]+L[\d. ]+/,
      );
      expect(bars.at(-1)).toMatchObject({ partial: true });
      expect(bars.at(-1)!.title).toContain("so far");
      const middle = bars.slice(1, -1);
      expect(middle.every((b) => !b.partial && !b.title.includes("so far"))).toBe(true);
      // 7 d starts at 14:00 (a 3-hour bar from 12:00) and 365 d mid-week: their first bar is cut.
      if (range !== "24h") expect(bars[0]).toMatchObject({ partial: true });
      if (range !== "24h") expect(bars[0]!.title).toContain("only from");
    }
  });
});

describe("one time zone, keyboard and tap", () => {
  test("tooltips, tables and axes are UTC and say so", () => {
    const text = page("24h", series("hour", 24));
    const bars = steps(text, "overview-conversions");
    expect(bars.every((b) => / UTC\b/.test(b.title))).toBe(true);
    expect(text).toContain('<span class="chart-step">Each step: hour, UTC');
    expect(text).toContain("Hour (UTC)");
    expect(text).toContain("Each step: hour, UTC; the last one so far");
  });

  test("every step of bars and lines takes focus and carries its tooltip as text too", () => {
    const text = page("7d", series("hour", 7 * 24));
    for (const id of ["overview-conversions", "overview-errors", "overview-latency"]) {
      const all = steps(text, id);
      expect(all.length).toBeGreaterThan(0);
      expect(all.every((b) => b.focusable)).toBe(true);
    }
    expect(text).toMatch(/<text class="tip"[^>]*>[^<]*Conversions: 3<\/text>/);
  });
});
