// `bun bench/dashboard-data.ts` — times the dashboard's data queries (UsageQueries) on the size
// issue #12 names: 10,000 keys and 400 days of hourly buckets for 200 of them. Seeds a fresh
// libSQL file in a temporary folder with seedDemoData, runs each query REPS times after one
// warm-up, prints medians and p95, and removes the folder. Target: p95 < 200 ms for what the
// overview and keys pages need.
//
//   bun bench/dashboard-data.ts                 full size (~1 min to seed on 2 cores)
//   bun bench/dashboard-data.ts --keys=500 --days=30 --busy=20   smaller, for a smoke run
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openSqliteStore as openStore } from "../src/data/db/sqlite.ts";
import { RefusalQueries } from "../src/data/usage/refused-queries.ts";
import { UsageQueries } from "../src/data/usage/service.ts";
import { seedDemoData } from "../test/support/demo-usage.ts";
import { dbSizeMiB, median, p95, table } from "./lib/util.ts";

const arg = (name: string, fallback: number) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback);
const KEYS = arg("keys", 10_000);
const DAYS = arg("days", 400);
const BUSY = arg("busy", 200);
const REPS = arg("reps", 30);
const DAY = 24 * 60 * 60 * 1000;

const dir = mkdtempSync(join(tmpdir(), "imgpress-dashboard-bench-"));
try {
  const store = await openStore(`file:${join(dir, "imgpress.db")}`);
  const now = Date.UTC(2030, 5, 1, 12);
  let t = performance.now();
  const seeded = await seedDemoData(store.db, { keys: KEYS, days: DAYS, busyKeys: BUSY, now });
  const seedS = (performance.now() - t) / 1000;
  const sizeMiB = dbSizeMiB(dir);
  console.log(
    `seeded ${seeded.keys} keys, ${seeded.buckets} bucket rows, ${seeded.refused} refused-request rows in ${seedS.toFixed(1)} s; database ${sizeMiB.toFixed(0)} MiB`,
  );

  const q = new UsageQueries(store, () => now);
  const busiest = (await q.keys({ sort: "conversions", order: "desc", page: 1, pageSize: 1 })).rows[0]!.id;
  const r = new RefusalQueries(store);
  const [refusedRow] = await store.all<{ client: string }>(
    sql`SELECT client FROM refused_hourly WHERE kind = 'key' LIMIT 1`,
  );
  const refusedKey = refusedRow?.client ?? busiest;
  const last = (days: number) => ({ from: now - days * DAY, to: now });
  // What each page asks for, as the dashboard (issue #12) is expected to ask it.
  const cases: [string, () => Promise<unknown>][] = [
    ["overview 24 h", () => q.overview(last(1))],
    ["overview 30 d", () => q.overview(last(30))],
    ["overview 365 d", () => q.overview(last(365))],
    ["series hour × 7 d", () => q.series({ ...last(7), step: "hour" })],
    ["series hour × 30 d", () => q.series({ ...last(30), step: "hour" })],
    ["series day × 365 d", () => q.series({ ...last(365), step: "day" })],
    [
      "series day × 365 d, days of UTC+2 (from hourly rows)",
      () => q.series({ ...last(365), step: "day", utcOffsetMinutes: 120 }),
    ],
    [
      "overview page 30 d (overview + daily series)",
      () => Promise.all([q.overview(last(30)), q.series({ ...last(30), step: "day" })]),
    ],
    [
      "overview page 365 d (overview + daily series)",
      () => Promise.all([q.overview(last(365)), q.series({ ...last(365), step: "day" })]),
    ],
    ["keys page 1, newest", () => q.keys({ page: 1, pageSize: 50 })],
    ["keys sorted by bytes saved", () => q.keys({ sort: "bytesSaved", order: "desc", page: 1, pageSize: 50 })],
    [
      "keys last page by last use",
      () => q.keys({ sort: "lastUsed", order: "asc", page: Math.ceil(KEYS / 50), pageSize: 50 }),
    ],
    ["keys search 'anna'", () => q.keys({ search: "anna", page: 1, pageSize: 50 })],
    // Per-key figures over a range (usage_daily, edge hours, refused_hourly).
    ["top keys 24 h", () => q.topKeys(last(1), 10)],
    ["top keys 365 d", () => q.topKeys(last(365), 10)],
    [
      "keys sorted by 365 d conversions",
      () => q.keys({ sort: "conversions", page: 1, pageSize: 50, range: last(365) }),
    ],
    ["keys sorted by 24 h refused", () => q.keys({ sort: "refused", page: 1, pageSize: 50, range: last(1) })],
    ["keys page 1, newest, 365 d figures", () => q.keys({ page: 1, pageSize: 50, range: last(365) })],
    [
      "key page 365 d (key + daily series)",
      () => Promise.all([q.key(busiest, last(365)), q.series({ ...last(365), step: "day", keyId: busiest })]),
    ],
    ["key series hour × 30 d", () => q.series({ ...last(30), step: "hour", keyId: busiest })],
    // Refused requests with every hour at the recorder's bound (20 named clients + other).
    ["refused: top 10 clients 24 h", () => r.top(last(1), 10)],
    // The 30 d and 365 d pages rank the last 30 days (a year at the bound took ~0.3 s).
    ["refused: top 10 clients 30 d", () => r.top(last(30), 10)],
    [
      "refused: codes + daily series 365 d",
      () => Promise.all([r.codes(last(365)), r.series({ ...last(365), step: "day" })]),
    ],
    [
      "refused: one key, codes + daily series 365 d",
      () =>
        Promise.all([
          r.codes({ ...last(365), keyId: refusedKey }),
          r.series({ ...last(365), step: "day", keyId: refusedKey }),
        ]),
    ],
  ];
  const rows: (string | number)[][] = [];
  for (const [name, run] of cases) {
    await run();
    const times: number[] = [];
    for (let i = 0; i < REPS; i++) {
      t = performance.now();
      await run();
      times.push(performance.now() - t);
    }
    const worst = p95(times);
    rows.push([name, median(times).toFixed(1), worst.toFixed(1), worst < 200 ? "yes" : "NO"]);
  }
  console.log(table(["query", "median ms", "p95 ms", "p95 < 200 ms"], rows));
  store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
