import { html, type SafeHtml } from "../../core/html.ts";
import type { TopKey } from "../../data/usage/key-ranges.ts";
import { emailAddress, empty, keyPageHref, query, table } from "./components.ts";
import { bytes, count } from "./format.ts";
import type { RangeName } from "./ranges.ts";

/**
 * "Top keys": the range's most used keys (conversions plus refused requests), each row opening the
 * key's page at the same range (the prefix is the link; dashboard.js makes the whole row one).
 */
export function topKeysPanel(top: readonly TopKey[], range: RangeName, rangeLabel: string): SafeHtml {
  const href = (k: TopKey) => `${keyPageHref(k.id)}${query({ range: range === "24h" ? null : range })}`;
  const body = top.length
    ? table({
        caption: "Top keys",
        compact: true,
        className: "top-keys",
        columns: [
          { label: "Key", className: "nowrap card-head" },
          { label: "E-mail", className: "email" },
          { label: "Conversions", numeric: true },
          { label: "Bytes saved", numeric: true },
          { label: "Errors", numeric: true },
          { label: "Refused", numeric: true },
        ],
        rows: top.map((k) => ({
          cells: [
            html`<a class="mono" href="${href(k)}">${k.prefix}…</a>`,
            emailAddress(k.email),
            count(k.conversions),
            bytes(k.bytesSaved),
            count(k.errors),
            count(k.refused),
          ],
          data: { href: href(k), key: k.id },
        })),
      })
    : empty("No key used", html`<p>No key converted anything or was refused in the last ${rangeLabel}.</p>`);
  return html`<section class="panel" aria-labelledby="top-keys-title"><h2 id="top-keys-title">Top keys</h2>
<p class="muted">The keys with the most conversions plus refused requests in the last ${rangeLabel}.</p>${body}</section>`;
}
