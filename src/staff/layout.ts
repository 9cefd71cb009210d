import { html, type SafeHtml } from "../core/html.ts";
import { INTERNAL_PREFIX } from "../core/http/paths.ts";
import { assetUrl } from "./assets/index.ts";
import { CSRF_FIELD, SIGN_OUT_ROUTE } from "./model.ts";

/** The signed-in staff member as every page shows them; `csrfToken` goes into each POST form. */
export interface Viewer {
  email: string;
  csrfToken: string;
}

/** The dashboard's sections, in navigation order. */
export const SECTIONS = [
  { id: "overview", label: "Overview", href: `${INTERNAL_PREFIX}/` },
  { id: "keys", label: "Keys", href: `${INTERNAL_PREFIX}/keys` },
  { id: "activity", label: "Activity", href: `${INTERNAL_PREFIX}/activity` },
  { id: "settings", label: "Staff & settings", href: `${INTERNAL_PREFIX}/settings` },
] as const;

/** One of SECTIONS' ids. */
export type Section = (typeof SECTIONS)[number]["id"];

/** A message shown at the top of a page after an action (e.g. "Key revoked"). */
export interface Notice {
  kind: "info" | "error";
  text: string;
  /** The Retry-After of a refusal whose text says "in N s": the page counts it down (see `countdownText`). */
  retryAfterS?: number;
}

/** The id of the page's notice, for a field the notice explains (`aria-describedby`). */
export const NOTICE_ID = "notice";

/**
 * `text` with its "in N s" (N = `retryAfterS`) counting down to "now" in the browser
 * (dashboard.js). The count is no live region of its own: inside an alert a screen reader would
 * otherwise read out every second of it; it reads the current count when the notice is read.
 */
export function countdownText(text: string, retryAfterS?: number): SafeHtml | string {
  const phrase = `in ${retryAfterS} s`;
  const at = retryAfterS === undefined ? -1 : text.lastIndexOf(phrase);
  if (at < 0) return text;
  return html`${text.slice(0, at)}<span data-countdown="${retryAfterS}" aria-live="off">${phrase}</span>${text.slice(at + phrase.length)}`;
}

/** The hidden CSRF field every state-changing form carries. */
export function csrfField(viewer: Viewer): SafeHtml {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${viewer.csrfToken}">`;
}

/** A whole signed-in page: header with the address and sign-out button, navigation (`section` marked current; none for a page outside them), the body. */
export function layout(page: {
  title: string;
  section: Section | null;
  viewer: Viewer;
  body: SafeHtml;
  notice?: Notice | null;
}): SafeHtml {
  const nav = SECTIONS.map(
    (s) => html`<a href="${s.href}"${s.id === page.section ? html` aria-current="page"` : null}>${s.label}</a>`,
  );
  return document(
    page.title,
    html`<a class="skip" href="#main">Skip to content</a>
<header class="top"><div class="top-inner">
<a class="brand" href="${INTERNAL_PREFIX}/"><span class="brand-mark" aria-hidden="true"></span>imgpress</a>
<nav class="nav" aria-label="Dashboard">${nav}</nav>
<div class="who"><span class="email" title="${page.viewer.email}">${page.viewer.email}</span>
<form method="post" action="${INTERNAL_PREFIX}${SIGN_OUT_ROUTE}">${csrfField(page.viewer)}<button type="submit" class="small">Sign out</button></form></div>
</div></header>
<main id="main">${page.notice ? html`<p class="notice ${page.notice.kind}" role="${page.notice.kind === "error" ? "alert" : "status"}" tabindex="-1" data-notice id="${NOTICE_ID}">${page.notice.text}</p>` : null}${page.body}</main>
<footer class="zone-note">Every time on these pages is UTC.</footer>`,
  );
}

/** A page outside the signed-in area (sign-in forms, "no staff yet"): same look, no navigation. */
export function doorLayout(title: string, body: SafeHtml): SafeHtml {
  return document(
    title,
    html`<header class="top"><div class="top-inner"><span class="brand"><span class="brand-mark" aria-hidden="true"></span>imgpress</span></div></header>
<main id="main"><div class="door panel">${body}</div></main>`,
  );
}

function document(title: string, body: SafeHtml): SafeHtml {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${title} · imgpress</title>
<link rel="icon" href="${assetUrl("favicon.svg")}" type="image/svg+xml">
<link rel="stylesheet" href="${assetUrl("dashboard.css")}">
<script src="${assetUrl("dashboard.js")}" defer></script>
</head><body>${body}</body></html>`;
}
