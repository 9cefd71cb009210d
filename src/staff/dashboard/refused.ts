import { html, type SafeHtml } from "../../core/html.ts";
import { INTERNAL_PREFIX } from "../../core/http/paths.ts";
import type { RefusedClient, RefusedCodes, RefusedPoint } from "../../data/usage/refused-queries.ts";
import { timeChart } from "./chart.ts";
import { breakable, emailAddress, empty, table, time } from "./components.ts";
import { codeLabel, count } from "./format.ts";
import { topWithOther } from "./palette.ts";
import { barStep, regroup, sumByCode } from "./steps.ts";

/** The refused requests of a range as a page shows them. */
export interface RefusedView {
  codes: RefusedCodes;
  points: RefusedPoint[];
  stepMs: number;
  /** The range [from, to) the points cover; `to` ends the step still running. */
  from: number;
  to: number;
  /** The most refused clients (overview only). */
  top?: RefusedClient[];
  /** Days the top clients cover when shorter than the range (null: the whole range). */
  topDays?: number | null;
}

/** "Rejected requests" by code over time: the public routes' 401/403/413/415/429 answers. */
export function refusedChart(id: string, v: RefusedView): SafeHtml {
  // Bars as on the usage charts: at most about 60 (steps.ts).
  const step = barStep(v.stepMs, v.to - v.from);
  const points = regroup(v.points, step, (group, t) => ({
    t,
    total: group.reduce((s, p) => s + p.total, 0),
    byCode: sumByCode(group.map((p) => p.byCode)),
  }));
  const series = topWithOther(
    v.codes.byCode.map((c) => c.code),
    (code) => points.map((p) => p.byCode[code] ?? 0),
    points.map((p) => p.total),
    { label: codeLabel },
  );
  return timeChart({
    id,
    title: "Rejected requests by code",
    kind: "bars",
    times: points.map((p) => p.t),
    stepMs: step.ms,
    range: { from: v.from, to: v.to },
    series: series.length ? series : [{ name: "Rejected", values: points.map((p) => p.total) }],
  });
}

/** Who a refused client is: the key (linked to its page), the address, or everyone past each hour's top clients. */
function clientCell(c: RefusedClient): SafeHtml {
  if (c.kind === "other") return html`<span class="muted">Other clients</span>`;
  if (c.kind === "address") return html`<span class="mono">${breakable(c.client, /(?<=[.:])/)}</span>`;
  const label = c.key
    ? html`<span class="mono">${c.key.prefix}…</span> <span class="muted">${emailAddress(c.key.email)}</span>`
    : html`<span class="mono">${c.client}</span>`;
  return html`<a href="${INTERNAL_PREFIX}/keys/${encodeURIComponent(c.client)}">${label}</a>`;
}

/** "Top refused clients": address or key, how often, last seen, the code it got most. */
export function topRefused(top: RefusedClient[], days: number | null = null): SafeHtml {
  const body = top.length
    ? table({
        caption: "Top refused clients",
        compact: true,
        className: "refused",
        columns: [
          { label: "Client", className: "card-head" },
          { label: "Refused", numeric: true },
          { label: "Last seen" },
          { label: "Main code" },
        ],
        rows: top.map((c) => ({
          cells: [
            clientCell(c),
            count(c.count),
            time(c.lastAt),
            html`${codeLabel(c.mainCode)} <span class="mono muted">${breakable(c.mainCode)}</span>`,
          ],
          data: { client: c.kind === "other" ? "other" : c.client },
        })),
      })
    : empty("Nothing refused", html`<p>No request to the public API was refused in this range.</p>`);
  return html`<section class="panel" aria-labelledby="refused-title"><h2 id="refused-title">Top refused clients${days ? ` in the last ${days} days` : ""}</h2>
<p class="muted">Requests answered 401, 403, 413, 415 or 429, counted against the key they named (even a revoked one), else the address (IPv6 by its /64). Each hour names its 20 busiest clients; the rest are “Other clients”.</p>${body}</section>`;
}
