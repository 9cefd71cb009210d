// `npm run screenshots` — PNG screenshots of every dashboard page into docs/img/, from a seeded
// demo database: desktop (1280 px) and phone (375 px) width, light and dark. The real service runs
// on a temporary data folder; chromium signs in through the forms like a person (the code is read
// from an in-process SMTP sink). Takes about a minute.
import { mkdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { boot } from "../src/server/boot.ts";
import { openBrowser } from "../test/support/browser.ts";
import { seedDemoAudit } from "../test/support/demo-audit.ts";
import { seedDemoData } from "../test/support/demo-usage.ts";
import { startServer } from "../test/support/server.ts";
import { extractOtp, startSmtpSink } from "../test/support/smtp.ts";

const OUT = join(import.meta.dir, "..", "docs", "img");
const STAFF = "admin@example.com";
const VARIANTS = [
  { name: "desktop", width: 1280, height: 800 },
  { name: "phone", width: 375, height: 740 },
] as const;
const SCHEMES = ["light", "dark"] as const;

const say = (msg: string) => console.log(`screenshots: ${msg}`);

const dataDir = await mkdtemp(join(tmpdir(), "imgpress-screenshots-"));
const sink = await startSmtpSink();
try {
  const now = Date.now();
  // Booted on the folder (not just opened) so the database is pinned to the folder's master key
  // before demo keys, whose secrets no key opens, are written; the server started below uses it.
  const { store } = await boot({
    env: { IMGPRESS_DATA_DIR: dataDir },
    loadDocsAsset: async () => new Blob([""]),
    write: () => {},
  });
  const seeded = await seedDemoData(store.db, { keys: 240, days: 400, busyKeys: 24, now, seed: 7 });
  // The activity page's trail: events shaped as the real flows write them, over the demo keys.
  const events = await seedDemoAudit(store, { now });
  store.close();
  say(`seeded ${seeded.keys} keys, ${seeded.buckets} hourly buckets and ${events} audit events`);

  const server = await startServer({ dataDir, env: { IMGPRESS_SMTP_URL: sink.url, IMGPRESS_STAFF_EMAILS: STAFF } });
  const browser = await openBrowser({ origin: server.url, certPem: server.ca });
  try {
    const page = await browser.newPage();
    mkdirSync(OUT, { recursive: true });
    const shoot = async (name: string, path: string, ready?: (p: Page) => Promise<unknown>) => {
      for (const v of VARIANTS) {
        for (const scheme of SCHEMES) {
          await page.setViewportSize({ width: v.width, height: v.height });
          await page.emulateMedia({ colorScheme: scheme });
          await page.goto(`${server.url}${path}`);
          await ready?.(page);
          const file = join(OUT, `${name}-${v.name}-${scheme}.png`);
          // Whole pages, but long tables are cut at 2,400 px: the rest shows nothing new.
          const height = Math.min(2400, await page.evaluate(() => document.documentElement.scrollHeight));
          await page.screenshot({ path: file, fullPage: true, clip: { x: 0, y: 0, width: v.width, height } });
        }
      }
      say(`${name} (${path})`);
    };

    await shoot("login", "/internal/login");
    await page.goto(`${server.url}/internal/login`);
    const before = sink.messages.length;
    await page.getByLabel(/e-mail/i).fill(STAFF);
    await page.getByRole("button", { name: /code/i }).click();
    const mail = await sink.waitFor((m) => sink.messages.indexOf(m) >= before && m.envelopeTo.includes(STAFF));
    await page.getByLabel(/code/i).fill(extractOtp(mail));
    await page.getByRole("button", { name: /sign in/i }).click();
    await page.waitForURL(`${server.url}/internal/`);

    const liveUpdated = (p: Page) =>
      p.waitForFunction(() => document.querySelector("[data-live-status]")?.textContent?.startsWith("updated "), null, {
        timeout: 15_000,
      });
    await shoot("overview", "/internal/?range=30d", liveUpdated);
    await shoot("keys", "/internal/keys?sort=conversions");
    await page.goto(`${server.url}/internal/keys?sort=conversions`);
    const keyPath = await page.locator("tbody tr a").first().getAttribute("href");
    // The row's link carries the list's filter (its query), so the range joins it.
    await shoot("key", `${keyPath}${keyPath?.includes("?") ? "&" : "?"}range=7d`);
    await shoot("activity", "/internal/activity");
    await shoot("settings", "/internal/settings");
    if (browser.problems().length) throw new Error(`browser problems: ${browser.problems().join("; ")}`);
    say(`wrote ${OUT}`);
  } finally {
    await browser.close();
    await server.stop({ keepData: true });
  }
} finally {
  await sink.close();
  await rm(dataDir, { recursive: true, force: true });
}
