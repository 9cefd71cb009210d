// `bun bench/dashboard.ts` — the dashboard as its users feel it, against the real service over HTTPS:
//   1. time to render the overview (every range) and the keys page (newest, sorted, searched, a far
//      page) with 10,000 keys and 400 days of hourly buckets for 200 of them (target p95 < 200 ms);
//   2. the service's memory while a real browser (chromium) keeps the overview open with its live
//      panel refreshing every 5 s and switches range every 30 s (target growth ≤ 50 MiB).
//
//   bun bench/dashboard.ts              full data size, 60 s of live refresh (~2 min on 2 cores)
//   bun bench/dashboard.ts --minutes=10 the 10-minute live session of the target
//   bun bench/dashboard.ts --keys=500 --days=30 --busy=20 --reps=5 --minutes=0.5   smoke run
//   --write                             also replace the "Dashboard" section of bench/RESULTS.md
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { boot } from "../src/server/boot.ts";
import { openBrowser } from "../test/support/browser.ts";
import { seedDemoData } from "../test/support/demo-usage.ts";
import { type RunningServer, startServer } from "../test/support/server.ts";
import { startSmtpSink } from "../test/support/smtp.ts";
import { staffSignInOverHttps } from "../test/support/staff.ts";
import { DASHBOARD_BLOCK, writeSection } from "./lib/results.ts";
import { dbSizeMiB, median, p95, table } from "./lib/util.ts";

const { values: opt } = parseArgs({
  options: {
    keys: { type: "string", default: "10000" },
    days: { type: "string", default: "400" },
    busy: { type: "string", default: "200" },
    reps: { type: "string", default: "20" },
    minutes: { type: "string", default: "1" },
    write: { type: "boolean", default: false },
  },
});
const KEYS = Number(opt.keys);
const DAYS = Number(opt.days);
const BUSY = Number(opt.busy);
const REPS = Number(opt.reps);
const LIVE_MS = Number(opt.minutes) * 60_000;
const STAFF = "bench@example.com";
const RENDER_TARGET_MS = 200;
const GROWTH_TARGET_MIB = 50;

const log = (msg: string) => console.error(`dashboard bench: ${msg}`);

async function renderTimes(server: RunningServer, cookie: string): Promise<(string | number)[][]> {
  const get = async (path: string) => {
    const t = performance.now();
    const res = await server.fetch(path, { headers: { cookie } });
    const body = await res.text();
    if (res.status !== 200 || !body.includes("</html>")) throw new Error(`${path} answered ${res.status}`);
    return performance.now() - t;
  };
  const keysHtml = await (await server.fetch("/internal/keys?sort=conversions", { headers: { cookie } })).text();
  const busiest = /href="(\/internal\/keys\/key_[^"?&]+)/.exec(keysHtml)?.[1];
  const pages: [string, string][] = [
    ["overview 24 h", "/internal/?range=24h"],
    ["overview 7 d", "/internal/?range=7d"],
    ["overview 30 d", "/internal/?range=30d"],
    ["overview 365 d", "/internal/?range=365d"],
    ["keys, newest first", "/internal/keys"],
    ["keys by bytes saved", "/internal/keys?sort=bytesSaved"],
    ["keys search 'anna'", "/internal/keys?q=anna"],
    ["keys sorted by 365 d conversions", "/internal/keys?period=365d&sort=conversions"],
    ["keys sorted by 24 h refused", "/internal/keys?period=24h&sort=refused"],
    [
      `keys page ${Math.ceil(KEYS / 50)} by last use`,
      `/internal/keys?sort=lastUsed&order=asc&page=${Math.ceil(KEYS / 50)}`,
    ],
    ...(busiest ? ([["busiest key, 365 d", `${busiest}?range=365d`]] as [string, string][]) : []),
  ];
  const rows: (string | number)[][] = [];
  for (const [name, path] of pages) {
    await get(path);
    const times: number[] = [];
    for (let i = 0; i < REPS; i++) times.push(await get(path));
    rows.push([name, median(times).toFixed(1), p95(times).toFixed(1), p95(times) < RENDER_TARGET_MS ? "yes" : "NO"]);
    log(`${name}: p95 ${p95(times).toFixed(1)} ms`);
  }
  return rows;
}

/** RSS of the service, from its own live JSON (the same numbers the live panel shows). */
async function rss(server: RunningServer, cookie: string): Promise<number> {
  const res = await server.fetch("/internal/api/live", { headers: { cookie, accept: "application/json" } });
  return ((await res.json()) as { memory: { rss: number } }).memory.rss / 2 ** 20;
}

async function liveSession(
  server: RunningServer,
  cookie: string,
): Promise<{ start: number; end: number; max: number; samples: number; polls: number }> {
  const browser = await openBrowser({ origin: server.url, certPem: server.ca });
  try {
    const [name, value] = cookie.split("=") as [string, string];
    await browser.context.addCookies([
      { name, value, url: server.url, secure: true, httpOnly: true, sameSite: "Strict" },
    ]);
    const page = await browser.newPage();
    let polls = 0;
    page.on("response", (r) => void (r.url().endsWith("/internal/api/live") && polls++));
    const ranges = ["24h", "7d", "30d", "365d"];
    await page.goto(`${server.url}/internal/?range=24h`);
    const start = await rss(server, cookie);
    let max = start;
    let samples = 0;
    const until = Date.now() + LIVE_MS;
    let switched = Date.now();
    for (let i = 1; Date.now() < until; i++) {
      await Bun.sleep(5000);
      // Someone looking at the page now and then: keeps the live panel from pausing, switches range.
      await page.mouse.wheel(0, i % 2 ? 10 : -10);
      if (Date.now() - switched >= 30_000) {
        switched = Date.now();
        await page.goto(`${server.url}/internal/?range=${ranges[i % ranges.length]}`);
      }
      max = Math.max(max, await rss(server, cookie));
      samples++;
    }
    const end = await rss(server, cookie);
    if (browser.problems().length) throw new Error(`browser problems: ${browser.problems().join("; ")}`);
    return { start, end, max: Math.max(max, end), samples, polls };
  } finally {
    await browser.close();
  }
}

const dataDir = await mkdtemp(join(tmpdir(), "imgpress-dashboard-bench-"));
const sink = await startSmtpSink();
let server: RunningServer | undefined;
try {
  log(`seeding ${KEYS} keys, ${DAYS} days of hourly buckets for ${BUSY} of them…`);
  const t0 = performance.now();
  // Booted on the folder (not just opened) so the database is pinned to the folder's master key
  // before demo keys, whose secrets no key opens, are written; the server started below uses it.
  const { store } = await boot({
    env: { IMGPRESS_DATA_DIR: dataDir },
    loadDocsAsset: async () => new Blob([""]),
    write: () => {},
  });
  const seeded = await seedDemoData(store.db, { keys: KEYS, days: DAYS, busyKeys: BUSY, now: Date.now() });
  store.close();
  const dbMiB = dbSizeMiB(dataDir);
  const seedS = (performance.now() - t0) / 1000;
  log(`seeded ${seeded.buckets} bucket rows in ${seedS.toFixed(0)} s (${dbMiB.toFixed(0)} MiB)`);

  server = await startServer({ dataDir, env: { IMGPRESS_SMTP_URL: sink.url, IMGPRESS_STAFF_EMAILS: STAFF } });
  const { cookie } = await staffSignInOverHttps(server, sink, STAFF);
  const renders = await renderTimes(server, cookie);
  log(`live session of ${(LIVE_MS / 60_000).toFixed(1)} min…`);
  const live = await liveSession(server, cookie);
  const growth = live.end - live.start;

  const markdown = [
    "## Dashboard",
    "",
    `\`bun bench/dashboard.ts${opt.minutes !== "1" ? ` --minutes=${opt.minutes}` : ""}\` — the real service over HTTPS with ${KEYS.toLocaleString("en-US")} keys and ${DAYS} days of hourly buckets for ${BUSY} of them (\`seedDemoData\`, ${seeded.buckets.toLocaleString("en-US")} bucket rows, ${dbMiB.toFixed(0)} MiB database), signed in as staff. Time from request to the last byte of the page, ${REPS} requests each after one warm-up; target p95 < ${RENDER_TARGET_MS} ms.`,
    "",
    table(["page", "median ms", "p95 ms", `p95 < ${RENDER_TARGET_MS} ms`], renders),
    "",
    `Memory of the service while chromium keeps the overview open for ${(LIVE_MS / 60_000).toFixed(1)} min (live panel polling /internal/api/live every 5 s: ${live.polls} polls; range switched every 30 s): RSS ${live.start.toFixed(0)} MiB after the first page, ${live.end.toFixed(0)} MiB at the end, at most ${live.max.toFixed(0)} MiB over ${live.samples} samples — growth ${growth.toFixed(1)} MiB (target ≤ ${GROWTH_TARGET_MIB} MiB: ${growth <= GROWTH_TARGET_MIB ? "met" : "MISSED"}).`,
    "",
    `Run ${new Date().toISOString()}.`,
    "",
  ].join("\n");
  console.log(markdown);
  if (opt.write) {
    const file = writeSection(
      DASHBOARD_BLOCK,
      `<!-- dashboard bench: start (written by bench/dashboard.ts --write) -->\n${markdown}<!-- dashboard bench: end -->`,
    );
    log(`wrote the Dashboard section of ${file}`);
  }
} finally {
  await server?.stop({ keepData: true });
  await sink.close();
  await rm(dataDir, { recursive: true, force: true });
}
