/**
 * table(): rows are given as cells, and each cell names its column (`data-label`), which a phone
 * shows before the value when a row becomes a card.
 */
import { describe, expect, test } from "bun:test";
import { html } from "../../../src/core/html.ts";
import { table } from "../../../src/staff/dashboard/components.ts";

const render = (rows: Parameters<typeof table>[0]["rows"]) =>
  table({
    caption: "Things",
    columns: [
      { label: 'Name <"b">', className: "email" },
      { label: "Count", numeric: true },
      { label: "Actions", hiddenLabel: true },
    ],
    rows,
  }).text;

describe("table cells", () => {
  test("each cell carries its column's label, escaped; a screen-reader-only column gets none", () => {
    const page = render([["<i>x</i>", "3", html`<button type="submit">Go</button>`]]);
    expect(page).toContain(
      '<tr><td data-label="Name &lt;&quot;b&quot;&gt;" class="email">&lt;i&gt;x&lt;/i&gt;</td><td data-label="Count" class="num">3</td><td><button type="submit">Go</button></td></tr>',
    );
  });

  test("a cell's own class joins its column's; a row may carry data attributes; an empty cell stays a cell", () => {
    const page = render([{ cells: [{ content: "a", className: "wide" }, null, null], data: { client: '1"2' } }]);
    expect(page).toContain(
      '<tr data-client="1&quot;2"><td data-label="Name &lt;&quot;b&quot;&gt;" class="email wide">a</td><td data-label="Count" class="num"></td><td></td></tr>',
    );
  });
});
