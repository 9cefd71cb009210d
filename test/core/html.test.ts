import { describe, expect, test } from "bun:test";
import { escapeHtml, html } from "../../src/core/html.ts";

describe("html templates escape by default", () => {
  test.each([
    ['"><script>alert(1)</script>@x.io', "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;@x.io"],
    ["a&b", "a&amp;b"],
    ["it's `x`", "it&#39;s &#96;x&#96;"],
  ])("%p", (input, expected) => {
    expect(html`<td>${input}</td>`.text).toBe(`<td>${expected}</td>`);
    expect(escapeHtml(input)).toBe(expected);
  });

  test("nested fragments and arrays pass through once; empty values render nothing", () => {
    const items = ["<b>", "ok"];
    const out = html`<ul>${items.map((i) => html`<li>${i}</li>`)}</ul>${null}${undefined}${false}${0}`;
    expect(out.text).toBe("<ul><li>&lt;b&gt;</li><li>ok</li></ul>0");
  });

  test("attribute values cannot break out of their quotes", () => {
    const url = `https://x.io/" onmouseover="alert(1)`;
    expect(html`<a href="${url}">x</a>`.text).toBe('<a href="https://x.io/&quot; onmouseover=&quot;alert(1)">x</a>');
  });

  test("only html results are inserted raw: an object that looks like one is not", () => {
    expect(html`${html`<svg></svg>`}`.text).toBe("<svg></svg>");
    expect(html`${{ text: "<i>" } as never}`.text).toBe("[object Object]");
  });
});
