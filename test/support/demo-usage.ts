import { sql } from "drizzle-orm";
import type { Database } from "../../src/data/db/index.ts";
import { API_KEY_PREFIX } from "../../src/data/keys/service.ts";
import { LATENCY_BINS, latencyBin } from "../../src/data/usage/latency.ts";

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

/** What `seedDemoData` writes. */
export interface DemoOptions {
  /** Keys in api_keys (default 50). */
  keys?: number;
  /** Days of hourly buckets, ending at `now` (default 30; the retention allows 400). */
  days?: number;
  /** Keys with a bucket every hour (default min(keys, 200)); the others get a few scattered days. */
  busyKeys?: number;
  /** End of the data, Unix ms (default: the clock). */
  now?: number;
  /** Seed of the generator: the same options give the same data. */
  seed?: number;
}

const FIRST = [
  "anna",
  "ben",
  "chloe",
  "david",
  "elif",
  "farid",
  "grace",
  "hugo",
  "ines",
  "jonas",
  "kofi",
  "lena",
  "mateo",
  "nora",
  "omar",
  "priya",
  "quentin",
  "rosa",
  "sven",
  "tara",
];
const DOMAINS = ["example.com", "example.org", "example.net", "studio.example", "photo.example", "shop.example"];
const SITES = ["blog", "shop", "portfolio", "news", "recipes", "travel", "gallery", "docs", "wiki", "agency"];
/** (format, quality, share of keys using it, output/input ratio, median pipeline ms, quality guard on) */
const PROFILES = [
  { format: "webp", quality: "lossy", share: 0.55, ratio: 0.32, ms: 90, guard: false },
  // The default IMGPRESS_QUALITY_GUARD=avif checks every lossy AVIF.
  { format: "avif", quality: "lossy", share: 0.25, ratio: 0.21, ms: 380, guard: true },
  { format: "webp", quality: "lossless", share: 0.1, ratio: 0.74, ms: 420, guard: false },
  { format: "avif", quality: "lossless", share: 0.1, ratio: 0.81, ms: 1600, guard: false },
] as const;
/** Column order of the VALUES written below: the bucket tables' figures after their key columns. */
const FIGURES = [
  "count",
  "bytes_in",
  "bytes_out",
  "convert_ms",
  ...Array.from({ length: LATENCY_BINS }, (_, i) => `lat_${i}`),
  "guard_encodes",
].join(", ");
const ERRORS = [
  { code: "INVALID_IMAGE", weight: 5 },
  { code: "FILE_TOO_LARGE", weight: 3 },
  { code: "UNSUPPORTED_FORMAT", weight: 2 },
  { code: "SERVER_BUSY", weight: 2 },
  { code: "IMAGE_TOO_LARGE", weight: 1 },
  { code: "CONVERSION_TIMEOUT", weight: 1 },
] as const;

/**
 * Fills a database with plausible demo keys and usage buckets (for screenshots and benchmarks):
 * keys with fake hashes and secrets that can never authenticate, a Zipf spread of traffic with a
 * daily and weekly rhythm, ~2 % errors, and key counters equal to their buckets' sums.
 * Returns how many bucket rows it wrote. Writes plain SQL text through the SQLite transaction, so
 * it takes the libSQL file's handle (`SqliteStore.db`); nothing on a live PostgreSQL is ever seeded.
 */
export async function seedDemoData(
  db: Database,
  options: DemoOptions = {},
): Promise<{ keys: number; buckets: number; refused: number }> {
  let refused = 0;
  const keyCount = options.keys ?? 50;
  const days = options.days ?? 30;
  const busy = Math.min(options.busyKeys ?? 200, keyCount);
  const end = Math.floor((options.now ?? Date.now()) / HOUR_MS) * HOUR_MS;
  const start = end - days * DAY_MS;
  const random = mulberry32(options.seed ?? 1);
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;

  const keyRows: string[] = [];
  const totals = new Map<string, number[]>();
  let buckets = 0;
  let values: string[] = [];
  // Every value is generated here (no outside text), so plain SQL text is safe and fast.
  await db.transaction(async (tx) => {
    const write = (statement: string) => tx.run(sql.raw(statement));
    const flushValues = async () => {
      if (values.length)
        await write(
          `INSERT INTO usage_hourly (hour, key_id, format, quality, outcome, ${FIGURES}) VALUES ${values.join(",")}`,
        );
      values = [];
    };

    for (let k = 0; k < keyCount; k++) {
      const id = `key_${hex(random, 16)}`;
      const email = `${pick(FIRST)}.${k}@${pick(DOMAINS)}`;
      const site = random() < 0.1 ? "" : `https://${pick(SITES)}-${k}.${pick(DOMAINS)}`;
      const profile = pickProfile(random());
      const isBusy = k < busy;
      // Zipf: the first keys carry most of the traffic, as real deployments do.
      const perHour = isBusy ? 40 / (k + 1) ** 0.8 : 3;
      const createdAt = isBusy
        ? start - Math.floor(random() * 30 * DAY_MS)
        : start + Math.floor(random() * (end - start));
      const hours = isBusy ? range(start, end, HOUR_MS) : scatteredHours(random, Math.max(createdAt, start), end);
      const counter = { conversions: 0, bytesIn: 0, bytesOut: 0, guardEncodes: 0, lastUsed: 0 };
      for (const hour of hours) {
        const attempts = [
          { ...profile, outcome: "ok", count: Math.max(1, poisson(random, perHour * rhythm(hour, start, end))) },
        ];
        if (random() < 0.25)
          attempts.push({ ...pickProfile(random()), outcome: "ok", count: 1 + poisson(random, perHour * 0.1) });
        if (random() < 0.05)
          attempts.push({ ...profile, outcome: pickError(random()), count: 1 + poisson(random, 0.5) });
        const rows = new Map<string, (typeof attempts)[number]>();
        for (const a of attempts) {
          const id = `${a.format}|${a.quality}|${a.outcome}`;
          rows.set(id, { ...a, count: a.count + (rows.get(id)?.count ?? 0) });
        }
        for (const row of rows.values()) {
          const meanIn = row.quality === "lossless" ? 900_000 : 1_400_000;
          const bytesIn = Math.round(row.count * meanIn * (0.6 + random() * 0.8));
          const ok = row.outcome === "ok";
          const bytesOut = ok ? Math.round(bytesIn * row.ratio * (0.8 + random() * 0.4)) : 0;
          const lat = new Array<number>(LATENCY_BINS).fill(0);
          let convertMs = 0;
          let guardEncodes = 0;
          for (let i = 0; i < row.count; i++) {
            const ms = ok ? row.ms * Math.exp(0.5 * gaussian(random)) : 0;
            convertMs += ms;
            lat[latencyBin(ms)]!++;
            if (ok && row.guard) guardEncodes += guardRuns(random);
          }
          values.push(
            `(${hour},'${id}','${row.format}','${row.quality}','${row.outcome}',${row.count},${bytesIn},${bytesOut},${Math.round(convertMs)},${lat.join(",")},${guardEncodes})`,
          );
          if (values.length === 500) await flushValues();
          buckets++;
          const totalId = `${hour},'${row.format}','${row.quality}','${row.outcome}'`;
          const total = totals.get(totalId) ?? new Array<number>(5 + LATENCY_BINS).fill(0);
          for (const [i, n] of [row.count, bytesIn, bytesOut, Math.round(convertMs), ...lat, guardEncodes].entries())
            total[i]! += n;
          totals.set(totalId, total);
          if (ok) {
            counter.conversions += row.count;
            counter.bytesIn += bytesIn;
            counter.bytesOut += bytesOut;
            counter.guardEncodes += guardEncodes;
            counter.lastUsed = Math.max(counter.lastUsed, hour + Math.floor(random() * HOUR_MS));
          }
        }
      }
      const revokedAt = random() < 0.05 ? Math.max(createdAt, counter.lastUsed) + HOUR_MS : null;
      // A documentation address (RFC 5737) for a key that was used, taken from its place (the random sequence stays as it was).
      const lastAddress = counter.lastUsed ? `'198.51.100.${((k * 37) % 254) + 1}'` : "NULL";
      keyRows.push(
        `('${id}','${email}','${site}','demo${hex(random, 60)}','${API_KEY_PREFIX}${hex(random, 8)}','demo:unusable',${createdAt},${counter.lastUsed || null},${lastAddress},${revokedAt},${counter.conversions},${counter.bytesIn},${counter.bytesOut},${counter.guardEncodes})`,
      );
    }
    await flushValues();
    const days = new Map<string, number[]>();
    for (const [id, sums] of totals) {
      const [hour, rest] = [Number(id.slice(0, id.indexOf(","))), id.slice(id.indexOf(","))];
      const dayId = `${Math.floor(hour / DAY_MS) * DAY_MS}${rest}`;
      const day = days.get(dayId) ?? new Array<number>(sums.length).fill(0);
      for (const [i, n] of sums.entries()) day[i]! += n;
      days.set(dayId, day);
    }
    for (const [table, sums] of [
      ["usage_hourly_total", totals],
      ["usage_daily_total", days],
    ] as const) {
      const rows = [...sums].map(([id, values]) => `(${id},${values.join(",")})`);
      const time = table === "usage_daily_total" ? "day" : "hour";
      for (let i = 0; i < rows.length; i += 500)
        await write(
          `INSERT INTO ${table} (${time}, format, quality, outcome, ${FIGURES}) VALUES ${rows.slice(i, i + 500).join(",")}`,
        );
    }
    // The per-key daily rollup, as the recorder's flush writes it (and the migration backfills it).
    await write(
      `INSERT INTO usage_daily (day, key_id, conversions, errors, bytes_in, bytes_out) SELECT (hour / ${DAY_MS}) * ${DAY_MS}, key_id, sum(CASE WHEN outcome = 'ok' THEN count ELSE 0 END), sum(CASE WHEN outcome = 'ok' THEN 0 ELSE count END), sum(CASE WHEN outcome = 'ok' THEN bytes_in ELSE 0 END), sum(CASE WHEN outcome = 'ok' THEN bytes_out ELSE 0 END) FROM usage_hourly GROUP BY 1, 2`,
    );
    for (let i = 0; i < keyRows.length; i += 500) {
      await write(
        `INSERT INTO api_keys (id, email, site_url, key_hash, key_prefix, secret_sealed, created_at, last_used_at, last_address, revoked_at, conversions, bytes_in, bytes_out, guard_encodes) VALUES ${keyRows.slice(i, i + 500).join(",")}`,
      );
    }
    refused = await seedRefused(
      write,
      start,
      end,
      random,
      keyRows.slice(0, 20).map((row) => row.slice(2, row.indexOf("'", 2))),
    );
  });
  return { keys: keyCount, buckets, refused };
}

const REFUSED_CODES = [
  "INVALID_SIGNATURE",
  "INVALID_API_KEY",
  "UNAUTHORIZED",
  "RATE_LIMITED",
  "TIMESTAMP_OUT_OF_RANGE",
  "FILE_TOO_LARGE",
] as const;

/**
 * Refused requests at the recorder's bound every hour (usage/refusals.ts): 20 named clients (scanning
 * addresses from a pool of 300, and a few keys) plus "other", one or two codes each: the most rows a
 * year can hold short of a new code, for the page-time bench. Returns the rows written.
 */
async function seedRefused(
  write: (sql: string) => Promise<unknown>,
  start: number,
  end: number,
  random: () => number,
  keyIds: string[],
): Promise<number> {
  const rows: string[] = [];
  for (let hour = start; hour < end; hour += HOUR_MS) {
    const clients = new Set<string>();
    while (clients.size < 20)
      clients.add(
        random() < 0.1 && keyIds.length
          ? `key|${keyIds[Math.floor(random() * keyIds.length)]}`
          : `address|203.0.${Math.floor(random() * 2)}.${Math.floor(random() * 150)}`,
      );
    for (const id of [...clients, "other|"]) {
      const [kind, client] = id.split("|") as [string, string];
      const codes = new Set([
        REFUSED_CODES[Math.floor(random() * 3)]!,
        REFUSED_CODES[Math.floor(random() * REFUSED_CODES.length)]!,
      ]);
      for (const code of codes)
        rows.push(
          `(${hour},'${kind}','${client}','${code}',${1 + Math.floor(random() * 40)},${hour + Math.floor(random() * HOUR_MS)})`,
        );
    }
  }
  for (let i = 0; i < rows.length; i += 500)
    await write(
      `INSERT INTO refused_hourly (hour, kind, client, code, count, last_at) VALUES ${rows.slice(i, i + 500).join(",")}`,
    );
  await write(
    `INSERT INTO refused_daily_total (day, code, count) SELECT (hour / ${DAY_MS}) * ${DAY_MS}, code, sum(count) FROM refused_hourly GROUP BY 1, 2`,
  );
  return rows.length;
}

function pickProfile(r: number) {
  let acc = 0;
  for (const p of PROFILES) if (r < (acc += p.share)) return p;
  return PROFILES[0];
}

/**
 * Encoder runs the guard adds to one lossy AVIF, shaped like bench/RESULTS.md "Quality guard":
 * always the sample's preset and WebP reference (+2), and for about a third of the images one
 * to a few trial qualities more.
 */
function guardRuns(random: () => number): number {
  return 2 + (random() < 0.35 ? 1 + poisson(random, 0.6) : 0);
}

function pickError(r: number): string {
  const total = ERRORS.reduce((a, e) => a + e.weight, 0);
  let acc = 0;
  for (const e of ERRORS) if (r * total < (acc += e.weight)) return e.code;
  return ERRORS[0].code;
}

/** Traffic by hour of day (peak mid-afternoon UTC), weekday, and slow growth over the period. */
function rhythm(hour: number, start: number, end: number): number {
  const h = new Date(hour).getUTCHours();
  const day = new Date(hour).getUTCDay();
  const daily = 0.25 + 0.75 * Math.max(0, Math.sin(((h - 6) / 24) * 2 * Math.PI));
  const weekly = day === 0 || day === 6 ? 0.6 : 1;
  const growth = 0.5 + 0.5 * ((hour - start) / Math.max(1, end - start));
  return daily * weekly * growth;
}

function range(from: number, to: number, step: number): number[] {
  const out: number[] = [];
  for (let t = from; t < to; t += step) out.push(t);
  return out;
}

/** A quiet key: a few busy hours on a few days. */
function scatteredHours(random: () => number, from: number, to: number): number[] {
  const hours = new Set<number>();
  const span = Math.floor((to - from) / HOUR_MS);
  if (span <= 0) return [];
  for (let i = 0, n = 1 + Math.floor(random() * 6); i < n; i++)
    hours.add(from - (from % HOUR_MS) + Math.floor(random() * span) * HOUR_MS);
  return [...hours].sort((a, b) => a - b);
}

function poisson(random: () => number, mean: number): number {
  if (mean > 30) return Math.max(0, Math.round(mean + Math.sqrt(mean) * gaussian(random)));
  let k = 0;
  for (let p = random(), limit = Math.exp(-mean); p > limit; p *= random()) k++;
  return k;
}

function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

function hex(random: () => number, length: number): string {
  let out = "";
  while (out.length < length) out += Math.floor(random() * 16).toString(16);
  return out;
}

/** A small seeded generator, so a demo database is reproducible. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
