/**
 * The dashboard's pure parts: number formats, SVG charts built from numbers, escaping of
 * attacker-chosen text in every page, secret redaction of the settings page, embedded assets.
 */
import { describe, expect, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { loadConfig } from "../../../src/core/config.ts";
import { html } from "../../../src/core/html.ts";
import { redactUrl } from "../../../src/core/redact.ts";
import type { KeyListRow, Overview, Series } from "../../../src/data/usage/model.ts";
import { embeddedAssetsSource } from "../../../src/staff/assets/embed.ts";
import { assetAt, assetUrl } from "../../../src/staff/assets/index.ts";
import { niceTicks, splitChart, timeChart, wholePercents } from "../../../src/staff/dashboard/chart.ts";
import {
  bytes,
  count,
  duration,
  GUARD_HELP,
  ms,
  percent,
  ratio,
  utcText,
} from "../../../src/staff/dashboard/format.ts";
import { DISK_LOW_BYTES } from "../../../src/staff/dashboard/health.ts";
import { activityPage } from "../../../src/staff/dashboard/pages/activity.ts";
import { keyPage, keysPage } from "../../../src/staff/dashboard/pages/keys.ts";
import { overviewPage } from "../../../src/staff/dashboard/pages/overview.ts";
import { settingsPage } from "../../../src/staff/dashboard/pages/settings.ts";
import type { RefusedView } from "../../../src/staff/dashboard/refused.ts";
import { settingsWarnings, warningList } from "../../../src/staff/dashboard/warnings.ts";
import { describeSettings } from "../../../src/staff/settings-view.ts";

const HOUR = 3_600_000;
const T = Date.UTC(2030, 0, 1);
const XSS_EMAIL = '"><script>alert(1)</script>@x.io';
const XSS_SITE = "https://x.io/<img src=x onerror=alert(2)>?a=1&b='2'";
const viewer = { email: XSS_EMAIL, csrfToken: 'tok"en' };

function series(values: number[]): Series {
  return {
    step: "hour",
    from: T,
    to: T + values.length * HOUR,
    points: values.map((n, i) => ({
      t: T + i * HOUR,
      conversions: n,
      bytesIn: n * 1000,
      bytesOut: n * 400,
      bytesSaved: n * 600,
      guardEncodes: 2 * n,
      errors: i === 0 ? 2 : 0,
      errorsByCode: (i === 0 ? { "<b>X</b>": 2 } : {}) as Record<string, number>,
      p50Ms: n ? 50 : null,
      p95Ms: n ? 90 : null,
    })),
  };
}

function overview(conversions: number): Overview {
  return {
    from: T,
    to: T + 24 * HOUR,
    totals: {
      conversions,
      bytesIn: conversions * 1000,
      bytesOut: conversions * 400,
      bytesSaved: conversions * 600,
      guardEncodes: 2 * conversions,
      errors: 2,
      savingsPercent: conversions ? 60 : null,
      p50Ms: 50,
      p95Ms: 90,
    },
    byFormat: conversions
      ? [{ format: "<i>webp</i>", conversions, bytesIn: 0, bytesOut: 0, bytesSaved: 0, guardEncodes: 2 * conversions }]
      : [],
    byQuality: conversions
      ? [{ quality: "lossy", conversions, bytesIn: 0, bytesOut: 0, bytesSaved: 0, guardEncodes: 2 * conversions }]
      : [],
    byFormatQuality: conversions
      ? [
          {
            format: "<i>webp</i>",
            quality: "lossy",
            conversions,
            bytesIn: 0,
            bytesOut: 0,
            bytesSaved: 0,
            guardEncodes: 2 * conversions,
          },
        ]
      : [],
    errorsByCode: [{ code: "<b>X</b>", count: 2 }],
  };
}

const live = {
  src: "/internal/api/live",
  sparkSrc: "/internal/live/sparklines",
  spark: html`<i>spark</i>`,
  everyS: 5,
  pauseS: 1500,
  fields: [{ label: "Version", path: "version", format: "text" as const, initial: "<v>" }],
};
const key: KeyListRow = {
  id: "key_1",
  prefix: "imp_abcd",
  email: XSS_EMAIL,
  siteUrl: XSS_SITE,
  createdAt: T,
  lastUsedAt: null,
  lastAddress: null,
  revokedAt: null,
  status: "active",
  conversions: 3,
  bytesIn: 3000,
  bytesOut: 1200,
  bytesSaved: 1800,
  guardEncodes: 7,
};

/** Refused requests with attacker-chosen text in the key's e-mail and the code. */
const refused: RefusedView = {
  codes: {
    total: 5,
    byCode: [
      { code: "INVALID_SIGNATURE", count: 4 },
      { code: "<b>X</b>", count: 1 },
    ],
  },
  points: [{ t: T, total: 5, byCode: { INVALID_SIGNATURE: 4, "<b>X</b>": 1 } }],
  stepMs: 3_600_000,
  from: T,
  to: T + 3_600_000,
  top: [
    {
      kind: "key",
      client: "key_<i>",
      count: 4,
      lastAt: T,
      mainCode: "INVALID_SIGNATURE",
      key: { prefix: "imp_abc", email: XSS_EMAIL },
    },
    { kind: "address", client: "2001:db8::/64", count: 1, lastAt: T, mainCode: "<b>X</b>" },
  ],
};

/** Every page, rendered with attacker-chosen text wherever data goes. */
function allPages(): Record<string, string> {
  return {
    overview: overviewPage({ viewer, range: "24h", overview: overview(5), series: series([1, 0, 4]), refused, live })
      .text,
    keys: keysPage({
      viewer,
      filter: { q: XSS_EMAIL, status: "all", sort: "created", order: "desc", page: 1, period: "all" },
      keys: { rows: [key], total: 1, page: 1, pageSize: 50 },
    }).text,
    key: keyPage({ viewer, detail: { key, usage: overview(3) }, range: "24h", series: series([3]), refused }).text,
    activity: activityPage({
      viewer,
      filter: { type: "", staff: XSS_EMAIL, from: "", to: "", before: null },
      rows: [
        {
          at: T,
          type: "staff.sign_in_failed",
          actor: XSS_EMAIL,
          subject: XSS_SITE,
          clientAddress: "127.0.0.1",
          detail: { reason: "<script>" },
        },
      ],
      older: null,
      types: ["staff.sign_in"],
      staff: [XSS_EMAIL],
      problem: XSS_SITE,
    }).text,
    settings: settingsPage({
      viewer,
      staff: [{ email: XSS_EMAIL, source: "database", addedAt: T, addedBy: XSS_EMAIL }],
      sessions: [{ id: "ses_1", clientAddress: "::1", userAgent: "<script>ua</script>", createdAt: T, lastSeenAt: T }],
      currentSession: "ses_1",
      settings: [{ env: "IMGPRESS_X", group: "server", value: XSS_SITE, help: '"help"' }],
      dataDir: "/data/<dir>",
      database: "/data/<dir>/imgpress.db",
      versions: [{ name: "imgpress", version: "<1>" }],
      // An operator's certificate file may name anything, and its path is the operator's.
      tls: {
        source: "file",
        certPath: "/etc/<tls>/cert.pem",
        validUntil: "2030-02-01T00:00:00.000Z",
        names: [XSS_SITE],
        sha256: "AB:CD",
        warnings: [XSS_SITE],
      },
    }).text,
  };
}

describe("formats", () => {
  test.each([
    [bytes(0), "0 B"],
    [bytes(1023), "1023 B"],
    [bytes(1024), "1.0 KiB"],
    [bytes(1_234_567), "1.2 MiB"],
    [bytes(-2_500_000_000), "−2.3 GiB"],
    [count(1234567), "1,234,567"],
    [percent(null), "–"],
    [percent(66.666), "66.7 %"],
    [ratio(null), "–"],
    [ratio(2.904), "2.90"],
    [ratio(0.125), "0.13"],
    [ms(null), "–"],
    [ms(0), "0 ms"],
    [ms(4.44), "4.4 ms"],
    [ms(412.3), "412 ms"],
    [ms(12_500), "12.5 s"],
    [duration(42), "42 s"],
    [duration(7_500), "2 h 5 min"],
    [duration(3 * 86_400 + 4 * 3600), "3 d 4 h"],
  ])("%p is %p", (actual, expected) => expect(actual).toBe(expected));
});

describe("charts", () => {
  test("a time chart carries its data, a title and a description for screen readers", () => {
    const svg = timeChart({
      id: "c",
      title: "Conversions",
      kind: "bars",
      times: [T, T + HOUR, T + 2 * HOUR],
      stepMs: HOUR,
      series: [{ name: "Conversions", values: [2, 0, 5] }],
    }).text;
    expect(svg).toContain('data-points="3"');
    expect(svg).toContain('data-nonzero="2"');
    expect(svg).toContain('data-peak="5"');
    expect(svg).toContain('aria-labelledby="c-t c-d"');
    expect(svg).toContain('<title id="c-t">Conversions</title>');
    expect(svg).toContain("total 7, peak 5 per step");
    expect(svg.match(/<rect class="bar/g)?.length).toBe(2);
    expect(svg).not.toContain("No data in this range");
  });

  test("an empty chart says so; lines break over missing values", () => {
    const empty = timeChart({
      id: "e",
      title: "Latency",
      kind: "lines",
      times: [T, T + HOUR],
      stepMs: HOUR,
      series: [{ name: "p50", values: [null, null] }],
    }).text;
    expect(empty).toContain("No data in this range");
    const broken = timeChart({
      id: "b",
      title: "Latency",
      kind: "lines",
      times: [T, T + HOUR, T + 2 * HOUR],
      stepMs: HOUR,
      series: [{ name: "p50", values: [5, null, 7] }],
    }).text;
    expect(broken.match(/<path class="line s0" d="([^"]*)"/)![1]!.match(/M/g)?.length).toBe(2);
  });

  test("a year of bars is one path per series, with the figures still on the SVG", () => {
    const times = Array.from({ length: 365 }, (_, i) => T + i * 86_400_000);
    const svg = timeChart({
      id: "y",
      title: "Conversions",
      kind: "bars",
      times,
      stepMs: 86_400_000,
      series: [{ name: "Conversions", values: times.map((_, i) => i % 2) }],
    }).text;
    expect(svg.match(/<path class="bar s0" d="[^"]+"/g)?.length).toBe(1);
    expect(svg).not.toContain("<rect");
    expect(svg).toContain('data-points="365"');
    expect(svg).toContain('data-nonzero="182"');
    // The SVG stays small; the table of its numbers (182 days with a value) too.
    const [figure, table] = svg.split('<details class="chart-data">');
    expect(figure!.length).toBeLessThan(20_000);
    expect(table!.match(/<tr><th scope="row">/g)?.length).toBe(182);
    expect(table!.length).toBeLessThan(12_000);
  });

  test("the numbers behind a chart are in a table too: steps with a value, every series, UTC times", () => {
    const times = [T, T + 3_600_000, T + 7_200_000];
    const chart = timeChart({
      id: "t",
      title: "Bytes",
      kind: "lines",
      times,
      stepMs: 3_600_000,
      format: (n) => `${n} B`,
      series: [
        { name: "In", values: [0, 1200, null] },
        { name: "Out", values: [0, 300, 50] },
      ],
    }).text;
    const table = chart.slice(chart.indexOf("<details"));
    expect(table).toContain("<summary>Bytes as a table</summary>");
    expect(table).toContain(
      '<th scope="col">Hour (UTC)</th><th scope="col" class="num">In</th><th scope="col" class="num">Out</th>',
    );
    const rows = [...table.matchAll(/<tr><th scope="row">([^<]+)<\/th>(.*?)<\/tr>/g)].map((m) => [
      m[1],
      m[2]!
        .replace(/<[^>]+>/g, " ")
        .trim()
        .split(/\s+/)
        .join(" "),
    ]);
    expect(rows).toEqual([
      [utcText(T + 3_600_000).slice(0, -4), "1200 B 300 B"],
      [utcText(T + 7_200_000).slice(0, -4), "– 50 B"],
    ]);
    expect(
      timeChart({
        id: "e",
        title: "Empty",
        kind: "bars",
        times,
        stepMs: 3_600_000,
        series: [{ name: "x", values: [0, 0, 0] }],
      }).text,
    ).not.toContain("<details");
  });

  test("split bars are proportional to their values", () => {
    const svg = splitChart({
      id: "s",
      title: "By format",
      parts: [
        {
          title: "Format",
          items: [
            { label: "webp", value: 30 },
            { label: "avif", value: 10 },
          ],
        },
      ],
    }).text;
    const widths = [...svg.matchAll(/<rect[^>]* width="([\d.]+)"/g)].map((m) => Number(m[1]));
    expect(widths[0]! / widths[1]!).toBeCloseTo(3, 1);
    expect(svg).toContain("(75 %)");
  });

  test.each([
    [0, 7, [0, 2, 4, 6, 8]],
    [0, 100, [0, 25, 50, 75, 100]],
    [0, 0, [0, 1]],
    [-3, 9, [-5, 0, 5, 10]],
  ])("nice ticks for [%p, %p]", (lo, hi, ticks) => expect(niceTicks(lo, hi)).toEqual(ticks));

  test.each([
    [1, [0, 1]],
    [2, [0, 1, 2]],
    [3, [0, 1, 2, 3]],
    [7, [0, 2, 4, 6, 8]],
  ])("count ticks step by whole numbers: peak %p", (hi, ticks) => expect(niceTicks(0, hi, 1)).toEqual(ticks));

  test("a count chart with a peak of 1 labels its axis 0 and 1, each once", () => {
    const svg = timeChart({
      id: "c",
      title: "Conversions",
      times: [0, 3_600_000],
      stepMs: 3_600_000,
      series: [{ name: "ok", values: [1, 0] }],
      kind: "bars",
    }).text;
    expect([...svg.matchAll(/<text class="tick"[^>]*text-anchor="end">([^<]*)</g)].map((m) => m[1])).toEqual([
      "0",
      "1",
    ]);
  });
});

describe("pages render data as text", () => {
  test.each(Object.entries(allPages()))("%s", (_name, page) => {
    expect(page).not.toContain("<script>");
    expect(page).not.toContain("<img src=x");
    expect(page).not.toContain("<b>X</b>");
    expect(page).not.toContain("<i>webp");
    expect(page).toContain("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;@x.io");
    // The only scripts are the external, hashed ones; no inline style either.
    expect([...page.matchAll(/<script[^>]*>/g)].map((m) => m[0])).toEqual([
      `<script src="${assetUrl("dashboard.js")}" defer>`,
    ]);
    expect(page).not.toMatch(/ style=|<style/);
    expect(page).not.toMatch(/<[^>]*\son[a-z]+=/);
    expect(page).toContain('name="csrf" value="tok&quot;en"');
  });

  test("the overview without conversions explains where to start", () => {
    const page = overviewPage({
      viewer,
      range: "7d",
      overview: { ...overview(0), errorsByCode: [], totals: { ...overview(0).totals, errors: 0 } },
      series: series([0]),
      refused,
      live,
    }).text;
    expect(page).toContain("No conversions yet");
    expect(page).toContain('<a href="/v1/docs">/v1/docs</a>');
  });

  test("the quality guard's re-encodes, in plain words: total of the range, per lossy conversion only, the key's all-time count", () => {
    const o = overview(10);
    const mixed: Overview = {
      ...o,
      totals: { ...o.totals, guardEncodes: 29 },
      byQuality: [
        { quality: "lossy", conversions: 8, bytesIn: 0, bytesOut: 0, bytesSaved: 0, guardEncodes: 29 },
        { quality: "lossless", conversions: 2, bytesIn: 0, bytesOut: 0, bytesSaved: 0, guardEncodes: 0 },
      ],
    };
    const page = overviewPage({ viewer, range: "24h", overview: mixed, series: series([10]), refused, live }).text;
    expect(page).toContain(
      `<div class="card" title="${GUARD_HELP}"><dt>Extra encodes to keep quality</dt><dd data-figure="guard-encodes">29<span class="sub">3.63 per lossy conversion</span>`,
    );
    expect(GUARD_HELP).toStartWith("Quality guard: ");
    expect(page).not.toContain("re-encodes");
    // Without lossy conversions there is nothing to divide by.
    const none = {
      ...o,
      totals: { ...o.totals, guardEncodes: 0 },
      byQuality: [{ quality: "lossless", conversions: 10, bytesIn: 0, bytesOut: 0, bytesSaved: 0, guardEncodes: 0 }],
    };
    expect(overviewPage({ viewer, range: "24h", overview: none, series: series([10]), refused, live }).text).toMatch(
      /data-figure="guard-encodes">0<span class="sub">– per lossy conversion</,
    );
    const keyText = keyPage({
      viewer,
      detail: { key: { ...key, guardEncodes: 1234 }, usage: mixed },
      range: "24h",
      series: series([10]),
      refused,
    }).text;
    expect(keyText).toContain(
      `<dt title="${GUARD_HELP}">All-time extra encodes to keep quality</dt><dd class="num-left">1,234</dd>`,
    );
    expect(keyText).toContain('data-figure="guard-encodes">29<');
  });

  test("the keys page without keys explains how keys are issued", () => {
    const page = keysPage({
      viewer,
      filter: { q: "", status: "all", sort: "created", order: "desc", page: 1, period: "all" },
      keys: { rows: [], total: 0, page: 1, pageSize: 50 },
    }).text;
    expect(page).toContain("No keys yet");
  });
});

describe("settings show no secret", () => {
  const secrets = {
    IMGPRESS_MASTER_KEY: "ab".repeat(32),
    IMGPRESS_SMTP_URL: "smtps://mailer:Sup3r-s3cret@smtp.example.com:465",
    IMGPRESS_DATABASE_URL: "libsql://db.example.com?authToken=tok-in-url-123",
    IMGPRESS_DATABASE_AUTH_TOKEN: "db-token-456",
  };

  test("every secret is redacted, the rest stays readable", () => {
    const rows = describeSettings(loadConfig({ ...secrets, IMGPRESS_DATA_DIR: "/srv/imgpress" }), { reveal: false });
    const text = JSON.stringify(rows);
    for (const needle of ["ab".repeat(32), "Sup3r-s3cret", "tok-in-url-123", "db-token-456"])
      expect(text).not.toContain(needle);
    const value = (env: string) => rows.find((r) => r.env === env)?.value;
    expect(value("IMGPRESS_SMTP_URL")).toBe("smtps://mailer:******@smtp.example.com:465");
    expect(value("IMGPRESS_DATABASE_URL")).toBe("libsql://db.example.com?authToken=******");
    expect(value("IMGPRESS_MASTER_KEY")).toBe("(set)");
    expect(value("IMGPRESS_DATABASE_AUTH_TOKEN")).toBe("(set)");
    expect(value("IMGPRESS_DATA_DIR")).toBe("/srv/imgpress");
    expect(value("IMGPRESS_TLS_CERT")).toBeUndefined();
  });

  test.each([
    ["https://u:p@h/x?token=1&keep=2", "https://u:******@h/x?token=******&keep=2"],
    ["not a url", "not a url"],
    ["postgres://u:p#w@h/db", "postgres://******@h/db"],
    // It parses, as host "imgpress" and port 2024 with no password: masked all the same.
    ["postgres://imgpress:2024#Summer@db.example.lan:5432/imgpress", "postgres://******@db.example.lan:5432/imgpress"],
    ["smtp://user:2024/Su@mmer@smtp.example.com:587", "smtp://******@smtp.example.com:587"],
  ])("redactUrl(%p)", (raw, expected) => expect(redactUrl(raw)).toBe(expected));
});

describe("embedded assets", () => {
  test("src/staff/assets/assets.gen.ts matches src/staff/assets/static/ (run `npm run assets:generate`)", async () => {
    const fresh = await embeddedAssetsSource(new URL("../../../src/staff/assets/static/", import.meta.url));
    expect(await readFile(new URL("../../../src/staff/assets/assets.gen.ts", import.meta.url), "utf8")).toBe(fresh);
  });

  test("names carry a content hash and resolve back to their asset", () => {
    for (const name of ["dashboard.css", "dashboard.js", "favicon.svg"]) {
      const url = assetUrl(name);
      expect(url).toMatch(/^\/internal\/assets\/[a-z]+\.[0-9a-f]{10}\.[a-z]+$/);
      expect(assetAt(url.slice("/internal/assets/".length))?.name).toBe(name);
    }
    expect(assetAt("dashboard.css")).toBeUndefined();
  });
});

describe("activity filters", () => {
  test("an actor not among the staff (the CLI, a removed colleague) stays selected, so Filter keeps it", () => {
    const view = { viewer, rows: [], older: null, types: ["key.revoked"], staff: ["boss@example.com"], problem: null };
    const page = activityPage({ ...view, filter: { type: "", staff: "cli", from: "", to: "", before: null } }).text;
    expect(page).toContain('<option value="cli" selected>cli</option>');
    const anyone = activityPage({ ...view, filter: { type: "", staff: "", from: "", to: "", before: null } }).text;
    expect(anyone).not.toContain('value="cli"');
  });
});

describe("activity links keys", () => {
  test("a key id in an event's subject or detail is a link to that key's page; other text stays text", () => {
    const row = {
      at: T,
      type: "key.revoked",
      actor: "cli",
      subject: "key_0123456789abcdef",
      clientAddress: "",
      detail: { replacedBy: "key_fedcba9876543210", note: "<b>key_nothex</b>" },
    };
    const view = { viewer, rows: [row], older: null, types: [], staff: [], problem: null };
    const page = activityPage({ ...view, filter: { type: "", staff: "", from: "", to: "", before: null } }).text;
    expect(page).toContain('<a class="mono" href="/internal/keys/key_0123456789abcdef">key_0123456789abcdef</a>');
    expect(page).toContain(
      'replacedBy: <a class="mono" href="/internal/keys/key_fedcba9876543210">key_fedcba9876543210</a>',
    );
    expect(page).toContain("&lt;b&gt;key_nothex&lt;/b&gt;");
    expect(page).not.toContain('href="/internal/keys/key_nothex');
  });
});

describe("activity in plain words", () => {
  test("each event shows its plain name with its raw type under it; the Event filter offers the names and filters by type", () => {
    const rows = [
      { at: 0, type: "key.issued", actor: "cli", subject: "key_1", clientAddress: "", detail: {} },
      { at: 0, type: "some.future_type", actor: "", subject: "", clientAddress: "", detail: {} },
    ];
    const page = activityPage({
      viewer,
      rows,
      older: null,
      types: ["key.issued", "staff.sign_in"],
      staff: [],
      problem: null,
      filter: { type: "key.issued", staff: "", from: "", to: "", before: null },
    }).text;
    expect(page).toContain(
      '<td data-label="Event" class="event">Key issued<span class="setting-help mono" title="The event type in the log and the API">key.issued</span></td>',
    );
    // A type without a plain name (one added later) is shown as it is.
    expect(page).toContain('<td data-label="Event" class="event">some.future_type<span');
    expect(page).toContain('<option value="key.issued" selected>Key issued</option>');
    expect(page).toContain('<option value="staff.sign_in">Staff signed in</option>');
  });
});

describe("settings warnings", () => {
  const calm = {
    config: { smtpUrl: "smtp://mail.example:25", allowedEmails: ["@example.com"], host: "0.0.0.0" },
    readiness: { database: "ok", storage: "ok", libvips: "ok", draining: "ok" },
    diskFreeBytes: 50 * 1024 ** 3,
    tls: { source: "file" as const, validUntil: "2030-01-31T00:00:00.000Z", warnings: [] },
    tlsDaysLeft: 30,
  };

  test("none while mail is set, keys are limited, the certificate has 30 days and the disk has room", () => {
    expect(settingsWarnings(calm)).toEqual([]);
    expect(warningList([])).toBeNull();
  });

  test("a certificate within 30 days, or expired, says how to renew it (a generated one by a restart)", () => {
    expect(settingsWarnings({ ...calm, tlsDaysLeft: 29 })).toEqual([
      "The TLS certificate expires in 29 days: renew it and restart imgpress, which reads it at start only.",
    ]);
    expect(settingsWarnings({ ...calm, tls: { ...calm.tls, source: "generated" }, tlsDaysLeft: 1 })).toEqual([
      "The TLS certificate expires in 1 day: restart imgpress, which then makes a new one (clients need the new cert.pem).",
    ]);
    expect(settingsWarnings({ ...calm, tlsDaysLeft: -2 })[0]).toStartWith(
      "The TLS certificate has expired, so clients refuse to connect: renew it",
    );
    // Behind a proxy there is no certificate here to warn about.
    expect(settingsWarnings({ ...calm, tls: { source: "proxy", warnings: [] }, tlsDaysLeft: null })).toEqual([]);
  });

  test("low disk: the readiness check's failure first, else the health line's threshold", () => {
    expect(
      settingsWarnings({
        ...calm,
        readiness: { ...calm.readiness, storage: "only 1000 bytes free in the data folder" },
        diskFreeBytes: 1000,
      }),
    ).toEqual([
      "The data folder's disk fails the readiness check (only 1000 bytes free in the data folder): free space there, or move the data folder to a larger disk.",
    ]);
    expect(settingsWarnings({ ...calm, diskFreeBytes: DISK_LOW_BYTES - 1 })[0]).toStartWith(
      "Only 1.0 GiB free for the database",
    );
    expect(settingsWarnings({ ...calm, diskFreeBytes: null })).toEqual([]);
  });

  test("the open-registration rule is the start-up warning's: * with mail on a reachable address", () => {
    const open = { ...calm, config: { ...calm.config, allowedEmails: ["*"] } };
    expect(settingsWarnings(open)[0]).toStartWith("Anyone who can reach this server may get an API key");
    expect(settingsWarnings({ ...open, config: { ...open.config, host: "127.0.0.1" } })).toEqual([]);
    const page = warningList(settingsWarnings(open))!.text;
    expect(page).toStartWith('<section class="warnings" aria-label="Warnings"><p class="notice warn">');
  });
});

describe("wholePercents", () => {
  test.each([
    [
      [5, 3],
      [63, 37],
    ],
    [
      [1, 1, 1],
      [34, 33, 33],
    ],
    [
      [30, 10],
      [75, 25],
    ],
    [
      [0, 0],
      [0, 0],
    ],
    [[7], [100]],
  ])("%p → %p, adding up to 100", (values, percents) => {
    expect(wholePercents(values)).toEqual(percents);
  });
});

describe("axis labels", () => {
  const DAY = 86_400_000;
  const labels = (days: number, stepMs: number) => {
    const times = Array.from(
      { length: Math.round((days * DAY) / stepMs) },
      (_, i) => Date.UTC(2025, 10, 25) + i * stepMs,
    );
    const svg = timeChart({
      id: "a",
      title: "t",
      times,
      stepMs,
      series: [{ name: "ok", values: times.map(() => 1) }],
      kind: "bars",
    }).text;
    return [...svg.matchAll(/data-f="(\w+)">([^<]*)</g)].map((m) => `${m[1]} ${m[2]}`);
  };
  test("a year's chart names months with their year; a week's, days; a day's, hours", () => {
    expect(labels(365, DAY)[0]).toBe("month 2025-11");
    expect(labels(7, 3_600_000)[0]).toBe("day 11-25");
    expect(labels(1, 3_600_000)[0]).toBe("hour 00:00");
  });
});

test("refused requests: the top clients link a key to its page and name an address; the key page counts its own by code", () => {
  const page = overviewPage({ viewer, range: "24h", overview: overview(5), series: series([1]), refused, live }).text;
  expect(page).toContain('<h2 id="refused-title">Top refused clients</h2>');
  expect(page).toMatch(
    /<tr data-client="key_&lt;i&gt;"><td data-label="Client" class="card-head"><a href="\/internal\/keys\/key_%3Ci%3E">/,
  );
  expect(page).toMatch(/<tr data-client="2001:db8::\/64">/);
  expect(page).toContain("Rejected requests by code");
  // Codes in plain words, the code itself beside them (legend tooltip, muted in the table) for log searches.
  expect(page).toContain('<span class="key" title="INVALID_SIGNATURE" data-code="INVALID_SIGNATURE">');
  expect(page).toMatch(
    /<td data-label="Main code">Bad signature <span class="mono muted">INVALID_<wbr>SIGNATURE<\/span><\/td>/,
  );
  const keyText = keyPage({
    viewer,
    detail: { key, usage: overview(3) },
    range: "24h",
    series: series([3]),
    refused,
  }).text;
  expect(keyText).toMatch(/data-figure="refused">5 <span class="muted">\(Bad signature 4, &lt;b&gt;X&lt;\/b&gt; 1\)/);
  const none = { ...refused, codes: { total: 0, byCode: [] }, top: [] };
  expect(
    overviewPage({ viewer, range: "24h", overview: overview(5), series: series([1]), refused: none, live }).text,
  ).toContain("No request to the public API was refused in this range.");
});
