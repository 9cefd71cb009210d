import { html, type SafeHtml } from "../html.ts";
import type { MailMessage } from "./mailer.ts";

/** What a one-time code is for: an API key (for a site, when the client named one) or a staff sign-in. */
export type CodePurpose = { kind: "api-key"; siteUrl: string | null } | { kind: "staff" };

/** The e-mail that carries a one-time code. The code appears once per body, as six consecutive digits. */
export function otpMail(to: string, code: string, purpose: CodePurpose, validMinutes: number): MailMessage {
  // The staff mail says what the code opens, so a reader who did not ask knows what is at stake.
  const staff = purpose.kind === "staff";
  const siteUrl = purpose.kind === "api-key" ? purpose.siteUrl : null;
  const name = staff ? "imgpress staff sign-in code" : "imgpress sign-in code";
  const use = staff ? "It signs you in to the imgpress dashboard (the staff pages under /internal/)." : "";
  const site = siteUrl ? `It was requested for the site ${plainUrl(siteUrl)}.` : "";
  const text = [
    `Your ${name} is: ${code}`,
    "",
    `${use} It is valid for ${validMinutes} minutes and can be used once. ${site}`.trim(),
    "If you did not ask for it, ignore this message: nobody can use it without access to your mailbox.",
  ].join("\n");
  const body = html`<p>Your ${name} is:</p>
<p style="font-size:28px;font-weight:bold;letter-spacing:4px;font-family:monospace">${code}</p>
<p>${use ? `${use} ` : ""}It is valid for ${validMinutes} minutes and can be used once.${siteUrl ? html` It was requested for the site ${unlinkableHtml(siteUrl)}.` : ""}</p>
<p>If you did not ask for it, ignore this message.</p>`;
  return { to, subject: `Your ${name}`, text, html: page(body) };
}

/** The notice sent to the owner whenever a new key pair is issued for their address. */
export function keyIssuedMail(to: string, keyPrefix: string, siteUrl: string, issuedAt: Date): MailMessage {
  const site = siteUrl ? ` for the site ${plainUrl(siteUrl)}` : "";
  const text = [
    `A new imgpress API key (${keyPrefix}…) was issued to ${to}${site} at ${issuedAt.toISOString()}.`,
    "Any earlier key for the same address and site has been revoked.",
    "If this was not you, ask the operator to revoke it (imgpress keys revoke <id>).",
  ].join("\n");
  const body = html`<p>A new imgpress API key (<code>${keyPrefix}…</code>) was issued to ${to}${siteUrl ? html` for the site ${unlinkableHtml(siteUrl)}` : ""} at ${issuedAt.toISOString()}.</p>
<p>Any earlier key for the same address and site has been revoked.</p>
<p>If this was not you, ask the operator to revoke it.</p>`;
  return { to, subject: "A new imgpress API key was issued", text, html: page(body) };
}

// Every value in the bodies goes through `html`, which escapes it: an address or a site URL is the requester's text.
/** The message a staff member sends themself from the settings page to check the mail settings. */
export function testMail(to: string, sentAt: Date): MailMessage {
  const text = [
    `This is a test e-mail from imgpress, sent to ${to} at ${sentAt.toISOString()} from the dashboard's settings page.`,
    "It arrived, so sign-in codes and key codes reach this mailbox too. Nothing needs to be done.",
  ].join("\n");
  const body = html`<p>This is a test e-mail from imgpress, sent to ${to} at ${sentAt.toISOString()} from the dashboard's settings page.</p>
<p>It arrived, so sign-in codes and key codes reach this mailbox too. Nothing needs to be done.</p>`;
  return { to, subject: "imgpress test e-mail", text, html: page(body) };
}

function page(body: SafeHtml): string {
  return html`<!doctype html><html><body style="font-family:sans-serif">${body}</body></html>`.text;
}

// site_url comes from whoever asked for the code, so it must never become a clickable link:
// the scheme is dropped and, in HTML, every separator is split into its own element, which
// defeats mail clients' auto-linking without changing what the reader sees.
function plainUrl(url: string): string {
  return `"${url.replace(/^[a-z]+:\/\//i, "")}"`;
}

function unlinkableHtml(url: string): SafeHtml {
  const parts = url.replace(/^[a-z]+:\/\//i, "").split(/([./:@])/);
  return html`"${parts.map((part) => (/^[./:@]$/.test(part) ? html`<span>${part}</span>` : part))}"`;
}
