import { html, type SafeHtml } from "../../core/html.ts";
import type { ReadinessChecks } from "../../ops/health/service.ts";
import type { RecentCounts } from "../live-history.ts";
import { bytes, count } from "./format.ts";

/** What the health line is worked out from (the last 15 minutes and the state now). */
export interface HealthInputs {
  recent: RecentCounts;
  slotsBusy: number;
  concurrency: number;
  waiting: number;
  abandoned: number;
  readiness: ReadinessChecks;
  /** Free bytes in the data folder's file system; null for a database server. */
  diskFreeBytes: number | null;
  /** Whole days until the served certificate ends; null without one (behind a proxy). */
  tlsDaysLeft: number | null;
}

/** The verdict: its state, and each reason in words (never colour alone). */
export interface HealthVerdict {
  state: "ok" | "degraded" | "failing";
  reasons: string[];
}

/** Failed conversions over attempts in 15 minutes from which the line says degraded (with at least MIN_ATTEMPTS). */
export const ERROR_RATE_DEGRADED = 0.1;
/** Failed share from which it says failing. */
export const ERROR_RATE_FAILING = 0.5;
const MIN_ATTEMPTS = 5;
/** Refused requests in 15 minutes from which the line says degraded (someone is trying keys or flooding). */
export const REFUSED_DEGRADED = 20;
/** Free disk below which the line says degraded (the data folder holds the database). */
export const DISK_LOW_BYTES = 1024 ** 3;
/** Certificate days left below which the line says degraded. */
export const TLS_DAYS_WARN = 14;

/** ok / degraded / failing, with the reasons, from the figures of the last 15 minutes and now. */
export function healthVerdict(i: HealthInputs): HealthVerdict {
  const failing: string[] = [];
  const degraded: string[] = [];
  for (const [check, value] of Object.entries(i.readiness)) {
    if (value === "ok") continue;
    (check === "draining" ? degraded : failing).push(
      check === "draining" ? "shutting down" : `${check} check: ${value}`,
    );
  }
  const attempts = i.recent.converted + i.recent.failed;
  const rate = attempts ? i.recent.failed / attempts : 0;
  if (attempts >= MIN_ATTEMPTS && rate >= ERROR_RATE_DEGRADED) {
    (rate >= ERROR_RATE_FAILING ? failing : degraded).push(
      `${Math.round(rate * 100)} % of conversions failed in the last 15 min (${count(i.recent.failed)} of ${count(attempts)})`,
    );
  }
  if (i.recent.refused >= REFUSED_DEGRADED)
    degraded.push(`${count(i.recent.refused)} requests refused in the last 15 min (see Top refused clients)`);
  if (i.waiting > 0 || i.slotsBusy >= i.concurrency)
    degraded.push(`saturated: ${i.slotsBusy.toFixed(1)} of ${i.concurrency} slots busy, ${count(i.waiting)} waiting`);
  if (i.abandoned > 0)
    degraded.push(
      `${count(i.abandoned)} hung ${i.abandoned === 1 ? "conversion" : "conversions"} given up since the start (their memory may still be held)`,
    );
  if (i.diskFreeBytes !== null && i.diskFreeBytes < DISK_LOW_BYTES)
    degraded.push(`only ${bytes(i.diskFreeBytes)} free for the database`);
  if (i.tlsDaysLeft !== null && i.tlsDaysLeft < 0) failing.push("the TLS certificate has expired");
  else if (i.tlsDaysLeft !== null && i.tlsDaysLeft < TLS_DAYS_WARN)
    degraded.push(`the TLS certificate ends in ${i.tlsDaysLeft} ${i.tlsDaysLeft === 1 ? "day" : "days"}`);
  if (i.recent.mailFailed > 0)
    degraded.push(
      `${count(i.recent.mailFailed)} ${i.recent.mailFailed === 1 ? "mail" : "mails"} not delivered in the last 15 min`,
    );
  if (failing.length) return { state: "failing", reasons: [...failing, ...degraded] };
  if (degraded.length) return { state: "degraded", reasons: degraded };
  return {
    state: "ok",
    reasons: [
      `${count(attempts)} conversions and ${count(i.recent.refused)} refused requests in the last 15 min; database, disk and encoder ready`,
    ],
  };
}

const LABEL = { ok: "Healthy", degraded: "Degraded", failing: "Failing" } as const;

/** The line at the top of the overview: an icon, the state in words, and why. */
export function healthLine(v: HealthVerdict): SafeHtml {
  const icon = { ok: "✓", degraded: "!", failing: "✕" }[v.state];
  return html`<section class="health ${v.state}" data-health="${v.state}" aria-labelledby="health-title"><p><span class="health-icon" aria-hidden="true">${icon}</span><strong id="health-title">${LABEL[v.state]}</strong>: ${v.reasons.join("; ")}.</p></section>`;
}
