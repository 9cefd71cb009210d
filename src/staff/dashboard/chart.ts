/**
 * Charts as SVG written on the server from numbers only: no script, no library, no inline style
 * (the CSP forbids it; colours come from classes in dashboard.css, so dark mode follows). Each
 * chart is a <figure> with a caption, a legend, an SVG with <title>/<desc> for screen readers and
 * one <title> tooltip per step. Axis times are <text data-t> elements the page script rewrites in
 * the browser's time zone.
 */

import { DAY_MS } from "../../core/durations.ts";
import { html, type SafeHtml } from "../../core/html.ts";
import { breakable } from "./components.ts";
import { count, utcDate, utcText } from "./format.ts";

/** One line or bar series; `values[i]` belongs to `times[i]` (null = no value, the line breaks). */
export interface ChartSeries {
  name: string;
  values: readonly (number | null)[];
  /** Colour class of an identity (palette.ts); without it, the series' place picks one. */
  tone?: string;
}

/** A chart of values over time. */
export interface TimeChart {
  /** Unique in the page: used for the ids aria-labelledby points at. */
  id: string;
  title: string;
  /** Start of each step, Unix ms. */
  times: readonly number[];
  stepMs: number;
  series: readonly ChartSeries[];
  /** How values are written in labels and tooltips (e.g. bytes, ms). */
  format?: (n: number) => string;
  /** Bars stack the series (counts per step); lines suit sizes, ratios and latencies. */
  kind: "bars" | "lines";
}

/** Splits such as conversions by format and by quality: one group of horizontal bars per part. */
export interface SplitChart {
  id: string;
  title: string;
  parts: readonly { title: string; items: readonly { label: string; value: number; tone?: string }[] }[];
  format?: (n: number) => string;
}

const W = 400;
const H = 180;
const PAD = { left: 56, right: 8, top: 10, bottom: 24 };
const TONES = 6;

// A series' colour: its identity's when it has one (the same on every page), else by place.
function toneFor(tone: string | undefined, k: number): string {
  return tone ?? `s${k % TONES}`;
}

/** A time-series chart (see the module comment). */
export function timeChart(chart: TimeChart): SafeHtml {
  const fmt = chart.format ?? count;
  const n = chart.times.length;
  const totals = chart.times.map((_, i) => chart.series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const all = chart.series.flatMap((s) => s.values.filter((v): v is number => v !== null));
  const top = chart.kind === "bars" ? Math.max(0, ...totals) : Math.max(0, ...all);
  const bottom = chart.kind === "bars" ? 0 : Math.min(0, ...all);
  // Counts step by whole numbers: a peak of 1 would otherwise get ticks 0, 0.25, … written "0, 0, 1, 1, 1".
  const ticks = niceTicks(bottom, top, fmt === count ? 1 : 0);
  const lo = ticks[0]!;
  const hi = ticks.at(-1)!;
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const x = (i: number) => PAD.left + (n === 0 ? 0 : (i * plotW) / n);
  const y = (v: number) => PAD.top + plotH - ((v - lo) / (hi - lo)) * plotH;
  const hasData = all.some((v) => v !== 0);

  const grid = ticks.map(
    (v) =>
      html`<line class="grid" x1="${PAD.left}" x2="${W - PAD.right}" y1="${r(y(v))}" y2="${r(y(v))}"/><text class="tick" x="${PAD.left - 6}" y="${r(y(v) + 4)}" text-anchor="end">${tick(fmt(v))}</text>`,
  );
  // Labels name days once the chart spans more than two of them (a week of hours reads by day).
  const span = n > 0 ? chart.times[n - 1]! - chart.times[0]! : 0;
  const byDay = chart.stepMs >= DAY_MS || span > 2 * DAY_MS;
  // Over half a year the labels name months with their year (a year's first label is last year's).
  const unit: AxisUnit = span > 180 * DAY_MS ? "month" : byDay ? "day" : "hour";
  const labels = timeLabels(chart.times, byDay && chart.stepMs < DAY_MS).map(
    (i) =>
      html`<text class="tick" x="${r(x(i) + (byDay && chart.stepMs < DAY_MS ? 0 : plotW / Math.max(n, 1) / 2))}" y="${H - 6}" text-anchor="middle" data-t="${chart.times[i]}" data-f="${unit}">${axisText(chart.times[i]!, unit)}</text>`,
  );
  const body =
    chart.kind === "bars"
      ? bars(chart, x, y, plotW / Math.max(n, 1), fmt)
      : lines(chart, x, y, plotW / Math.max(n, 1), fmt);
  const peak = totals.length ? Math.max(...totals) : 0;
  const desc = hasData
    ? `${chart.series.map((s) => `${s.name}: ${summary(s.values, chart.kind, fmt)}`).join("; ")}. ${n} steps of ${chart.stepMs >= DAY_MS ? "a day" : "an hour"}.`
    : "No data in this range.";

  return html`<figure class="chart" id="${chart.id}">
<figcaption><span class="chart-title">${chart.title}</span>${legend(chart.series)}</figcaption>
<svg viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${chart.id}-t ${chart.id}-d" data-points="${n}" data-nonzero="${all.filter((v) => v !== 0).length}" data-peak="${peak}">
<title id="${chart.id}-t">${chart.title}</title><desc id="${chart.id}-d">${desc}</desc>
${grid}${body}${labels}
<line class="axis" x1="${PAD.left}" x2="${W - PAD.right}" y1="${r(y(Math.max(lo, 0)))}" y2="${r(y(Math.max(lo, 0)))}"/>
</svg>${hasData ? dataTable(chart, fmt) : html`<p class="chart-empty">No data in this range</p>`}
</figure>`;
}

// The chart's numbers for whoever cannot tell its colours apart or point at its bars: steps with
// a value other than 0, in a table behind a disclosure (closed, so the page looks the same). Times
// are plain UTC text, the buckets' own zone: no <time> element per row for the script to rewrite.
function dataTable(chart: TimeChart, fmt: (n: number) => string): SafeHtml {
  const daily = chart.stepMs >= DAY_MS;
  const rows = chart.times.flatMap((t, i) =>
    chart.series.some((s) => (s.values[i] ?? 0) !== 0)
      ? [
          html`<tr><th scope="row">${daily ? utcDate(t) : utcText(t).slice(0, -4)}</th>${chart.series.map((s) => html`<td class="num">${s.values[i] === null || s.values[i] === undefined ? "–" : fmt(s.values[i]!)}</td>`)}</tr>`,
        ]
      : [],
  );
  // Names such as error codes (UNSUPPORTED_FORMAT) wrap at their underscores, so the columns fit the chart's width.
  return html`<details class="chart-data"><summary>${chart.title} as a table</summary><div class="table-wrap compact" tabindex="0" role="region" aria-labelledby="${chart.id}-table">
<table><caption class="sr-only" id="${chart.id}-table">${chart.title}, steps with a value</caption><thead><tr><th scope="col">${daily ? "Day" : "Hour"} (UTC)</th>${chart.series.map((s) => html`<th scope="col" class="num">${breakable(s.name)}</th>`)}</tr></thead><tbody>${rows}</tbody></table></div></details>`;
}

/** One figure with a group of horizontal bars per part, the value and share written at the end. */
export function splitChart(chart: SplitChart): SafeHtml {
  const fmt = chart.format ?? count;
  const parts = chart.parts.map((part, p) => {
    const id = `${chart.id}-${p}`;
    const total = part.items.reduce((s, i) => s + i.value, 0);
    const max = Math.max(0, ...part.items.map((i) => i.value));
    const rowH = 26;
    const labelW = 125;
    const barW = W - labelW - 110;
    const shares = wholePercents(part.items.map((i) => i.value));
    const rows = part.items.map((item, i) => {
      const w = max > 0 ? Math.max(item.value > 0 ? 2 : 0, (item.value / max) * barW) : 0;
      const share = total > 0 ? ` (${shares[i]} %)` : "";
      return html`<g><title>${item.label}: ${fmt(item.value)}${share}</title>
<text class="label" x="0" y="${i * rowH + 17}">${item.label}</text>
<rect class="bar ${toneFor(item.tone, i)}" x="${labelW}" y="${i * rowH + 5}" width="${r(w)}" height="16" rx="3"/>
<text class="value" x="${W}" y="${i * rowH + 17}" text-anchor="end">${fmt(item.value)}${share}</text></g>`;
    });
    const svg =
      part.items.length === 0
        ? html`<p class="chart-empty">Nothing converted in this range</p>`
        : html`<svg viewBox="0 0 ${W} ${part.items.length * rowH + 4}" role="img" aria-labelledby="${id}-t ${id}-d" data-points="${part.items.length}" data-nonzero="${part.items.filter((i) => i.value !== 0).length}">
<title id="${id}-t">${part.title}</title><desc id="${id}-d">${part.items.map((i) => `${i.label}: ${fmt(i.value)}`).join("; ")}</desc>${rows}</svg>`;
    return html`<div class="split-part"><p class="split-title">${part.title}</p>${svg}</div>`;
  });
  return html`<figure class="chart split" id="${chart.id}"><figcaption><span class="chart-title">${chart.title}</span></figcaption>${parts}</figure>`;
}

function bars(
  chart: TimeChart,
  x: (i: number) => number,
  y: (v: number) => number,
  stepW: number,
  fmt: (n: number) => string,
): SafeHtml[] {
  const gap = stepW > 4 ? Math.min(2, stepW * 0.2) : 0;
  if (chart.times.length > 62) return barPaths(chart, x, y, stepW, gap);
  const out: SafeHtml[] = [];
  chart.times.forEach((t, i) => {
    let base = 0;
    const parts: SafeHtml[] = [];
    chart.series.forEach((s, k) => {
      const v = s.values[i] ?? 0;
      if (v <= 0) return;
      parts.push(
        html`<rect class="bar ${toneFor(s.tone, k)}" x="${r(x(i) + gap / 2)}" y="${r(y(base + v))}" width="${r(Math.max(stepW - gap, 0.5))}" height="${r(y(base) - y(base + v))}"/>`,
      );
      base += v;
    });
    if (parts.length === 0) return;
    const tip = chart.series
      .filter((s) => (s.values[i] ?? 0) > 0)
      .map((s) => `${s.name}: ${fmt(s.values[i]!)}`)
      .join(", ");
    out.push(html`<g><title>${utcText(t, chart.stepMs < DAY_MS)} — ${tip}</title>${parts}</g>`);
  });
  return out;
}

// Long series: one path per series (a year of steps as separate elements with tooltips weighed
// hundreds of kilobytes); the figure's description still gives totals and peaks.
function barPaths(
  chart: TimeChart,
  x: (i: number) => number,
  y: (v: number) => number,
  stepW: number,
  gap: number,
): SafeHtml[] {
  const base = chart.times.map(() => 0);
  const w = r(Math.max(stepW - gap, 0.5));
  return chart.series.map((s, k) => {
    let d = "";
    s.values.forEach((raw, i) => {
      const v = raw ?? 0;
      if (v <= 0) return;
      const top = r(y(base[i]! + v));
      d += `M${r(x(i) + gap / 2)} ${top}h${w}V${r(y(base[i]!))}h-${w}Z`;
      base[i]! += v;
    });
    return html`<path class="bar ${toneFor(s.tone, k)}" d="${d}"/>`;
  });
}

function lines(
  chart: TimeChart,
  x: (i: number) => number,
  y: (v: number) => number,
  stepW: number,
  fmt: (n: number) => string,
): SafeHtml[] {
  return chart.series.map((s, k) => {
    let d = "";
    let pen = false;
    const dots: SafeHtml[] = [];
    s.values.forEach((v, i) => {
      if (v === null) {
        pen = false;
        return;
      }
      const cx = x(i) + stepW / 2;
      d += `${pen ? "L" : "M"}${r(cx)} ${r(y(v))}`;
      pen = true;
      // Dots carry the tooltips up to two months of steps; past that they would be thousands of
      // elements (half a megabyte for a year) and too dense to point at. A lone point (neighbours
      // null) always gets one, or it would not show at all.
      const lone = (s.values[i - 1] ?? null) === null && (s.values[i + 1] ?? null) === null;
      if (chart.times.length > 62 && !lone) return;
      dots.push(
        html`<circle class="dot ${toneFor(s.tone, k)}" cx="${r(cx)}" cy="${r(y(v))}" r="${chart.times.length > 60 ? 1.5 : 2.5}"><title>${utcText(chart.times[i]!, chart.stepMs < DAY_MS)} — ${s.name}: ${fmt(v)}</title></circle>`,
      );
    });
    return html`<path class="line ${toneFor(s.tone, k)}" d="${d}"/>${dots}`;
  });
}

function legend(series: readonly ChartSeries[]): SafeHtml | null {
  if (series.length < 2 && series[0]?.tone === undefined) return null;
  return html`<span class="legend">${series.map((s, k) => html`<span class="key"><span class="swatch ${toneFor(s.tone, k)}" aria-hidden="true"></span>${s.name}</span>`)}</span>`;
}

function summary(values: readonly (number | null)[], kind: TimeChart["kind"], fmt: (n: number) => string): string {
  const present = values.filter((v): v is number => v !== null);
  if (present.length === 0) return "no value";
  const max = Math.max(...present);
  if (kind === "bars") return `total ${fmt(present.reduce((a, b) => a + b, 0))}, peak ${fmt(max)} per step`;
  return `from ${fmt(Math.min(...present))} to ${fmt(max)}`;
}

/**
 * Whole percentages of each value's share of their sum that add up to exactly 100 (the largest
 * remainders get the spare points: 62.5 % and 37.5 % read 63 and 37, not 63 and 38). With a
 * negative value, or no total, each is simply rounded.
 */
export function wholePercents(values: readonly number[]): number[] {
  const total = values.reduce((a, b) => a + b, 0);
  if (total <= 0 || values.some((v) => v < 0))
    return values.map((v) => (total === 0 ? 0 : Math.round((v / total) * 100)));
  const exact = values.map((v) => (v / total) * 100);
  const whole = exact.map(Math.floor);
  const spare = 100 - whole.reduce((a, b) => a + b, 0);
  const byRemainder = exact.map((e, i) => [e - whole[i]!, i] as const).sort((a, b) => b[0] - a[0]);
  for (let k = 0; k < spare; k++) whole[byRemainder[k]![1]]!++;
  return whole;
}

/** Round tick values covering [lo, hi]: 0 and up to four steps of 1, 2, 2.5 or 5 × 10ⁿ, each at least `minStep`. */
export function niceTicks(lo: number, hi: number, minStep = 0): number[] {
  if (hi <= lo) return [lo, lo + Math.max(1, minStep)];
  const raw = (hi - lo) / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = Math.max(minStep, [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw)!);
  const start = Math.floor(lo / step) * step;
  const ticks: number[] = [];
  for (let v = start; v < hi + step * 0.999 && ticks.length < 8; v += step) ticks.push(Math.round(v * 1e6) / 1e6);
  return ticks;
}

/** Indices of the steps to label: about five evenly spaced, or for hours over days the midnights (UTC). */
function timeLabels(times: readonly number[], midnights: boolean): number[] {
  const n = times.length;
  if (n === 0) return [];
  if (midnights) {
    const days = times.flatMap((t, i) => (t % DAY_MS === 0 ? [i] : []));
    const every = Math.max(1, Math.ceil(days.length / 7));
    return days.filter((_, k) => k % every === 0);
  }
  const every = Math.max(1, Math.ceil(n / 5));
  const out: number[] = [];
  for (let i = 0; i < n; i += every) out.push(i);
  return out;
}

type AxisUnit = "hour" | "day" | "month";

// The UTC fallback the page script replaces with the browser's own (see dashboard.js).
function axisText(t: number, unit: AxisUnit): string {
  const s = new Date(t).toISOString();
  return unit === "month" ? s.slice(0, 7) : unit === "day" ? s.slice(5, 10) : s.slice(11, 16);
}

// Round tick values need no ".0": "80 %", "25 MiB".
function tick(text: string): string {
  return text.replace(/\.0(?=\D|$)/, "");
}

function r(v: number): number {
  return Math.round(v * 10) / 10;
}
