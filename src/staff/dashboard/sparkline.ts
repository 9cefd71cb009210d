import { html, type SafeHtml } from "../../core/html.ts";
import type { SparkPoint } from "../live-history.ts";

const W = 160;
const H = 36;

/** The sparklines' rows: what each draws and how its value is written. */
const LINES: { key: keyof Omit<SparkPoint, "t">; label: string; text: (n: number) => string }[] = [
  { key: "slotsBusy", label: "Slots busy", text: (n) => n.toFixed(1) },
  { key: "waiting", label: "Waiting", text: (n) => String(Math.round(n)) },
  { key: "requestsPerS", label: "Requests/s", text: (n) => n.toFixed(1) },
  { key: "refusedPerS", label: "Refused/s", text: (n) => n.toFixed(1) },
  { key: "rssMiB", label: "Memory MiB", text: (n) => String(Math.round(n)) },
];

/** One small line: the steps' values scaled to their own peak (or to `floor` when higher). */
function spark(values: number[], tone: number, floor: number): SafeHtml {
  const peak = Math.max(floor, ...values);
  const step = W / Math.max(values.length - 1, 1);
  const points = values
    .map((v, i) => `${Math.round(i * step * 10) / 10},${Math.round((H - 2 - (v / peak) * (H - 4)) * 10) / 10}`)
    .join(" ");
  return html`<svg class="spark" viewBox="0 0 ${W} ${H}" preserveAspectRatio="none" aria-hidden="true"><polyline class="line s${tone}" points="${points}"/></svg>`;
}

/**
 * The live panel's last 10 minutes (10 s steps: rates are the step's mean, load its highest sample),
 * drawn here so the page needs no chart script; the panel's poll fetches it again.
 */
export function sparklines(points: SparkPoint[], concurrency: number): SafeHtml {
  const rows = LINES.map((line, i) => {
    const values = points.map((p) => p[line.key] as number);
    const peak = Math.max(0, ...values);
    const floor = line.key === "slotsBusy" ? concurrency : 1;
    const now = values.at(-1) ?? 0;
    return html`<div class="spark-row" data-spark="${line.key}" data-peak="${peak}"><span class="spark-label">${line.label}</span>${spark(values, i, floor)}<span class="spark-value num">${line.text(now)} <span class="muted">peak ${line.text(peak)}</span></span></div>`;
  });
  return html`<div class="sparks" role="group" aria-label="Last 10 minutes, 10-second steps">${rows}</div>`;
}
