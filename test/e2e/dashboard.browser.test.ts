/**
 * The dashboard in a real browser (Debian's chromium through playwright-core) against the real
 * service over HTTPS: sign in through the forms with the code the SMTP sink caught, see real
 * conversions in the figures and charts, revoke a key from its page and see its next conversion
 * refused, manage staff, and on every page: no request to another origin, no console error, no
 * CSP violation, attacker-chosen text shown as text. Runs against Deno too (`npm run test:deno`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { hasChromium, openBrowser, type TestBrowser } from "../support/browser.ts";
import { convertForm } from "../support/convert-helpers.ts";
import * as img from "../support/images.ts";
import { until } from "../support/ops.ts";
import { type RunningServer, startServer } from "../support/server.ts";
import { extractOtp, type SmtpSink, startSmtpSink } from "../support/smtp.ts";

const STAFF = "boss@example.com";
// Quote, ampersand and other characters HTML cares about, in an address the issuance flow accepts.
const CLIENT_EMAIL = "o'neil&co+{x}@example.com";
const CLIENT_SITE = `https://shop.example/"><script>alert(1)</script>`;
const XSS_LOGIN = `"><script>alert(1)</script>@x.io`;

let sink: SmtpSink;
let server: RunningServer;
let browser: TestBrowser;
let page: Page;
let photo: Buffer;
const keys: Record<string, { api_key: string }> = {};
/** Problems a test provoked on purpose (a refused form answers 400, which chromium logs). */
const expected: string[] = [];

async function issueKey(email: string, siteUrl: string): Promise<{ api_key: string }> {
  const asked = await server.json("POST", "/v1/plugin/auth/request-otp", { email, site_url: siteUrl });
  expect(asked.status).toBe(200);
  const mail = await sink.waitFor((m) => m.envelopeTo.includes(email.toLowerCase()) && /code/i.test(m.subject));
  const verified = await server.json("POST", "/v1/plugin/auth/verify-otp", {
    email,
    otp: extractOtp(mail),
    site_url: siteUrl,
  });
  expect(verified.status).toBe(200);
  return verified.body;
}

async function convert(apiKey: string, format = "webp", image: Buffer = photo): Promise<number> {
  const body = await convertForm(image, { format });
  const res = await server.fetch("/v1/plugin/convert", {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": body.contentType },
    body: body.bytes as Uint8Array<ArrayBuffer>,
  });
  await res.arrayBuffer();
  return res.status;
}

/**
 * Signs in through the two forms, as a person would. `resend`: first asks for a new code on the
 * code form, which within the minute is refused there, saying the code already sent still works.
 */
async function signIn(email: string, { resend = false } = {}): Promise<void> {
  await page.goto(`${server.url}/internal/`);
  expect(new URL(page.url()).pathname).toBe("/internal/login");
  const before = sink.messages.length;
  await page.getByLabel(/e-mail/i).fill(email);
  await page.getByRole("button", { name: /code/i }).click();
  const mail = await sink.waitFor((m) => sink.messages.indexOf(m) >= before && m.envelopeTo.includes(email));
  if (resend) {
    const problems = browser.problems().length;
    await page.getByRole("button", { name: "Send a new code" }).click();
    await page.waitForLoadState("load");
    const countdown = page.locator("[role=alert] [data-countdown]");
    const first = Number((await countdown.innerText()).match(/^in (\d+) s$/)?.[1]);
    expect(first).toBeGreaterThan(1);
    expect(await page.getByRole("alert").ariaSnapshot()).toMatch(
      /^- alert: A new code can be sent in \d+ s; until then the code already sent still works, unless 5 wrong tries ended it\.$/,
    );
    // The wait counts down on the page, in a part that is no live region (a screen reader would read out every second).
    await until(
      async () => Number((await countdown.innerText()).match(/^in (\d+) s$/)?.[1]) < first,
      5_000,
      "the wait to count down",
    );
    expect(await countdown.getAttribute("aria-live")).toBe("off");
    // Nothing typed was wrong: the code field is not marked invalid.
    expect(await page.getByLabel(/code/i).getAttribute("aria-invalid")).toBeNull();
    const provoked = browser.problems().slice(problems);
    expect(provoked).toEqual([expect.stringContaining("status of 429")]);
    expected.push(...provoked);
  }
  await page.getByLabel(/code/i).fill(extractOtp(mail));
  await page.getByRole("button", { name: /sign in/i }).click();
  await page.waitForURL(`${server.url}/internal/`);
}

/** Where each visible e-mail address (.address) on the page wraps: "address: char before|char after" per line break. */
function addressBreaks(): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll(".address")]
      .filter((el) => el.checkVisibility())
      .flatMap((el) => {
        const found: string[] = [];
        const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
        let [prev, lastTop] = ["", Number.NaN];
        for (let node = walker.nextNode() as Text | null; node; node = walker.nextNode() as Text | null) {
          for (let i = 0; i < node.data.length; i++) {
            const range = document.createRange();
            range.setStart(node, i);
            range.setEnd(node, i + 1);
            const top = range.getBoundingClientRect().top;
            if (top > lastTop + 2) found.push(`${el.textContent}: ${prev}|${node.data[i]}`);
            [prev, lastTop] = [node.data[i]!, top];
          }
        }
        return found;
      }),
  );
}

/** The tables on the page that scroll sideways (their wrapper wider inside than out), by caption or class. */
function sideways(): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll(".table-wrap")]
      .filter((el) => el.checkVisibility() && el.scrollWidth > el.clientWidth)
      .map((el) => `${el.getAttribute("aria-labelledby") ?? el.className}: ${el.scrollWidth} > ${el.clientWidth}`),
  );
}

/** The controls a finger must hit that are under 44 px tall: nav, buttons, fields, range, pager and sort links. */
function smallTargets(): Promise<string[]> {
  return page.evaluate(() =>
    [
      ...document.querySelectorAll(
        ".nav a, button, input:not([type=hidden]), select, .segmented a, .pager a, th a.sort, label.check, a.back",
      ),
    ]
      .filter((el) => el.checkVisibility() && el.getBoundingClientRect().height < 44)
      .map((el) => `${el.tagName} "${(el.textContent ?? "").trim()}": ${el.getBoundingClientRect().height} px`),
  );
}

/** Waits until the flushed usage buckets (written every second in this test) hold `count` conversions, as the signed-in page's API reads them. */
async function waitForFlush(count: number): Promise<void> {
  const flushed = () =>
    page.evaluate(async () => {
      const res = await fetch("/internal/api/overview");
      return res.ok ? ((await res.json()) as { totals: { conversions: number } }).totals.conversions : -1;
    });
  await until(async () => (await flushed()) >= count, 15_000, `${count} conversions in the usage buckets`);
}

describe.skipIf(!hasChromium())("dashboard in chromium", () => {
  beforeAll(async () => {
    photo = await img.photo(320, 240);
    sink = await startSmtpSink();
    server = await startServer({
      env: { IMGPRESS_SMTP_URL: sink.url, IMGPRESS_STAFF_EMAILS: STAFF, IMGPRESS_USAGE_FLUSH_S: "1" },
    });
    keys.client = await issueKey(CLIENT_EMAIL, CLIENT_SITE);
    keys.other = await issueKey("other@example.com", "https://other.example");
    // A zone far from UTC, so the test sees that times stay in UTC (and say so) whatever the browser's zone.
    browser = await openBrowser({ origin: server.url, certPem: server.ca, timezoneId: "Asia/Tokyo" });
    page = await browser.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await sink?.close();
  });

  test("an address full of markup on the sign-in form is refused, and nothing runs", async () => {
    await page.goto(`${server.url}/internal/login`);
    const before = browser.problems().length;
    await page.getByLabel(/e-mail/i).fill(XSS_LOGIN);
    // The browser's own e-mail check would stop the form; the server must cope with whatever arrives.
    await page.locator("form").evaluate((form) => form.setAttribute("novalidate", ""));
    await page.getByRole("button", { name: /code/i }).click();
    await page.waitForLoadState("load");
    expect(await page.locator("[role=alert]").innerText()).toContain("email is not a valid address");
    expect(browser.dialogs).toEqual([]);
    const provoked = browser.problems().slice(before);
    expect(provoked).toEqual([expect.stringContaining("status of 400")]);
    expected.push(...provoked);
  });

  test("sign in (asking for a new code too soon on the way), then the overview shows the conversions made", async () => {
    await signIn(STAFF, { resend: true });
    expect(await page.locator(".who .email").innerText()).toBe(STAFF);
    expect(await page.locator("[data-figure=conversions]").innerText()).toStartWith("0");
    expect(await page.locator("main").innerText()).toContain("No conversions yet");

    for (const format of ["webp", "webp", "avif"]) expect(await convert(keys.client!.api_key, format)).toBe(200);
    expect(await convert(keys.other!.api_key)).toBe(200);
    await waitForFlush(4);
    await page.reload();
    expect(await page.locator("[data-figure=conversions]").innerText()).toStartWith("4");
    const chart = page.locator("#overview-conversions svg");
    expect(Number(await chart.getAttribute("data-nonzero"))).toBeGreaterThan(0);
    expect(Number(await chart.getAttribute("data-peak"))).toBe(4);
    expect(await page.locator("#overview-split").innerText()).toContain("webp");
    // The numbers behind the chart, for whoever cannot read its bars: closed until asked for.
    const numbers = page.locator("#overview-conversions table");
    expect(await numbers.isVisible()).toBe(false);
    await page.getByText("Conversions as a table").click();
    expect(await numbers.locator("tbody td").allInnerTexts()).toEqual(["4"]);
    // The lossy AVIF went through the quality guard (on for AVIF by default). How many extra encodes
    // it ran depends on its time bound (a loaded machine may stop it before the WebP reference), so
    // the card must show exactly what the usage buckets hold.
    const [guardTotal, guardShare] = (await page.locator("[data-figure=guard-encodes]").innerText()).split("\n");
    const counted = await page.evaluate(
      async () =>
        ((await (await fetch("/internal/api/overview")).json()) as { totals: { guardEncodes: number } }).totals
          .guardEncodes,
    );
    expect(guardTotal).toBe(String(counted));
    expect(guardShare).toBe(`${(Number(guardTotal) / 4).toFixed(2)} per lossy conversion`);
    expect(
      await page
        .locator(".card:has([data-figure=guard-encodes])")
        .evaluate((card) => card.scrollWidth <= card.clientWidth),
    ).toBe(true);
    for (const range of ["7d", "30d", "365d"]) {
      await page.getByRole("link", { name: range.replace(/(\d+)/, "$1 ") }).click();
      expect(new URL(page.url()).searchParams.get("range")).toBe(range);
      expect(await page.locator("[data-figure=conversions]").innerText()).toStartWith("4");
    }
  });

  test("a chart's step shows its tooltip on a tap and on Tab, with a focus ring; the running step is faded", async () => {
    await page.goto(`${server.url}/internal/?range=24h`);
    const steps = page.locator("#overview-conversions g.step");
    const last = steps.last();
    expect(await last.getAttribute("class")).toContain("partial");
    expect(await last.locator(".bar").evaluate((el) => getComputedStyle(el).fillOpacity)).toBe("0.4");
    const tip = last.locator("text.tip");
    expect(await tip.isVisible()).toBe(false);
    // A tap (here a click) focuses the step: its tooltip stays once the pointer has gone.
    await last.locator(".bar").first().click();
    await page.mouse.move(0, 0);
    await tip.waitFor({ state: "visible" });
    expect(await tip.textContent()).toMatch(/UTC, so far — Conversions: \d+$/);
    // The arrow keys walk the chart's steps; the chart is one Tab stop, on the step last focused.
    await page.keyboard.press("ArrowLeft");
    const focused = page.locator("g.step:focus");
    await focused.locator("text.tip").waitFor({ state: "visible" });
    expect(
      await focused.evaluate(
        (el) =>
          el === el.parentElement!.querySelectorAll("g.step")[el.parentElement!.querySelectorAll("g.step").length - 2],
      ),
    ).toBe(true);
    const ring = await focused.locator(".hit").evaluate((el) => getComputedStyle(el).stroke);
    expect(ring).not.toBe("none");
    expect(await page.locator("#overview-conversions g.step[tabindex='0']").count()).toBe(1);
    await page.keyboard.press("Tab");
    // Tab leaves the steps at once, for the chart's table below it.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Conversions as a table");
  });

  test("the live panel refreshes itself", async () => {
    await page.goto(`${server.url}/internal/`);
    await page.waitForFunction(
      () => document.querySelector("[data-live-status]")?.textContent?.startsWith("updated "),
      null,
      { timeout: 15_000 },
    );
    expect(await page.locator("[data-live='version']").innerText()).toMatch(/^\d+\.\d+\.\d+/);
    // Slots in use are fractional (a small lossy conversion counts a half); the count of conversions is whole.
    expect(await page.locator("[data-live='conversions.slotsBusy']").innerText()).toBe("0.0");
    expect(await page.locator("[data-live='conversions.running']").innerText()).toBe("0");
    expect(await page.locator("[data-live='conversions.abandoned']").innerText()).toBe("0");
  });

  test("the live panel pauses when nobody is there, so the session can time out, and resumes on input", async () => {
    const idle = await browser.newPage();
    await idle.clock.install();
    await idle.goto(`${server.url}/internal/`);
    await idle.waitForFunction(
      () => document.querySelector("[data-live-status]")?.textContent?.startsWith("updated "),
      null,
      { timeout: 15_000 },
    );
    // A screen reader hears changes of state, not the time of every poll: the live region stays
    // silent while polls succeed, and the heading holds no live region.
    const spoken = () => idle.evaluate(() => document.querySelector("[data-live-announce]")?.textContent ?? null);
    await idle.clock.runFor(12_000);
    await idle.waitForFunction(
      () => document.querySelector("[data-live-status]")?.textContent?.startsWith("updated "),
      null,
      { timeout: 15_000 },
    );
    expect(await spoken()).toBe("");
    expect(await idle.locator("#live-title [aria-live]").count()).toBe(0);
    // 30-minute idle timeout by default: the panel stops polling 5 minutes before it (the next
    // poll after the jump sees 26 minutes without input).
    await idle.clock.runFor(26 * 60_000);
    await idle.waitForFunction(
      () => document.querySelector("[data-live-status]")?.textContent?.startsWith("paused while you are away"),
      null,
      { timeout: 15_000 },
    );
    expect(await spoken()).toBe("paused while you are away: click or press a key to resume");
    await idle.mouse.click(5, 5);
    await idle.waitForFunction(
      () => document.querySelector("[data-live-status]")?.textContent?.startsWith("updated "),
      null,
      { timeout: 15_000 },
    );
    expect(await spoken()).toBe("live figures are updating again");
    await idle.close();
  });

  test("the keys page finds a key; its markup-laden site is text", async () => {
    await page.goto(`${server.url}/internal/keys`);
    await page.getByLabel(/search/i).fill("o'neil&co");
    await page.getByRole("button", { name: "Search" }).click();
    const rows = page.locator("tbody tr");
    expect(await rows.count()).toBe(1);
    expect(await rows.locator("td.email").innerText()).toBe(CLIENT_EMAIL);
    // The issuance flow percent-encodes the path; what is left of the markup shows as text.
    expect(await rows.locator("td.site").innerText()).toBe(
      "https://shop.example/%22%3E%3Cscript%3Ealert(1)%3C/script%3E",
    );
    await page
      .getByRole("columnheader", { name: /conversions/i })
      .getByRole("link")
      .click();
    expect(await page.locator("th[aria-sort]").innerText()).toContain("Conversions");
    expect(browser.dialogs).toEqual([]);
  });

  test("the key that converted most in the last 24 h tops Top keys; clicking its row opens it; the keys table sorted by 24 h conversions puts it first", async () => {
    await page.goto(`${server.url}/internal/?range=24h`);
    const top = page.locator("#top-keys-title + p + .table-wrap tbody tr");
    expect(await top.first().locator("td").nth(1).innerText()).toBe(CLIENT_EMAIL);
    expect(await top.first().locator("td").nth(2).innerText()).toBe("3");
    // Anywhere on the row, not only its link (dashboard.js): here the e-mail cell.
    await top.first().locator("td").nth(1).click();
    await page.waitForURL(/\/internal\/keys\/key_/);
    expect(await page.locator(".lead").first().innerText()).toContain(CLIENT_EMAIL);
    await page.goto(`${server.url}/internal/keys`);
    await page.getByRole("navigation", { name: "Range of the figures" }).getByRole("link", { name: "24 h" }).click();
    await page
      .getByRole("columnheader", { name: /conversions/i })
      .getByRole("link")
      .click();
    const url = new URL(page.url());
    expect([url.searchParams.get("period"), url.searchParams.get("sort")]).toEqual(["24h", "conversions"]);
    expect(await page.locator("tbody tr").first().locator("td.email").innerText()).toBe(CLIENT_EMAIL);
    expect(await page.locator("tbody tr").first().locator("td").nth(6).innerText()).toBe("3");
  });

  test("a link from another site (a mail, a chat) opens the page signed in", async () => {
    // A blank document has no origin of its own: following its link is a cross-site navigation.
    await page.goto("about:blank");
    await page.setContent(`<a href="${server.url}/internal/keys">the keys page</a>`);
    await page.getByRole("link", { name: "the keys page" }).click();
    await page.waitForURL((url) => url.origin === new URL(server.url).origin);
    expect(new URL(page.url()).pathname).toBe("/internal/keys");
  });

  test("revoke a key from its page: its next conversion is refused", async () => {
    await page.goto(`${server.url}/internal/keys?q=${encodeURIComponent(CLIENT_EMAIL)}`);
    await page.locator("tbody tr a").first().click();
    expect(await page.locator("[data-figure=conversions]").innerText()).toStartWith("3");
    expect(Number(await page.locator("#key-conversions svg").getAttribute("data-nonzero"))).toBeGreaterThan(0);
    await page.getByRole("button", { name: "Revoke key" }).click();
    await page.waitForURL(/done=revoked/);
    expect(browser.dialogs.at(-1)).toStartWith("confirm: Revoke key");
    expect(await page.locator(".notice").innerText()).toContain("Key revoked");
    expect(await convert(keys.client!.api_key)).toBe(401);
    expect(await convert(keys.other!.api_key)).toBe(200);
  });

  test("a burst of bad signatures from one address tops Top refused clients, turns the health line degraded and shows in the live sparkline", async () => {
    // A made-up key signing junk: refused before any HMAC, counted against the address (the key is unknown).
    const burst = async () => {
      const res = await server.fetch("/v1/plugin/convert", {
        method: "POST",
        headers: {
          "x-api-key": `imp_${"x".repeat(43)}`,
          "x-timestamp": String(Math.floor(Date.now() / 1000)),
          "x-signature": "0".repeat(64),
        },
      });
      await res.arrayBuffer();
      return res.status;
    };
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push(await burst());
    expect(new Set(statuses)).toEqual(new Set([401]));
    await page.setViewportSize({ width: 1280, height: 900 });
    const topRow = page.locator("#refused-title ~ .table-wrap tbody tr").first();
    await until(
      async () => {
        await page.goto(`${server.url}/internal/`);
        // Until the next flush (every second here) the table says nothing was refused.
        if ((await topRow.count()) === 0) return false;
        // A flush may land between the burst's requests (Deno once showed 1 of the 30): wait for them all.
        const refused = Number((await topRow.locator("td").nth(1).innerText()).replace(/,/g, ""));
        return /^(127\.0\.0\.1|0:0:0:0::\/64)$/.test((await topRow.getAttribute("data-client")) ?? "") && refused >= 30;
      },
      15_000,
      "the address at the top of Top refused clients",
    );
    const cells = await topRow.locator("td").allInnerTexts();
    expect(Number(cells[1]!.replace(/,/g, ""))).toBe(30);
    // The code in plain words, the code itself beside them for log searches.
    expect(cells[3]!).toMatch(/^Unknown or revoked key\s+INVALID_API_KEY$/);
    // The revoked key tried once more earlier is a row of its own, linked to its page.
    expect(await page.locator("#refused-title ~ .table-wrap tbody tr a[href^='/internal/keys/key_']").count()).toBe(1);
    expect(await page.locator("[data-health]").getAttribute("data-health")).toBe("degraded");
    expect(await page.locator("[data-health]").innerText()).toMatch(
      /^!?\s*Degraded: 3\d requests refused in the last 15 min/,
    );
    expect(Number(await page.locator("#overview-refused svg").getAttribute("data-peak"))).toBeGreaterThanOrEqual(31);
    // The burst took a few seconds, less than the poll: the sparkline kept it, and the poll redraws it.
    expect(Number(await page.locator("[data-spark=refusedPerS]").getAttribute("data-peak"))).toBeGreaterThan(0);
    await page.waitForFunction(
      () => document.querySelector("[data-live-status]")?.textContent?.startsWith("updated "),
      null,
      { timeout: 15_000 },
    );
    expect(Number(await page.locator("[data-spark=refusedPerS]").getAttribute("data-peak"))).toBeGreaterThan(0);
    await page.screenshot({ path: "/tmp/dash-overview-1280.png", fullPage: true });
    // On a phone nothing on the overview scrolls sideways.
    await page.setViewportSize({ width: 375, height: 800 });
    await page.reload();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.screenshot({ path: "/tmp/dash-overview-375.png", fullPage: true });
    expect(await sideways()).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 900 });
    // The revoked key's page counts its refused request.
    await page.locator("#refused-title ~ .table-wrap tbody tr a[href^='/internal/keys/key_']").click();
    expect(await page.locator("[data-figure=refused]").innerText()).toMatch(/^1 \(Unknown or revoked key 1\)$/);
    await page.screenshot({ path: "/tmp/dash-key-1280.png", fullPage: true });
  });

  test("an error code keeps its colour from range to range: INVALID_IMAGE at 24 h and at 30 d", async () => {
    // A JPEG cut in half is refused as INVALID_IMAGE (422) and counted as the key's error.
    expect(await convert(keys.other!.api_key, "webp", photo.subarray(0, photo.length >> 1))).toBe(422);
    await until(
      () =>
        page.evaluate(async () => {
          const res = await fetch("/internal/api/overview");
          const body = res.ok ? ((await res.json()) as { errorsByCode: { code: string }[] }) : { errorsByCode: [] };
          return body.errorsByCode.some((e) => e.code === "INVALID_IMAGE");
        }),
      15_000,
      "INVALID_IMAGE in the usage buckets",
    );
    const colourAt = async (range: string) => {
      await page.goto(`${server.url}/internal/?range=${range}`);
      const key = page.locator("#overview-errors .legend [data-code=INVALID_IMAGE]");
      expect(await key.innerText()).toBe("Not a readable image");
      const swatch = key.locator(".swatch");
      return [await swatch.getAttribute("class"), await swatch.evaluate((el) => getComputedStyle(el).backgroundColor)];
    };
    const day = await colourAt("24h");
    expect(await colourAt("30d")).toEqual(day);
  });

  test("activity shows the sign-in and the revocation; filters narrow it; times in UTC, said, though the browser is in Tokyo", async () => {
    await page.goto(`${server.url}/internal/activity`);
    const first = page.locator("tbody time").first();
    const at = new Date((await first.getAttribute("datetime"))!);
    const utc = new Intl.DateTimeFormat("en-US", {
      year: "numeric",
      month: "short",
      day: "numeric",
      hour: "numeric",
      minute: "2-digit",
      timeZone: "UTC",
      timeZoneName: "short",
    }).format(at);
    expect(await first.innerText()).toBe(utc);
    expect(utc).toEndWith("UTC");
    expect(await page.locator("footer.zone-note").innerText()).toBe("Every time on these pages is UTC.");
    const text = await page.locator("tbody").innerText();
    // Plain words, with the raw type under them for searching the log.
    expect(text).toContain("Key revoked\nkey.revoked");
    expect(text).toContain("Staff signed in\nstaff.sign_in");
    await page.getByRole("combobox", { name: "Event" }).selectOption("key.revoked");
    await page.getByRole("button", { name: "Filter" }).click();
    const rows = page.locator("tbody tr");
    expect(await rows.count()).toBe(1);
    expect(await rows.innerText()).toContain(STAFF);
    // The revoked key's id is a link to its page.
    await rows.getByRole("link", { name: /^key_/ }).click();
    expect(new URL(page.url()).pathname).toMatch(/^\/internal\/keys\/key_[0-9a-f]{16}$/);
    expect(await page.locator(".badge").first().innerText()).toBe("revoked");
  });

  test("from a filtered keys list to a key and back; revoke all keys of its address only once the box is ticked", async () => {
    const list = `${server.url}/internal/keys?q=other%40example.com&status=active&sort=email&order=asc`;
    await page.goto(list);
    await page.locator("tbody tr a").first().click();
    await page.getByRole("link", { name: "← All keys" }).click();
    expect(page.url()).toBe(list);
    await page.locator("tbody tr a").first().click();
    const keyUrl = page.url();
    const revokeAll = page.getByRole("button", { name: "Revoke all keys of this address" });
    // Not ticked: the browser holds the form back (the box is required), and nothing is revoked.
    await revokeAll.click();
    expect(page.url()).toBe(keyUrl);
    expect(await convert(keys.other!.api_key)).toBe(200);
    await page.getByLabel("Yes, revoke every active key of other@example.com").check();
    await revokeAll.click();
    await page.waitForURL(/done=revoked-all/);
    expect(await page.locator(".notice").innerText()).toContain("1 key of other@example.com revoked.");
    expect(await convert(keys.other!.api_key)).toBe(401);
    await page.getByRole("link", { name: "← All keys" }).click();
    expect(page.url()).toBe(list);
  });

  test("staff & settings: add and remove a colleague; no secret on the page", async () => {
    await page.goto(`${server.url}/internal/settings`);
    await page.getByLabel("Add a staff member").fill("colleague@example.com");
    await page.getByRole("button", { name: "Add" }).click();
    await page.waitForURL(/done=staff-added/);
    const row = page.locator("tr", { hasText: "colleague@example.com" });
    expect(await row.count()).toBe(1);
    // Each Remove button names whom it removes (a screen reader's list of buttons is not ten "Remove").
    await page.getByRole("button", { name: "Remove colleague@example.com", exact: true }).click();
    await page.waitForURL(/done=staff-removed/);
    expect(await page.locator("tr", { hasText: "colleague@example.com" }).count()).toBe(0);
    const body = await page.locator("main").innerText();
    expect(body).toContain("IMGPRESS_MASTER_KEY");
    // The certificate clients see, with the fingerprint the listening line printed, to hand out.
    const listening = server.logs.find((l) => l.json?.msg === "imgpress listening")!.json!;
    const tls = await page
      .locator("section", { has: page.getByRole("heading", { name: "TLS certificate" }) })
      .innerText();
    expect(tls).toContain("self-signed, made by imgpress");
    expect(tls.replace(/\s+/g, "")).toContain(String(listening.certSha256));
    // Each setting's help is on the page, not only in a tooltip.
    expect(await page.locator("tr", { hasText: "IMGPRESS_HOST" }).innerText()).toContain("listen address");
    expect(body).toContain(server.dataDir);
    expect(body).toMatch(/libvips\s+\d+\.\d+/);
    // The page names where the master key lives, never the key itself (the server made it in its data folder).
    const masterKey = Buffer.from((await readFile(join(server.dataDir, "master.key"), "utf8")).trim(), "hex");
    expect(masterKey.length).toBe(32);
    const html = (await page.content()).toLowerCase();
    expect(html).not.toContain(masterKey.toString("hex"));
    expect(html).not.toContain(masterKey.toString("base64").toLowerCase());
  });

  test("a refused staff address stays in its field, marked invalid and described by the reason", async () => {
    await page.goto(`${server.url}/internal/settings`);
    const before = browser.problems().length;
    const field = page.getByLabel("Add a staff member");
    await field.fill("not an address");
    await page.locator("form", { has: field }).evaluate((form) => form.setAttribute("novalidate", ""));
    await page.getByRole("button", { name: "Add" }).click();
    await page.waitForLoadState("load");
    const again = page.getByLabel("Add a staff member");
    expect(await again.inputValue()).toBe("not an address");
    expect(await again.getAttribute("aria-invalid")).toBe("true");
    const reason = await page.locator(`#${await again.getAttribute("aria-describedby")}`).innerText();
    expect(reason).toContain("email is not a valid address");
    const provoked = browser.problems().slice(before);
    expect(provoked).toEqual([expect.stringContaining("status of 400")]);
    expected.push(...provoked);
  });

  test("on a phone: the staff table fits the screen, and the week chart's day labels do not overlap", async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    try {
      await page.goto(`${server.url}/internal/settings`);
      await page.getByLabel("Add a staff member").fill("a-rather-long-colleague-address@example.com");
      await page.getByRole("button", { name: "Add" }).click();
      await page.waitForURL(/done=staff-added/);
      const wraps = page.locator(".table-wrap.compact");
      for (let i = 0; i < (await wraps.count()); i++) {
        expect(await wraps.nth(i).evaluate((el) => el.scrollWidth - el.clientWidth)).toBe(0);
      }
      // Addresses wrap only after @, a dot or a hyphen, never inside a word.
      const breaks = await addressBreaks();
      expect(breaks.some((b) => b.startsWith("a-rather-long-colleague-address@example.com"))).toBe(true);
      expect(breaks.filter((b) => !/[@.-]\|.$/.test(b))).toEqual([]);
      const remove = await page
        .locator("tr", { hasText: "a-rather-long-colleague-address@example.com" })
        .getByRole("button", { name: "Remove" })
        .boundingBox();
      expect(remove!.x + remove!.width).toBeLessThanOrEqual(375);
      // The sessions table is cards, each line as wide as the card: the browser's name is not squeezed into a narrow column.
      const browserCell = page.getByRole("table", { name: "Your active sessions" }).locator("tbody td").nth(2);
      expect((await browserCell.boundingBox())!.width).toBeGreaterThanOrEqual(200);
      // In the keys table, whose e-mail column is narrower than a long mailbox name, the address moves to the next line at its @.
      const long = "averyveryverylongmailboxname@example.com";
      await issueKey(long, "https://long.example");
      await page.goto(`${server.url}/internal/keys`);
      const keyBreaks = (await addressBreaks()).filter((b) => b.startsWith(long));
      expect(keyBreaks).toEqual([`${long}: @|e`]);

      await page.goto(`${server.url}/internal/?range=7d`);
      const axis = page.locator("figure.chart").first().locator("text.tick[data-t]");
      const boxes = (await axis.evaluateAll((els) => els.map((el) => el.getBoundingClientRect().toJSON()))) as {
        left: number;
        right: number;
      }[];
      expect(boxes.length).toBeGreaterThan(3);
      for (let i = 1; i < boxes.length; i++) expect(boxes[i]!.left).toBeGreaterThan(boxes[i - 1]!.right);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  test("on a phone every page fits, key rows are cards showing their status, every control is 44 px tall, settings groups fold", async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    try {
      await page.goto(`${server.url}/internal/keys`);
      const keyPath = (await page.locator("tbody tr a").first().getAttribute("href"))!;
      for (const path of [
        "/internal/?range=7d",
        "/internal/keys",
        keyPath,
        "/internal/activity",
        "/internal/settings",
      ]) {
        await page.goto(`${server.url}${path}`);
        // The overview's live panel writes its figures once polled: measured as filled.
        if (path.includes("range"))
          await page
            .locator("[data-live-status]")
            .filter({ hasText: /^updated/ })
            .waitFor();
        expect(`${path}: ${await page.evaluate(() => document.documentElement.scrollWidth)}`).toBe(`${path}: 375`);
        expect(await sideways()).toEqual([]);
        expect(await smallTargets()).toEqual([]);
      }

      // Keys: each row a card, its key and status badge on the first line, each other cell "Label: value".
      await page.goto(`${server.url}/internal/keys`);
      const row = page.locator("tbody tr").first();
      const card = (await row.boundingBox())!;
      const badge = (await row.locator(".badge").boundingBox())!;
      const key = (await row.locator("td.card-head a").boundingBox())!;
      expect(badge.y - card.y).toBeLessThan(30);
      expect(Math.abs(badge.y + badge.height / 2 - (key.y + key.height / 2))).toBeLessThan(6);
      expect(badge.x + badge.width).toBeLessThanOrEqual(card.x + card.width);
      expect(await row.evaluate((tr) => getComputedStyle(tr).display)).toBe("flex");
      const conversions = row.locator("td[data-label=Conversions]");
      expect(await conversions.evaluate((td) => getComputedStyle(td, "::before").content)).toStartWith(
        '"Conversions: "',
      );
      expect(await conversions.evaluate((td) => getComputedStyle(td).textAlign)).toBe("left");
      // The headings are out of sight but still name the columns; the sortable ones stay, as sort links.
      expect(await page.getByRole("columnheader", { name: "Status" }).boundingBox()).toMatchObject({ width: 1 });
      expect(await page.locator("th a.sort").count()).toBeGreaterThan(3);
      for (const link of await page.locator("th a.sort").all()) expect(await link.isVisible()).toBe(true);

      // Activity: no blank block, whatever the event (one without an address leaves out that line).
      await page.goto(`${server.url}/internal/activity`);
      const blank = await page.evaluate(() =>
        [...document.querySelectorAll("tbody td")]
          .filter((td) => td.checkVisibility() && (td as HTMLElement).innerText.trim() === "")
          .map((td) => td.getAttribute("data-label")),
      );
      expect(blank).toEqual([]);
      expect(await page.locator("tbody tr").count()).toBeGreaterThan(3);

      // The selected range, reached by Tab, shows its ring around it, light and dark.
      for (const colorScheme of ["light", "dark"] as const) {
        await page.emulateMedia({ colorScheme });
        await page.goto(`${server.url}/internal/?range=7d`);
        const selected = page.locator(".segmented a[aria-current=true]");
        for (let i = 0; i < 40 && !(await selected.evaluate((a) => a === document.activeElement)); i++)
          await page.keyboard.press("Tab");
        const ring = await selected.evaluate((a) => {
          const style = getComputedStyle(a);
          const page = getComputedStyle(document.body).backgroundColor;
          return {
            visible: a.matches(":focus-visible"),
            style: style.outlineStyle,
            width: parseFloat(style.outlineWidth),
            offset: parseFloat(style.outlineOffset),
            differs: style.outlineColor !== page && style.outlineColor !== style.backgroundColor,
          };
        });
        expect(ring).toEqual({ visible: true, style: "solid", width: 3, offset: 2, differs: true });
      }
      await page.emulateMedia({ colorScheme: "light" });

      // Settings: each group a <details>, closed and opened again by a tap on its heading.
      await page.goto(`${server.url}/internal/settings`);
      expect(await page.locator("details.group[open]").count()).toBe(6);
      const limits = page.locator("details.group[data-group=limits]");
      const setting = limits.locator("tr", { hasText: "IMGPRESS_MAX_PIXELS" });
      expect(await setting.isVisible()).toBe(true);
      await limits.locator("summary").click();
      expect(await limits.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false);
      expect(await setting.isVisible()).toBe(false);
      await limits.locator("summary").click();
      expect(await setting.isVisible()).toBe(true);
      expect(
        await page
          .locator("details.group[data-group=mail]")
          .getByRole("button", { name: "Send a test e-mail" })
          .isVisible(),
      ).toBe(true);
    } finally {
      await page.emulateMedia({ colorScheme: "light" });
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  test("sign out ends the session; an overview left open goes to sign-in at its next poll, and back to itself after", async () => {
    await page.goto(`${server.url}/internal/?range=7d`);
    await page
      .locator("[data-live-status]")
      .filter({ hasText: /^updated/ })
      .waitFor();
    const before = browser.problems().length;
    // Signed out in another tab of the same browser: the overview's next poll is answered 401.
    const other = await browser.newPage();
    try {
      await other.goto(`${server.url}/internal/keys`);
      await other.getByRole("button", { name: "Sign out", exact: true }).click();
      await other.waitForURL(/\/internal\/login/);
    } finally {
      await other.close();
    }
    // The panel reloads its page, which the server answers with the sign-in form, keeping where to return.
    await page.waitForURL(
      (url) => url.pathname === "/internal/login" && url.searchParams.get("next") === "/internal/?range=7d",
      { timeout: 20_000 },
    );
    const provoked = browser.problems().slice(before);
    for (const problem of provoked) expect(problem).toContain("status of 401");
    expected.push(...provoked);
    await page.goto(`${server.url}/internal/keys`);
    expect(new URL(page.url()).pathname).toBe("/internal/login");
  });

  test("no page requested another origin, logged an error or broke the CSP", () => {
    expect(browser.problems().filter((p) => !expected.includes(p))).toEqual([]);
  });
});
