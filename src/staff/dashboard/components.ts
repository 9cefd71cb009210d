import { html, type SafeHtml } from "../../core/html.ts";
import { INTERNAL_PREFIX } from "../../core/http/paths.ts";
import { iso, utcText } from "./format.ts";

/** One big figure: a label, the value as text, an optional line under it; `id` names it for tests. */
export interface Figure {
  id: string;
  label: string;
  value: string;
  sub?: string;
  /** Its change against the previous period, e.g. "▲ 12 % vs previous 24 h". */
  delta?: string;
  /** What the figure counts, in a sentence: the card's tooltip (`title`). */
  help?: string;
}

/** A row of big-number cards. */
export function cards(figures: readonly Figure[]): SafeHtml {
  return html`<dl class="cards">${figures.map(
    (f) =>
      html`<div class="card"${f.help ? html` title="${f.help}"` : null}><dt>${f.label}</dt><dd data-figure="${f.id}">${f.value}${f.sub ? html`<span class="sub">${f.sub}</span>` : null}${f.delta ? html`<span class="sub delta" data-delta="${f.id}">${f.delta}</span>` : null}</dd></div>`,
  )}</dl>`;
}

/** A time in UTC (the script writes it in the browser's language, naming UTC); "never" for none. */
export function time(ms: number | null, format: "datetime" | "date" = "datetime"): SafeHtml {
  if (ms === null) return html`<span class="muted">never</span>`;
  return html`<time datetime="${iso(ms)}" data-f="${format}">${utcText(ms, format === "datetime")}</time>`;
}

/** An empty state that says why it is empty and what to do. */
export function empty(title: string, detail: SafeHtml | string): SafeHtml {
  return html`<div class="empty"><strong>${title}</strong>${detail}</div>`;
}

/** A column of a sortable table. */
export interface Column {
  label: string;
  /** The sort key this column sorts by; absent = not sortable. */
  sort?: string;
  /** Numbers: right-aligned in a table (class `num` on its heading and cells). */
  numeric?: boolean;
  /** The label is for screen readers only (a column of buttons needs a name, not a visible heading). */
  hiddenLabel?: boolean;
  /**
   * A class for every cell of this column (`mono`, `email`, `nowrap`…). On a phone, where each row
   * is a card, `card-head` puts the cell first without its label and `card-badge` beside it.
   */
  className?: string;
}

/** What a cell shows: markup, escaped text, or nothing. */
export type CellContent = SafeHtml | string | null;

/** A table cell: its content, or its content with a class of its own (added to the column's). */
export type Cell = CellContent | { content: CellContent; className?: string };

/** A table row: its cells in column order, or its cells with `data-*` attributes that name the row. */
export type Row = readonly Cell[] | { cells: readonly Cell[]; data: Readonly<Record<string, string>> };

function classes(...names: (string | null | undefined | false)[]): SafeHtml | null {
  const list = names.filter(Boolean).join(" ");
  return list ? html` class="${list}"` : null;
}

// Each cell carries its column's label, which a phone shows before the value when a row becomes a card.
function cell(value: Cell, column: Column | undefined): SafeHtml {
  const own = value !== null && typeof value === "object" && "content" in value ? value : { content: value };
  const label = column?.hiddenLabel ? null : column?.label;
  return html`<td${label ? html` data-label="${label}"` : null}${classes(column?.numeric && "num", column?.className, own.className)}>${own.content}</td>`;
}

function tableRow(row: Row, columns: readonly Column[]): SafeHtml {
  const { cells, data } = "cells" in row ? row : { cells: row, data: {} };
  const attributes = Object.entries(data).map(([name, value]) => html` data-${name}="${value}"`);
  return html`<tr${attributes}>${cells.map((c, i) => cell(c, columns[i]))}</tr>`;
}

function headCell(c: Column, sort: TableSort | undefined): SafeHtml {
  if (!c.sort || !sort)
    return html`<th scope="col"${classes(c.numeric && "num")}>${c.hiddenLabel ? html`<span class="sr-only">${c.label}</span>` : c.label}</th>`;
  const current = sort.key === c.sort;
  // A first click sorts numbers and dates from the largest, text from A.
  const next = current ? (sort.order === "asc" ? "desc" : "asc") : c.numeric ? "desc" : "asc";
  // Every sortable heading shows an arrow, so it reads as a control; the current one says its order.
  const arrow = current ? (sort.order === "asc" ? "▲" : "▼") : "↕";
  // "sortable": on a phone, where the headings are hidden, these stay in sight as a row of sort links.
  return html`<th scope="col"${classes(c.numeric && "num", "sortable")}${current ? html` aria-sort="${sort.order === "asc" ? "ascending" : "descending"}"` : null}><a class="sort" href="${sort.href(c.sort, next)}">${c.label}<span class="arrow${current ? " current" : ""}" aria-hidden="true">${arrow}</span></a></th>`;
}

/** How a table is sorted, and the link that sorts it by another key or order. */
export interface TableSort {
  key: string;
  order: "asc" | "desc";
  href: (key: string, order: "asc" | "desc") => string;
}

/** A table whose sortable headers are links (the current sort marked with aria-sort); each cell names its column. */
export function table(opts: {
  caption: string;
  columns: readonly Column[];
  rows: readonly Row[];
  /** Few columns: never wider than the screen (no sideways scrolling). */
  compact?: boolean;
  /** A class for the wrapper, for a table's own styles. */
  className?: string;
  sort?: TableSort;
}): SafeHtml {
  const head = opts.columns.map((c) => headCell(c, opts.sort));
  const rows = opts.rows.map((r) => tableRow(r, opts.columns));
  // "stack": on a phone each row is a card (dashboard.css). A table that may scroll sideways can be scrolled by keyboard: the wrapper takes focus, named by the caption.
  const id = `t-${opts.caption.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
  const scrolls = opts.compact ? null : html` tabindex="0" role="region" aria-labelledby="${id}"`;
  return html`<div class="table-wrap stack${opts.compact ? " compact" : ""}${opts.className ? ` ${opts.className}` : ""}"${scrolls}><table><caption class="sr-only" id="${id}">${opts.caption}</caption><thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table></div>`;
}

/** "41–60 of 1,234 keys" with previous/next links; `noun` is [one, many]. */
export function pager(opts: {
  page: number;
  pageSize: number;
  total: number;
  href: (page: number) => string;
  noun: readonly [string, string];
}): SafeHtml {
  const pages = Math.max(1, Math.ceil(opts.total / opts.pageSize));
  const first = opts.total === 0 ? 0 : (opts.page - 1) * opts.pageSize + 1;
  const last = Math.min(opts.total, opts.page * opts.pageSize);
  const link = (page: number, label: string, rel: string) =>
    page >= 1 && page <= pages && page !== opts.page
      ? html`<a href="${opts.href(page)}" rel="${rel}">${label}</a>`
      : html`<span class="disabled" aria-disabled="true">${label}</span>`;
  return html`<div class="pager"><span class="num">${first.toLocaleString("en-US")}–${last.toLocaleString("en-US")} of ${opts.total.toLocaleString("en-US")} ${opts.noun[opts.total === 1 ? 0 : 1]}</span>
<nav aria-label="Pages">${link(opts.page - 1, "← Previous", "prev")}<span class="num">Page ${opts.page} of ${pages}</span>${link(opts.page + 1, "Next →", "next")}</nav></div>`;
}

/** A query string from parameters, leaving out empty ones: `?a=1&b=x`. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") search.set(k, String(v));
  const s = search.toString();
  return s ? `?${s}` : "";
}

/** A status badge. */
export function badge(text: string | SafeHtml, kind: "active" | "revoked" | "neutral"): SafeHtml {
  return html`<span class="badge ${kind}">${text}</span>`;
}

/**
 * Text that may wrap after each separator (`_` `,` `/` by default) rather than at any letter: a
 * setting's name or a list of addresses on a phone breaks between its parts, not inside them. No
 * break inside `//`, nor before a last part of one or two characters (`_S`, `_MB`).
 */
export function breakable(text: string, after: RegExp = /(?<=[_,]|\/(?!\/))/): SafeHtml {
  const parts = text.split(after);
  if (parts.length > 1 && parts.at(-1)!.length <= 2) parts.splice(-2, 2, parts.at(-2)! + parts.at(-1)!);
  return html`${parts.map((part, i) => (i === 0 ? part : html`<wbr>${part}`))}`;
}

/** A key id as the keys service makes them (`key_` and 16 hex digits). */
const KEY_ID = /\bkey_[0-9a-f]{16}\b/g;

/** The dashboard page of key `id`. */
export function keyPageHref(id: string): string {
  return `${INTERNAL_PREFIX}/keys/${encodeURIComponent(id)}`;
}

/** A link to key `id`'s page, its id as the text. */
export function keyLink(id: string): SafeHtml {
  return html`<a class="mono" href="${keyPageHref(id)}">${id}</a>`;
}

/** Text with every key id in it made a link to that key's page (the rest stays escaped text). */
export function withKeyLinks(text: string): SafeHtml {
  const parts: (string | SafeHtml)[] = [];
  let last = 0;
  for (const match of text.matchAll(KEY_ID)) {
    parts.push(text.slice(last, match.index), keyLink(match[0]));
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return html`${parts}`;
}

/** Where an e-mail address may wrap: after its @ and dots only (a hyphen is a break already). */
export const EMAIL_BREAKS = /(?<=[@.])/;

/**
 * An e-mail address that wraps only after its @ and dots, never inside a word (`.address` in
 * dashboard.css): a cell or heading that is too narrow puts "example.com" on the next line whole.
 */
export function emailAddress(email: string): SafeHtml {
  return html`<span class="address">${breakable(email, EMAIL_BREAKS)}</span>`;
}
