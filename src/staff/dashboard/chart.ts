/**
 * Charts as SVG written on the server from numbers only: no script, no library, no inline style
 * (the CSP forbids it; colours come from classes in dashboard.css, so dark mode follows). Each
 * chart is a <figure> with a caption, a legend, an SVG with <title>/<desc> for screen readers and
 * one <title> tooltip per step. Axis times are <text data-t> elements the page script rewrites in
 * the browser's language, still in UTC like every time on the dashboard.
 */

import { DAY_MS } from "../../core/durations.ts";
import { html, type SafeHtml } from "../../core/html.ts";
import { breakable } from "./components.ts";
import { count, utcDate, utcText } from "./format.ts";
import { toneFor } from "./palette.ts";
import { stepTitle, stepWords } from "./steps.ts";

export { type SplitChart, splitChart, wholePercents } from "./split-chart.ts";

/** One line or bar series; `values[i]` belongs to `times[i]` (null = no value, the line breaks). */
export interface ChartSeries {
  name: string;
  values: readonly (number | null)[];
  /** Colour class of an identity (palette.ts); without it, the series' place picks one. */
  tone?: string;
  /** The answer code a plain-words name stands for: the legend's tooltip, for searching the logs. */
  code?: string;
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
  /** The range's [from, to): steps cut by `from` or still running at `to` are drawn as partial. */
  range?: { from: number; to: number };
}

/** The SVG's width in user units (the split charts share it). */
export const W = 400;
const H = 180;
const PAD = { left: 56, right: 8, top: 10, bottom: 24 };

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
    ? `${chart.series.map((s) => `${s.name}: ${summary(s.values, chart.kind, fmt)}`).join("; ")}. ${n} steps (each: ${stepWords(chart.stepMs)}, UTC).`
    : "No data in this range.";

  return html`<figure class="chart" id="${chart.id}">
<figcaption><span class="chart-title">${chart.title}</span>${legend(chart.series)}<span class="chart-step">Each step: ${stepWords(chart.stepMs)}, UTC${chart.range ? "; the last one so far (faded)" : ""}</span></figcaption>
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
  const head = chart.stepMs >= 7 * DAY_MS ? "Week from" : daily ? "Day" : "Hour";
  const rows = chart.times.flatMap((t, i) =>
    chart.series.some((s) => (s.values[i] ?? 0) !== 0)
      ? [
          html`<tr><th scope="row">${daily ? utcDate(t) : utcText(t).slice(0, -4)}</th>${chart.series.map((s) => html`<td class="num">${s.values[i] === null || s.values[i] === undefined ? "–" : fmt(s.values[i]!)}</td>`)}</tr>`,
        ]
      : [],
  );
  // Names such as error codes (UNSUPPORTED_FORMAT) wrap at their underscores, so the columns fit the chart's width.
  return html`<details class="chart-data"><summary>${chart.title} as a table</summary><div class="table-wrap compact" tabindex="0" role="region" aria-labelledby="${chart.id}-table">
<table><caption class="sr-only" id="${chart.id}-table">${chart.title}, steps with a value</caption><thead><tr><th scope="col">${head} (UTC)</th>${chart.series.map((s) => html`<th scope="col" class="num">${breakable(s.name)}</th>`)}</tr></thead><tbody>${rows}</tbody></table></div></details>`;
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
    const tip = chart.series.filter((s) => (s.values[i] ?? 0) > 0).map((s) => `${s.name}: ${fmt(s.values[i]!)}`);
    // A transparent column under each step: an empty step can be tapped and a thin bar is easy to hit.
    const hit = html`<rect class="hit" x="${r(x(i))}" y="${PAD.top}" width="${r(stepW)}" height="${H - PAD.top - PAD.bottom}"/>`;
    out.push(focusable(stepTitle(t, chart.stepMs, chart.range), tip.length ? tip : ["none"], [hit, ...parts]));
  });
  return out;
}

// Long series: one path per series (a year of steps as separate elements with tooltips weighed
// hundreds of kilobytes); the figure's description still gives totals and peaks.
// One step as a group that takes focus (Tab, or a tap on a touch screen), with its tooltip both
// as <title> (hover, screen readers) and as text shown while focused: nothing is hover-only. The
// text sits just above the plot, where no later step's bars can paint over it.
function focusable(
  when: { text: string; partial: boolean },
  lines: readonly string[],
  drawn: SafeHtml | SafeHtml[],
): SafeHtml {
  const tip = [when.text, ...lines];
  return html`<g class="step${when.partial ? " partial" : ""}" tabindex="0"><title>${tip.join(" — ")}</title>${drawn}<text class="tip" x="${W - PAD.right}" y="-4" text-anchor="end">${tip.join(" — ")}</text></g>`;
}

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
  const at = (i: number, v: number) => `${r(x(i) + stepW / 2)} ${r(y(v))}`;
  const partial = (i: number) => stepTitle(chart.times[i] ?? 0, chart.stepMs, chart.range).partial;
  const paths = chart.series.map((s, k) => {
    let d = "";
    // Segments to or from a partial step (the one still running) are dashed: a day half counted
    // must not read as a fall.
    let dashed = "";
    s.values.forEach((v, i) => {
      if (v === null) return;
      const prev = s.values[i - 1] ?? null;
      const cut = partial(i) || partial(i - 1);
      if (prev !== null && cut) dashed += `M${at(i - 1, prev)}L${at(i, v)}`;
      d += `${prev === null || cut ? "M" : "L"}${at(i, v)}`;
    });
    const tail = dashed ? html`<path class="line partial ${toneFor(s.tone, k)}" d="${dashed}"/>` : null;
    return html`<path class="line ${toneFor(s.tone, k)}" d="${d}"/>${tail}`;
  });
  return [...paths, ...lineSteps(chart, at, fmt)];
}

// One focusable step per time with every series' dot and value. Dots carry the tooltips up to two
// months of steps; past that they would be thousands of elements and too dense to point at. A
// lone point (neighbours null) always gets one, or it would not show at all.
function lineSteps(chart: TimeChart, at: (i: number, v: number) => string, fmt: (n: number) => string): SafeHtml[] {
  const radius = chart.times.length > 60 ? 1.5 : 2.5;
  return chart.times.flatMap((t, i) => {
    const present = chart.series.flatMap((s, k) => {
      const v = s.values[i] ?? null;
      const lone = (s.values[i - 1] ?? null) === null && (s.values[i + 1] ?? null) === null;
      return v === null || (chart.times.length > 62 && !lone) ? [] : [{ s, k, v }];
    });
    if (present.length === 0) return [];
    const dots = present.map(({ s, k, v }) => {
      const [cx, cy] = at(i, v).split(" ");
      return html`<circle class="dot ${toneFor(s.tone, k)}" cx="${cx}" cy="${cy}" r="${radius}"/>`;
    });
    const values = present.map(({ s, v }) => `${s.name}: ${fmt(v)}`);
    return [focusable(stepTitle(t, chart.stepMs, chart.range), values, dots)];
  });
}

function legend(series: readonly ChartSeries[]): SafeHtml | null {
  if (series.length < 2 && series[0]?.tone === undefined) return null;
  return html`<span class="legend">${series.map((s, k) => html`<span class="key"${s.code ? html` title="${s.code}" data-code="${s.code}"` : null}><span class="swatch ${toneFor(s.tone, k)}" aria-hidden="true"></span>${s.name}</span>`)}</span>`;
}

function summary(values: readonly (number | null)[], kind: TimeChart["kind"], fmt: (n: number) => string): string {
  const present = values.filter((v): v is number => v !== null);
  if (present.length === 0) return "no value";
  const max = Math.max(...present);
  if (kind === "bars") return `total ${fmt(present.reduce((a, b) => a + b, 0))}, peak ${fmt(max)} per step`;
  return `from ${fmt(Math.min(...present))} to ${fmt(max)}`;
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

// The UTC text shown without script; the page script writes it in the browser's language (see dashboard.js).
function axisText(t: number, unit: AxisUnit): string {
  const s = new Date(t).toISOString();
  return unit === "month" ? s.slice(0, 7) : unit === "day" ? s.slice(5, 10) : s.slice(11, 16);
}

// Round tick values need no ".0": "80 %", "25 MiB".
function tick(text: string): string {
  return text.replace(/\.0(?=\D|$)/, "");
}

/** A coordinate rounded to a tenth: shorter SVG, same picture. */
export function r(v: number): number {
  return Math.round(v * 10) / 10;
}
