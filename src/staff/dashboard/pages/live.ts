import { html, type SafeHtml } from "../../../core/html.ts";

/** One figure of the live panel: its label, its first value, and where the script finds updates. */
export interface LiveField {
  label: string;
  /** Dotted path into the JSON the panel polls (e.g. `conversions.running`). */
  path: string;
  /** How the script writes it (dashboard.js has a writer for each). */
  format: "int" | "decimal" | "mib" | "uptime" | "text";
  /** Rendered by the server, so the panel is filled before (and without) the script. */
  initial: string;
  /** Text after the value, e.g. "/ 4" for slots. */
  suffix?: string;
}

/** The live panel: the polled URL, how often, and its figures. */
export interface LiveView {
  src: string;
  /** The sparklines fragment the poll fetches again, and its first rendering. */
  sparkSrc: string;
  spark: SafeHtml;
  everyS: number;
  /** Polling stops after this long without input (the staff session's idle timeout must be able to end it). */
  pauseS: number;
  fields: readonly LiveField[];
}

/** The self-refreshing panel (dashboard.js polls `src`). */
export function liveSection(live: LiveView): SafeHtml {
  return html`<section class="panel live" aria-labelledby="live-title" data-live-src="${live.src}" data-live-every="${live.everyS}" data-live-pause="${live.pauseS}">
<h2 id="live-title"><span class="dot" aria-hidden="true"></span>Live <span class="status" data-live-status>every ${live.everyS} s</span></h2>
<p class="sr-only" data-live-announce aria-live="polite"></p>
<dl>${live.fields.map(
    (f) =>
      html`<div><dt>${f.label}</dt><dd><span data-live="${f.path}" data-format="${f.format}">${f.initial}</span>${f.suffix ? html` <span class="muted">${f.suffix}</span>` : null}</dd></div>`,
  )}</dl>
<h3 class="spark-title">Last 10 minutes</h3><div data-spark-src="${live.sparkSrc}">${live.spark}</div></section>`;
}
