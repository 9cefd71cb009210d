import { openIssuanceWarning } from "../../api/issuance/service.ts";
import type { Config } from "../../core/config.ts";
import { html, type SafeHtml } from "../../core/html.ts";
import type { ReadinessChecks } from "../../ops/health/service.ts";
import type { TlsView } from "../../server/tls/status.ts";
import { bytes } from "./format.ts";
import { DISK_LOW_BYTES } from "./health.ts";

/** Days before its end from which the settings page warns about the served certificate. */
export const TLS_DAYS_SETTINGS_WARN = 30;

/** What the settings page's warnings are worked out from. */
export interface WarningInputs {
  config: Pick<Config, "smtpUrl" | "allowedEmails" | "host">;
  /** The readiness checks /health/ready runs (its storage check is the disk's floor). */
  readiness: ReadinessChecks;
  /** Free bytes in the data folder's file system; null for a database server. */
  diskFreeBytes: number | null;
  tls: TlsView | null;
  /** Whole days until the served certificate ends; null without one. */
  tlsDaysLeft: number | null;
}

/** The settings page's warnings, one sentence each: what is wrong, then what to do. */
export function settingsWarnings(i: WarningInputs): string[] {
  const warnings: string[] = [];
  if (!i.config.smtpUrl)
    warnings.push(
      "Sign-in codes are printed to the server's log, not mailed: set IMGPRESS_SMTP_URL so that codes go out by e-mail.",
    );
  // The start-up warning's own rule (real mail, `*`, not loopback), so the two never disagree.
  if (openIssuanceWarning(i.config))
    warnings.push(
      `Anyone who can reach this server may get an API key (IMGPRESS_ALLOWED_EMAILS is * and it listens on ${i.config.host}): limit IMGPRESS_ALLOWED_EMAILS to your addresses or @domains.`,
    );
  const tls = tlsWarning(i.tls, i.tlsDaysLeft);
  if (tls) warnings.push(tls);
  const disk = diskWarning(i.readiness, i.diskFreeBytes);
  if (disk) warnings.push(disk);
  return warnings;
}

// The certificate clients see, once fewer than TLS_DAYS_SETTINGS_WARN days are left.
function tlsWarning(tls: TlsView | null, daysLeft: number | null): string | null {
  if (!tls || daysLeft === null || daysLeft >= TLS_DAYS_SETTINGS_WARN) return null;
  const fix =
    tls.source === "generated"
      ? "restart imgpress, which then makes a new one (clients need the new cert.pem)"
      : "renew it and restart imgpress, which reads it at start only";
  if (daysLeft < 0) return `The TLS certificate has expired, so clients refuse to connect: ${fix}.`;
  return `The TLS certificate expires in ${daysLeft} ${daysLeft === 1 ? "day" : "days"}: ${fix}.`;
}

// Readiness's storage check is the floor (below it the instance is taken out of the balancer);
// the health line's threshold warns well before.
function diskWarning(readiness: ReadinessChecks, free: number | null): string | null {
  if (readiness.storage !== "ok")
    return `The data folder's disk fails the readiness check (${readiness.storage}): free space there, or move the data folder to a larger disk.`;
  if (free !== null && free < DISK_LOW_BYTES)
    return `Only ${bytes(free)} free for the database: free space on its disk before it fills up and writes fail.`;
  return null;
}

/** The warnings at the top of the settings page, one line each; nothing when all is well. */
export function warningList(warnings: readonly string[]): SafeHtml | null {
  if (warnings.length === 0) return null;
  return html`<section class="warnings" aria-label="Warnings">${warnings.map(
    (w) => html`<p class="notice warn"><strong>Warning:</strong> ${w}</p>`,
  )}</section>`;
}
