import { html, type SafeHtml } from "../../../core/html.ts";
import { API_PREFIX, INTERNAL_PREFIX, VERIFY_OTP_PATH } from "../../../core/http/paths.ts";
import type { KeyDetail, KeyListRow, KeysPage, Series } from "../../../data/usage/model.ts";
import { csrfField, layout, type Notice, type Viewer } from "../../layout.ts";
import {
  badge,
  breakable,
  type Column,
  emailAddress,
  empty,
  keyLink,
  keyPageHref,
  pager,
  query,
  type Row,
  table,
  time,
} from "../components.ts";
import { bytes, codeLabel, count, GUARD_HELP } from "../format.ts";
import { type KeysFilter, type KeysPeriod, keysFilter, keysFilterParams, keysHref } from "../keys-filter.ts";
import { CONFIRM_REVOKE_ALL } from "../model.ts";
import { RANGES, type RangeName } from "../ranges.ts";
import { type RefusedView, refusedChart } from "../refused.ts";
import type { KeyRotation } from "../rotation.ts";
import { figures, rangeSwitch, seriesCharts, splitCharts } from "./overview.ts";

/** Everything the keys page shows. */
export interface KeysView {
  viewer: Viewer;
  filter: KeysFilter;
  keys: KeysPage;
  notice?: Notice | null;
}

const COLUMNS: readonly Column[] = [
  { label: "Key", className: "nowrap card-head" },
  { label: "E-mail", sort: "email", className: "email" },
  { label: "Site", sort: "site", className: "site" },
  { label: "Created", sort: "created", numeric: true },
  { label: "Last used", sort: "lastUsed", numeric: true },
  { label: "Last address" },
  { label: "Conversions", sort: "conversions", numeric: true },
  { label: "Bytes saved", sort: "bytesSaved", numeric: true },
  { label: "Errors", sort: "errors", numeric: true },
  { label: "Refused", sort: "refused", numeric: true },
  { label: "Status", className: "card-badge" },
];

// A key's link carries the list's filter, so its page's "← All keys" returns to the same list; and
// the list's range, which the key's page then shows.
function row(k: KeyListRow, back: KeysFilter): Row {
  const f = k.inRange;
  const range = back.period === "all" || back.period === "24h" ? null : back.period;
  return [
    html`<a class="mono" href="${keyPageHref(k.id)}${query({ range, ...keysFilterParams(back) })}">${k.prefix}…</a>`,
    emailAddress(k.email),
    k.siteUrl || html`<span class="muted">–</span>`,
    time(k.createdAt, "date"),
    time(k.lastUsedAt),
    k.lastAddress
      ? html`<span class="mono">${breakable(k.lastAddress, /(?<=[.:])/)}</span>`
      : html`<span class="muted">–</span>`,
    count(f?.conversions ?? k.conversions),
    bytes(f?.bytesSaved ?? k.bytesSaved),
    count(f?.errors ?? 0),
    count(f?.refused ?? 0),
    badge(k.status, k.status),
  ];
}

/** The list's range switch: the overview's ranges and all time, each keeping the search, status and sort. */
function periodSwitch(f: KeysFilter): SafeHtml {
  const periods: [KeysPeriod, string][] = [
    ...(Object.keys(RANGES) as RangeName[]).map((r): [KeysPeriod, string] => [r, RANGES[r].label]),
    ["all", "All time"],
  ];
  return html`<nav class="segmented" aria-label="Range of the figures">${periods.map(
    ([p, label]) =>
      html`<a href="${keysHref({ ...f, period: p, page: 1 })}"${p === f.period ? html` aria-current="true"` : null}>${label}</a>`,
  )}</nav>`;
}

/** What the figure columns count, in words. */
function periodWords(p: KeysPeriod): string {
  return p === "all" ? "since each key was issued" : `in the last ${RANGES[p].label}`;
}

/** /internal/keys: search, status filter, sortable columns, paging. */
export function keysPage(v: KeysView): SafeHtml {
  const f = v.filter;
  const filtered = f.q !== "" || f.status !== "all";
  const statusOption = (value: KeysFilter["status"], label: string) =>
    html`<option value="${value}"${f.status === value ? html` selected` : null}>${label}</option>`;
  const list =
    v.keys.total === 0
      ? html`<div class="panel">${
          filtered
            ? empty(
                "No key matches",
                html`<p>Nothing matches ${f.q ? html`“${f.q}”` : "this filter"}. <a href="${INTERNAL_PREFIX}/keys">Show all keys</a></p>`,
              )
            : empty(
                "No keys yet",
                html`<p>Keys are issued when a client exchanges an e-mailed code at <code>${API_PREFIX}${VERIFY_OTP_PATH}</code> — see the API docs at <a href="${API_PREFIX}/docs">${API_PREFIX}/docs</a>.</p>`,
              )
        }</div>`
      : html`${table({
          caption: "API keys",
          columns: COLUMNS,
          rows: v.keys.rows.map((k) => row(k, f)),
          sort: {
            key: f.sort,
            order: f.order,
            href: (sort, order) => keysHref({ ...f, sort: sort as KeysFilter["sort"], order, page: 1 }),
          },
        })}${pager({ page: v.keys.page, pageSize: v.keys.pageSize, total: v.keys.total, noun: ["key", "keys"], href: (page) => keysHref({ ...f, page }) })}`;
  const body = html`<div class="page-head"><div><h1>Keys</h1><p class="lead">Every issued API key with its conversions, bytes saved, errors and refused requests ${periodWords(f.period)}.</p></div>${periodSwitch(f)}</div>
<form class="filters" method="get" action="${INTERNAL_PREFIX}/keys" role="search">
<label>Search e-mail, site or key prefix<input type="search" name="q" value="${f.q}" maxlength="200" autocomplete="off"></label>
<label>Status<select name="status">${statusOption("all", "All")}${statusOption("active", "Active")}${statusOption("revoked", "Revoked")}</select></label>
${f.sort !== "created" ? html`<input type="hidden" name="sort" value="${f.sort}">` : null}${f.order !== "desc" ? html`<input type="hidden" name="order" value="${f.order}">` : null}${f.period !== "all" ? html`<input type="hidden" name="period" value="${f.period}">` : null}
<button type="submit">Search</button></form>
${list}`;
  return layout({ title: "Keys", section: "keys", viewer: v.viewer, body, notice: v.notice });
}

/** Everything a key's page shows. */
export interface KeyView {
  viewer: Viewer;
  detail: KeyDetail;
  range: RangeName;
  series: Series;
  refused: RefusedView;
  notice?: Notice | null;
  /** The keys list this page was reached from, for "← All keys" and the forms (default: the whole list). */
  back?: KeysFilter;
  /** Keys just revoked by "revoke all keys of this address" (the notice then names the address). */
  revokedAll?: number | null;
  /** The key that replaced this one and the keys it replaced (a new code for the same address and site). */
  rotation?: KeyRotation;
}

/** "Replaced by key_…" and "Replaces key_…" facts, as links, when the key was rotated. */
function rotationFacts(r: KeyRotation | undefined): SafeHtml | null {
  if (!r || (r.replacedBy === null && r.replaces.length === 0)) return null;
  return html`${r.replacedBy ? html`<dt>Replaced by</dt><dd data-fact="replaced-by">${keyLink(r.replacedBy)}</dd>` : null}${
    r.replaces.length
      ? html`<dt>Replaces</dt><dd data-fact="replaces">${r.replaces.map((id, i) => html`${i ? ", " : ""}${keyLink(id)}`)}</dd>`
      : null
  }`;
}

/** "Revoke all keys of this address": confirmed by a checkbox the browser requires and the server checks. */
function revokeAllForm(v: KeyView, action: string): SafeHtml {
  const email = v.detail.key.email;
  return html`<section class="panel danger-zone" aria-labelledby="revoke-all-title"><h2 id="revoke-all-title">Revoke all keys of this address</h2>
<p class="muted">Every active key of ${emailAddress(email)}, on every site, is refused from its next request. The owner must obtain new keys with e-mailed codes. This cannot be undone.</p>
<form method="post" action="${action}">${csrfField(v.viewer)}<label class="check"><input type="checkbox" name="confirm" value="${CONFIRM_REVOKE_ALL}" required> <span>Yes, revoke every active key of ${emailAddress(email)}</span></label>
<button type="submit" class="danger">Revoke all keys of this address</button></form></section>`;
}

/** The notice of "revoke all keys of this address", worded here from the count and the key's own address. */
function revokedAllNotice(n: number, email: string): Notice {
  return { kind: "info", text: `${count(n)} ${n === 1 ? "key" : "keys"} of ${email} revoked.` };
}

/** /internal/keys/:id: the key's facts and rotations, its figures and charts over a range, Revoke and Revoke all of its address. */
export function keyPage(v: KeyView): SafeHtml {
  const k = v.detail.key;
  const u = v.detail.usage;
  const back = v.back ?? keysFilter({});
  const keep = keysFilterParams(back);
  const href = (r: RangeName) => `${keyPageHref(k.id)}${query({ range: r, ...keep })}`;
  const nothing = u.totals.conversions === 0 && u.totals.errors === 0;
  const actions = (name: string) =>
    `${keyPageHref(k.id)}/${name}${query({ range: v.range === "24h" ? null : v.range, ...keep })}`;
  const revoke =
    k.status === "active"
      ? html`<section class="panel danger-zone" aria-labelledby="revoke-title"><h2 id="revoke-title">Revoke this key</h2>
<p class="muted">Its next request is refused with 401. The client must obtain a new key with the e-mailed code. This cannot be undone.</p>
<form method="post" action="${actions("revoke")}" data-confirm="Revoke key ${k.prefix}… of ${k.email}? Its next request will be refused. This cannot be undone.">${csrfField(v.viewer)}<button type="submit" class="danger">Revoke key</button></form></section>`
      : html`<section class="panel"><h2>Revoked</h2><p>This key was revoked ${time(k.revokedAt)} and no longer converts anything.</p></section>`;
  const body = html`<p><a class="back" href="${keysHref(back)}">← All keys</a></p>
<div class="page-head"><div><h1 class="mono wrap-anywhere">${k.prefix}…</h1><p class="lead">${emailAddress(k.email)}${k.siteUrl ? html` · <span class="wrap-anywhere">${k.siteUrl}</span>` : null}</p></div>${badge(k.status, k.status)}</div>
<div class="grid-2"><section class="panel" aria-label="Key facts"><dl class="facts">
<dt>E-mail</dt><dd>${k.email}</dd><dt>Site</dt><dd>${k.siteUrl || "–"}</dd><dt>Created</dt><dd>${time(k.createdAt)}</dd><dt>Last used</dt><dd>${time(k.lastUsedAt)}</dd><dt>Last address</dt><dd class="mono" data-fact="last-address">${k.lastAddress ?? "–"}</dd>
<dt>All-time conversions</dt><dd class="num-left">${count(k.conversions)}</dd><dt>All-time bytes saved</dt><dd>${bytes(k.bytesSaved)}</dd>
<dt>Refused in the last ${RANGES[v.range].label}</dt><dd class="num-left" data-figure="refused">${count(v.refused.codes.total)}${v.refused.codes.byCode.length ? html` <span class="muted">(${v.refused.codes.byCode.map((c) => `${codeLabel(c.code)} ${count(c.count)}`).join(", ")})</span>` : null}</dd>
<dt title="${GUARD_HELP}">All-time extra encodes to keep quality</dt><dd class="num-left">${count(k.guardEncodes)}</dd><dt>Id</dt><dd class="mono">${k.id}</dd>${rotationFacts(v.rotation)}</dl></section>
<div>${revoke}${revokeAllForm(v, actions("revoke-all"))}</div></div>
<div class="page-head"><h2>Usage in the last ${RANGES[v.range].label}</h2>${rangeSwitch(v.range, href)}</div>
${figures(u)}
<h2 class="sr-only">Charts</h2>
${
  nothing
    ? html`<div class="panel">${empty("No conversions in this range", html`<p>This key converted nothing in the last ${RANGES[v.range].label}.</p>`)}</div>`
    : html`<div class="charts">${seriesCharts(
        "key",
        v.series,
        u.errorsByCode.map((e) => e.code),
      )}${splitCharts("key", u)}</div>`
}
${v.refused.codes.total > 0 ? html`<h2>Refused requests</h2><div class="charts">${refusedChart("key-refused", v.refused)}</div>` : null}`;
  const notice = v.revokedAll != null ? revokedAllNotice(v.revokedAll, k.email) : v.notice;
  return layout({ title: `Key ${k.prefix}`, section: "keys", viewer: v.viewer, body, notice });
}
