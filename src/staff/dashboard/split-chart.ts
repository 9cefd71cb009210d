/** Splits such as conversions by format and by quality: one group of horizontal bars per part, in SVG. */
import { html, type SafeHtml } from "../../core/html.ts";
import { r, W } from "./chart.ts";
import { count } from "./format.ts";
import { toneFor } from "./palette.ts";

/** Splits such as conversions by format and by quality: one group of horizontal bars per part. */
export interface SplitChart {
  id: string;
  title: string;
  parts: readonly { title: string; items: readonly { label: string; value: number; tone?: string }[] }[];
  format?: (n: number) => string;
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
