/**
 * Server-side HTML for the staff pages. `html` is a tagged template whose every interpolated value
 * is escaped unless it is itself the result of `html` (or an array of such results), so markup
 * never comes from data: e-mail addresses, site URLs and user agents are attacker-chosen.
 *
 *   html`<td>${key.email}</td>`            // escaped
 *   html`<ul>${items.map((i) => html`<li>${i}</li>`)}</ul>`
 */

const SAFE = Symbol("imgpress.safe-html");

/** A fragment of markup that is known to be safe (built by `html`). */
export interface SafeHtml {
  readonly [SAFE]: true;
  readonly text: string;
}

/** Anything `html` accepts between `${…}`; null, undefined and false render nothing. */
export type HtmlValue = SafeHtml | string | number | bigint | boolean | null | undefined | readonly HtmlValue[];

const entities: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
  "`": "&#96;",
};

/** Escapes text for an element body or a quoted attribute value. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"'`]/g, (c) => entities[c]!);
}

function isSafe(value: unknown): value is SafeHtml {
  return typeof value === "object" && value !== null && SAFE in value;
}

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return "";
  if (isSafe(value)) return value.text;
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

/** Tagged template that escapes every interpolation (see the module comment). */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let text = strings[0]!;
  for (let i = 0; i < values.length; i++) text += render(values[i]!) + strings[i + 1]!;
  return { [SAFE]: true, text };
}
