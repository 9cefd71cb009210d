/**
 * Colours by identity: each error code, format and quality keeps one colour on every page and at
 * every range, whatever else the data holds; "other" is always the neutral grey; every colour
 * keeps 3:1 against the page.
 */
import { describe, expect, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { html } from "../../../src/core/html.ts";
import type { Overview, Series } from "../../../src/data/usage/model.ts";
import { codeLabel } from "../../../src/staff/dashboard/format.ts";
import { keyPage } from "../../../src/staff/dashboard/pages/keys.ts";
import { overviewPage } from "../../../src/staff/dashboard/pages/overview.ts";
import { OTHER_TONE, TONE_COUNT, TOP_SHOWN, toneOf } from "../../../src/staff/dashboard/palette.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T = Date.UTC(2030, 0, 1);
const viewer = { email: "staff@x.io", csrfToken: "tok" };
const live = { src: "/l", sparkSrc: "/s", spark: html``, everyS: 5, pauseS: 60, fields: [] };
const refused = { codes: { total: 0, byCode: [] }, points: [], stepMs: HOUR, from: T, to: T + HOUR };

/** Usage with the given errors per code, spread over `steps` steps of `step`. */
function usage(codes: Record<string, number>, step: "hour" | "day", steps: number): { o: Overview; s: Series } {
  const ms = step === "hour" ? HOUR : DAY;
  const errors = Object.values(codes).reduce((a, b) => a + b, 0);
  const zero = { bytesIn: 0, bytesOut: 0, bytesSaved: 0, guardEncodes: 0 };
  const o: Overview = {
    from: T,
    to: T + steps * ms,
    totals: { conversions: 4, ...zero, errors, savingsPercent: null, p50Ms: 1, p95Ms: 2 },
    byFormat: [
      { format: "avif", conversions: 3, ...zero },
      { format: "webp", conversions: 1, ...zero },
    ],
    byQuality: [{ quality: "lossy", conversions: 4, ...zero }],
    byFormatQuality: [{ format: "webp", quality: "lossy", conversions: 4, ...zero }],
    errorsByCode: Object.entries(codes)
      .sort((a, b) => b[1] - a[1])
      .map(([code, count]) => ({ code, count })),
  };
  const points = Array.from({ length: steps }, (_, i) => ({
    t: T + i * ms,
    conversions: i === 0 ? 4 : 0,
    ...zero,
    errors: i === 0 ? errors : 0,
    errorsByCode: i === 0 ? codes : {},
    p50Ms: null,
    p95Ms: null,
  }));
  return { o, s: { step, from: T, to: T + steps * ms, points } };
}

/** The colour class of `name`'s swatch in the legend of the chart `id`. */
// A legend key by its words (codeLabel's for a code; "other" stays "other"): its swatch's class.
function swatch(page: string, id: string, code: string): string | undefined {
  const figure = page.slice(page.indexOf(`id="${id}"`));
  const end = figure.indexOf("</figure>");
  const m = figure
    .slice(0, end)
    .match(new RegExp(`class="swatch ([\\w-]+)" aria-hidden="true"></span>${codeLabel(code)}<`));
  return m?.[1];
}

function overviewText(codes: Record<string, number>, step: "hour" | "day", steps: number): string {
  const { o, s } = usage(codes, step, steps);
  return overviewPage({ viewer, range: step === "hour" ? "24h" : "30d", overview: o, series: s, refused, live }).text;
}

function keyText(codes: Record<string, number>): string {
  const { o, s } = usage(codes, "hour", 24);
  const key = {
    id: "key_1",
    prefix: "imp_a",
    email: "a@x.io",
    siteUrl: "https://x.io",
    createdAt: T,
    lastUsedAt: null,
    lastAddress: null,
    revokedAt: null,
    status: "active" as const,
    conversions: 4,
    bytesIn: 0,
    bytesOut: 0,
    bytesSaved: 0,
    guardEncodes: 0,
  };
  return keyPage({ viewer, detail: { key, usage: o }, range: "24h", series: s, refused }).text;
}

describe("colours by identity", () => {
  test("INVALID_IMAGE has one colour at 24 h and 30 d, on the overview and a key's page, whatever else is there", () => {
    const alone = overviewText({ INVALID_IMAGE: 3 }, "hour", 24);
    const crowded = overviewText({ FILE_TOO_LARGE: 9, SERVER_BUSY: 8, INVALID_IMAGE: 1 }, "day", 30);
    const onKey = keyText({ UNSUPPORTED_FORMAT: 5, INVALID_IMAGE: 2 });
    const colours = [
      swatch(alone, "overview-errors", "INVALID_IMAGE"),
      swatch(crowded, "overview-errors", "INVALID_IMAGE"),
      swatch(onKey, "key-errors", "INVALID_IMAGE"),
    ];
    expect(colours[0]).toMatch(/^s\d$/);
    expect(new Set(colours).size).toBe(1);
    // The busiest code of each chart does not take the first colour by rank.
    expect(swatch(crowded, "overview-errors", "FILE_TOO_LARGE")).toBe(toneOf("FILE_TOO_LARGE"));
    expect(swatch(onKey, "key-errors", "UNSUPPORTED_FORMAT")).toBe(toneOf("UNSUPPORTED_FORMAT"));
  });

  test("formats keep their colour in the split chart whichever leads", () => {
    const page = overviewText({}, "hour", 24);
    expect(page).toMatch(new RegExp(`>avif</text>\\s*<rect class="bar ${toneOf("avif")}"`));
    expect(page).toMatch(new RegExp(`>webp</text>\\s*<rect class="bar ${toneOf("webp")}"`));
    expect(toneOf("avif")).not.toBe(toneOf("webp"));
  });

  test("many codes: the top ones by name plus 'other' in the neutral grey", () => {
    const codes = Object.fromEntries(
      ["A_1", "B_2", "C_3", "D_4", "E_5", "F_6", "G_7", "H_8", "I_9"].map((c, i) => [c, 20 - i]),
    );
    const page = overviewText(codes, "hour", 24);
    const legend = page
      .slice(page.indexOf('id="overview-errors"'))
      .match(/<span class="legend">(.*?)<\/span><\/figcaption>/s)?.[1];
    const names = [...(legend ?? "").matchAll(/<\/span>([^<]+)<\/span>/g)].map((m) => m[1]);
    expect(names).toEqual(["A_1", "B_2", "C_3", "D_4", "E_5", "F_6", "other"].slice(0, TOP_SHOWN + 1));
    expect(swatch(page, "overview-errors", "other")).toBe(OTHER_TONE);
  });

  test("an unknown code gets a colour from its name alone, never the neutral one", () => {
    expect(toneOf("SOMETHING_NEW")).toBe(toneOf("SOMETHING_NEW"));
    const tones = new Set(Array.from({ length: 200 }, (_, i) => toneOf(`CODE_${i}`)));
    expect(tones.has(OTHER_TONE)).toBe(false);
    expect(tones.size).toBe(TONE_COUNT);
  });

  test("every series colour keeps 3:1 against the page and the panels, light and dark", async () => {
    const css = await readFile("src/staff/assets/static/dashboard.css", "utf8");
    const dark = css.indexOf("prefers-color-scheme: dark");
    for (const block of [css.slice(0, dark), css.slice(dark)]) {
      const v = (name: string) => block.match(new RegExp(`--${name}: (#[0-9a-f]{6});`))?.[1] ?? "";
      const tones = [...Array.from({ length: TONE_COUNT }, (_, i) => `s${i}`), OTHER_TONE];
      expect(tones.every((t) => /^#/.test(v(t)))).toBe(true);
      const worst = Math.min(...tones.flatMap((t) => [contrast(v(t), v("bg")), contrast(v(t), v("panel"))]));
      expect(worst).toBeGreaterThanOrEqual(3);
    }
  });
});

function contrast(a: string, b: string): number {
  const lum = (hex: string) => {
    const [r, g, bl] = [1, 3, 5].map((i) => {
      const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * bl!;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}
