import { html, type SafeHtml } from "../../../core/html.ts";
import { API_PREFIX, CONVERT_PATH, INTERNAL_PREFIX } from "../../../core/http/paths.ts";
import type { TopKey } from "../../../data/usage/key-ranges.ts";
import type { Overview, Series } from "../../../data/usage/model.ts";
import { savedPercent } from "../../../data/usage/service.ts";
import { layout, type Viewer } from "../../layout.ts";
import { splitChart, timeChart } from "../chart.ts";
import { cards, empty } from "../components.ts";
import { bytes, codeLabel, count, GUARD_HELP, ms, percent, ratio } from "../format.ts";
import { type HealthVerdict, healthLine } from "../health.ts";
import { toneOf, topWithOther } from "../palette.ts";
import { RANGES, type RangeName } from "../ranges.ts";
import { type RefusedView, refusedChart, topRefused } from "../refused.ts";
import { coarseSeries } from "../steps.ts";
import { topKeysPanel } from "../top-keys.ts";
import { type LiveView, liveSection } from "./live.ts";

/** Everything the overview page shows. */
export interface OverviewView {
  viewer: Viewer;
  range: RangeName;
  overview: Overview;
  /** The period of the same length just before (each card's change); absent on a key's page. */
  previous?: Overview;
  series: Series;
  refused: RefusedView;
  health?: HealthVerdict;
  /** The range's most used keys (conversions plus refused requests); absent on a key's page. */
  topKeys?: TopKey[];
  live: LiveView;
}

/** The range switcher (links, so it works without script and can be bookmarked). */
export function rangeSwitch(current: RangeName, href: (range: RangeName) => string): SafeHtml {
  return html`<nav class="segmented" aria-label="Time range">${(Object.keys(RANGES) as RangeName[]).map(
    (r) => html`<a href="${href(r)}"${r === current ? html` aria-current="true"` : null}>${RANGES[r].label}</a>`,
  )}</nav>`;
}

/** "▲ 12 % vs previous 24 h": the change of a figure against the period before; lower is better for `inverse` figures (errors, latency). */
export function change(now: number | null, before: number | null, period: string): string {
  if (now === null || before === null) return `– vs previous ${period}`;
  if (before === 0) return now === 0 ? `no change vs previous ${period}` : `▲ new vs previous ${period}`;
  const pct = Math.round(((now - before) / Math.abs(before)) * 100);
  return pct === 0
    ? `no change vs previous ${period}`
    : `${pct > 0 ? "▲" : "▼"} ${Math.abs(pct)} % vs previous ${period}`;
}

/** The big figures of a range: conversions, bytes in/out/saved, savings, latency, quality guard re-encodes; with `previous`, each one's change. */
export function figures(o: Overview, previous?: { overview: Overview; period: string }): SafeHtml {
  const t = o.totals;
  const p = previous?.overview.totals;
  const delta = (pick: (x: Overview["totals"]) => number | null) =>
    p && previous ? { delta: change(pick(t), pick(p), previous.period) } : {};
  // Per lossy conversion: lossless output never passes through the guard.
  const lossy = o.byQuality.find((q) => q.quality === "lossy")?.conversions ?? 0;
  return cards([
    {
      id: "conversions",
      label: "Conversions",
      value: count(t.conversions),
      sub: `${count(t.errors)} ${t.errors === 1 ? "error" : "errors"}`,
      ...delta((x) => x.conversions),
    },
    { id: "bytes-in", label: "Bytes in", value: bytes(t.bytesIn), ...delta((x) => x.bytesIn) },
    { id: "bytes-out", label: "Bytes out", value: bytes(t.bytesOut), ...delta((x) => x.bytesOut) },
    { id: "bytes-saved", label: "Bytes saved", value: bytes(t.bytesSaved), ...delta((x) => x.bytesSaved) },
    { id: "savings", label: "Savings", value: percent(t.savingsPercent), ...delta((x) => x.savingsPercent) },
    {
      id: "latency",
      label: "Latency p50 / p95",
      value: `${ms(t.p50Ms)}`,
      sub: `p95 ${ms(t.p95Ms)}`,
      ...delta((x) => x.p50Ms),
    },
    {
      id: "guard-encodes",
      label: "Extra encodes to keep quality",
      value: count(t.guardEncodes),
      sub: `${ratio(lossy > 0 ? t.guardEncodes / lossy : null)} per lossy conversion`,
      help: GUARD_HELP,
    },
  ]);
}

/** The time-series charts of a range (conversions, bytes, savings, errors by code, latency). */
export function seriesCharts(prefix: string, series: Series, errorCodes: readonly string[]): SafeHtml[] {
  // At most about 60 bars at any range (a week in 3-hour bars, a year in weeks): regrouped in memory.
  const coarse = coarseSeries(series);
  const p = coarse.points;
  const times = p.map((x) => x.t);
  const base = { times, stepMs: coarse.stepMs, range: { from: series.from, to: series.to } };
  // The busiest codes in their own colours, the rest summed as "other" (palette.ts).
  const errorSeries = topWithOther(
    errorCodes,
    (code) => p.map((x) => x.errorsByCode[code] ?? 0),
    p.map((x) => x.errors),
    { label: codeLabel },
  );
  return [
    timeChart({
      ...base,
      id: `${prefix}-conversions`,
      title: "Conversions",
      kind: "bars",
      series: [{ name: "Conversions", values: p.map((x) => x.conversions) }],
    }),
    timeChart({
      ...base,
      id: `${prefix}-bytes`,
      title: "Bytes in, out and saved",
      kind: "lines",
      format: bytes,
      series: [
        { name: "In", values: p.map((x) => (x.conversions ? x.bytesIn : null)) },
        { name: "Out", values: p.map((x) => (x.conversions ? x.bytesOut : null)) },
        { name: "Saved", values: p.map((x) => (x.conversions ? x.bytesSaved : null)) },
      ],
    }),
    timeChart({
      ...base,
      id: `${prefix}-savings`,
      title: "Savings",
      kind: "lines",
      format: (n) => percent(n),
      series: [{ name: "Savings", values: p.map((x) => savedPercent(x.bytesSaved, x.bytesIn, 1)) }],
    }),
    timeChart({
      ...base,
      id: `${prefix}-errors`,
      title: "Errors by code",
      kind: "bars",
      series: errorSeries.length ? errorSeries : [{ name: "Errors", values: p.map((x) => x.errors) }],
    }),
    timeChart({
      ...base,
      id: `${prefix}-latency`,
      title: "Conversion time p50 / p95",
      kind: "lines",
      format: (n) => ms(n),
      series: [
        { name: "p50", values: p.map((x) => x.p50Ms) },
        { name: "p95", values: p.map((x) => x.p95Ms) },
      ],
    }),
  ];
}

/** Conversions split by format and by quality, in one figure. */
export function splitCharts(prefix: string, o: Overview): SafeHtml {
  const items = <T extends { conversions: number }>(rows: T[], label: (r: T) => string) =>
    [...rows]
      .sort((a, b) => b.conversions - a.conversions)
      .map((r) => ({ label: label(r), value: r.conversions, tone: toneOf(label(r)) }));
  return splitChart({
    id: `${prefix}-split`,
    title: "Conversions by format and quality",
    parts: [
      { title: "Format", items: items(o.byFormat, (r) => r.format) },
      { title: "Quality", items: items(o.byQuality, (r) => r.quality) },
      { title: "Format and quality", items: items(o.byFormatQuality, (r) => `${r.format} ${r.quality}`) },
    ],
  });
}

/** /internal/: the figures of a range, their charts and the live panel. */
export function overviewPage(v: OverviewView): SafeHtml {
  const nothing = v.overview.totals.conversions === 0 && v.overview.totals.errors === 0;
  const refused = v.refused.codes.total > 0 ? refusedChart("overview-refused", v.refused) : null;
  const body = html`<div class="page-head"><div><h1>Overview</h1><p class="lead">Conversions through this service in the last ${RANGES[v.range].label}.</p></div>
${rangeSwitch(v.range, (r) => `${INTERNAL_PREFIX}/?range=${r}`)}</div>
${v.health ? healthLine(v.health) : null}
${figures(v.overview, v.previous ? { overview: v.previous, period: RANGES[v.range].label } : undefined)}
${liveSection(v.live)}
${v.topKeys ? topKeysPanel(v.topKeys, v.range, RANGES[v.range].label) : null}
${topRefused(v.refused.top ?? [], v.refused.topDays ?? null)}
<h2>Over time</h2>
${
  nothing
    ? html`<div class="panel">${empty(
        "No conversions yet",
        html`<p>Nothing was converted in the last ${RANGES[v.range].label}. Clients get a key with the e-mailed code and send images to <code>${API_PREFIX}${CONVERT_PATH}</code> — see the API docs at <a href="${API_PREFIX}/docs">${API_PREFIX}/docs</a>.</p>`,
      )}</div>`
    : html`<div class="charts">${seriesCharts(
        "overview",
        v.series,
        v.overview.errorsByCode.map((e) => e.code),
      )}${splitCharts("overview", v.overview)}${refused}</div>`
}
${nothing && refused ? html`<div class="charts">${refused}</div>` : null}`;
  return layout({ title: "Overview", section: "overview", viewer: v.viewer, body });
}
