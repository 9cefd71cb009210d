// `bun bench/slow-uploads.ts` — issue 37 point 2: slow uploads against a real server, as a bench
// scenario beside the end-to-end test (test/e2e/slow-uploads.e2e.test.ts, whose raw-connection
// helpers it shares). Two scenarios, each on its own server with 2 conversion places and a queue of
// 8, each measured side by side in one run: a legitimate client's conversions alone, then the same
// conversions while the attack runs, plus one legitimate upload paced at 256 KiB/s under attack.
//   - IPv4: four addresses (127.0.0.2–5) with four keys keep 30 slow uploads open each (1 MB
//     declared, one byte a second), reopening as soon as one is answered;
//   - IPv6: one /48 behind a trusted proxy, 40 of its /56s with 3 uploads each, signed with the
//     legitimate client's own api_key and a bogus signature (anyone who saw one signed request can).
// Prints, per scenario, the legitimate conversion times, the extra wait against the 10 s
// bound, the paced upload's answer, the slow uploads open, the attackers' answers and the RSS.
//
//   bun bench/slow-uploads.ts              ~2 min; prints the section
//   bun bench/slow-uploads.ts --write      also replaces its section of bench/RESULTS.md
//   --attack-s=N (20): how long the attack runs before and while the legitimate client measures
import { connect as plainConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { parseArgs } from "node:util";
import { photo } from "../test/support/images.ts";
import { Client, multipart, type Service, startService } from "../test/support/imgpress.ts";
import { attack, slowUpload, type Target } from "../test/support/slow-uploads.ts";
import { startSmtpSink } from "../test/support/smtp.ts";
import { SLOW_UPLOADS_BLOCK, writeSection } from "./lib/results.ts";
import { fmtMs, median, procStatus, progress, table } from "./lib/util.ts";

const { values: opt } = parseArgs({
  options: { "attack-s": { type: "string", default: "20" }, write: { type: "boolean", default: false } },
});
const ATTACK_S = Number(opt["attack-s"]);
/** The bound on a legitimate client's extra wait under attack. */
const EXTRA_WAIT_MS = 10_000;
/** The slowest legitimate upload that must never be cut. */
const PACED_BYTES_PER_S = 256 * 1024;
const PLACES = { IMGPRESS_CONCURRENCY: "2", IMGPRESS_QUEUE_SIZE: "8" };

/** What one scenario measured. */
interface Outcome {
  name: string;
  alone: number[];
  attacked: number[];
  paced: { status: string; ms: number; bytes: number };
  openPeak: number;
  answers: string[];
  rssBeforeKiB: number;
  rssPeakKiB: number;
}

/** One legitimate conversion, checked to succeed; its time in ms. */
async function convertOnce(client: Client, apiKey: string, form: ReturnType<typeof multipart>): Promise<number> {
  const started = performance.now();
  const res = await client.fetch("/v1/plugin/convert", {
    method: "POST",
    body: form.body as Uint8Array<ArrayBuffer>,
    headers: { "content-type": form.contentType, authorization: `Bearer ${apiKey}` },
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`a legitimate conversion got ${res.status}`);
  return performance.now() - started;
}

/** Sends `form` over a raw connection at `bytesPerS`; resolves with the status line and the time to the answer. */
function pacedUpload(
  target: Target,
  head: Record<string, string>,
  form: ReturnType<typeof multipart>,
  bytesPerS: number,
): Promise<{ status: string; ms: number; bytes: number }> {
  const chunk = 16 * 1024;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let answer = "";
    const options = { host: "127.0.0.1", port: target.port };
    const send = () => {
      const lines = Object.entries({ ...head, "content-type": form.contentType, connection: "close" })
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join("");
      socket.write(
        `POST /v1/plugin/convert HTTP/1.1\r\nHost: localhost\r\n${lines}Content-Length: ${form.body.length}\r\n\r\n`,
      );
      let sent = 0;
      const tick = setInterval(
        () => {
          if (socket.destroyed || sent >= form.body.length) return clearInterval(tick);
          socket.write(form.body.subarray(sent, sent + chunk));
          sent += chunk;
        },
        (1000 * chunk) / bytesPerS,
      );
    };
    const socket: Socket = target.ca
      ? tlsConnect({ ...options, ca: target.ca, servername: "localhost", ALPNProtocols: ["http/1.1"] }, send)
      : plainConnect(options, send);
    socket.on("data", (d) => (answer += d.toString("latin1")));
    socket.on("error", reject);
    socket.on("close", () =>
      resolve({
        status: answer.split("\r\n")[0] ?? "(none)",
        ms: performance.now() - started,
        bytes: form.body.length,
      }),
    );
  });
}

/** Samples the server's RSS every 250 ms until stopped; returns the peak in KiB. */
function rssSampler(pid: number): { stop: () => number } {
  let peak = procStatus(pid)?.VmRSS ?? 0;
  const timer = setInterval(() => (peak = Math.max(peak, procStatus(pid)?.VmRSS ?? 0)), 250);
  return {
    stop: () => {
      clearInterval(timer);
      return peak;
    },
  };
}

/** The legitimate client alone, then the attack for ATTACK_S, then the same conversions and a paced upload under it. */
async function measure(
  name: string,
  svc: Service,
  client: Client,
  apiKey: string,
  proxyHead: Record<string, string>,
  startAttack: () => ReturnType<typeof attack>,
): Promise<Outcome> {
  const form = multipart({ format: "webp" }, new Uint8Array(await photo(1280, 960)), "photo.jpg");
  const big = multipart({ format: "webp" }, new Uint8Array(await photo(2400, 1800)), "big.jpg");
  await convertOnce(client, apiKey, form); // warm-up
  const alone: number[] = [];
  for (let i = 0; i < 8; i++) alone.push(await convertOnce(client, apiKey, form));
  const rssBeforeKiB = procStatus(svc.proc.pid)?.VmRSS ?? Number.NaN;
  const rss = rssSampler(svc.proc.pid);
  const siege = startAttack();
  let openPeak = 0;
  const counting = setInterval(() => (openPeak = Math.max(openPeak, siege.conns.size)), 100);
  try {
    progress(`${name}: attack running, the legitimate client waits ${ATTACK_S / 2} s, then measures`);
    await Bun.sleep((ATTACK_S / 2) * 1000);
    const attacked: number[] = [];
    const until = performance.now() + (ATTACK_S / 2) * 1000;
    while (attacked.length < 8 || performance.now() < until) attacked.push(await convertOnce(client, apiKey, form));
    const target = { port: svc.port, ca: svc.ca };
    const paced = await pacedUpload(
      target,
      { authorization: `Bearer ${apiKey}`, ...proxyHead },
      big,
      PACED_BYTES_PER_S,
    );
    return { name, alone, attacked, paced, openPeak, answers: siege.answers, rssBeforeKiB, rssPeakKiB: rss.stop() };
  } finally {
    clearInterval(counting);
    rss.stop();
    await siege.stop();
  }
}

/** Four IPv4 addresses with four keys of their own. */
async function ipv4Scenario(): Promise<Outcome> {
  const sink = await startSmtpSink();
  const svc = await startService({
    launch: { runtime: "bun" },
    env: { ...PLACES, IMGPRESS_SMTP_URL: sink.url, IMGPRESS_ALLOWED_EMAILS: "*" },
  });
  try {
    const attackers: string[] = [];
    for (let i = 0; i < 4; i++) attackers.push((await svc.client.obtainKeys(sink, `attacker${i}@example.com`)).apiKey);
    const legit = await svc.client.obtainKeys(sink, "legit@example.com");
    const target = { port: svc.port, ca: svc.ca };
    return await measure("4 IPv4 addresses, 4 keys", svc, svc.client, legit.apiKey, {}, () =>
      attack(
        (i) => slowUpload(target, { authorization: `Bearer ${attackers[i]}` }, { localAddress: `127.0.0.${2 + i}` }),
        4,
        30,
      ),
    );
  } finally {
    await svc.stop();
    await sink.close();
  }
}

/** One IPv6 /48 behind a trusted proxy, with the legitimate client's api_key and bogus signatures. */
async function ipv6Scenario(): Promise<Outcome> {
  const sink = await startSmtpSink();
  const svc = await startService({
    launch: { runtime: "bun" },
    env: { ...PLACES, IMGPRESS_SMTP_URL: sink.url, IMGPRESS_ALLOWED_EMAILS: "*", IMGPRESS_BEHIND_PROXY: "true" },
  });
  try {
    const proxyHead = { "x-forwarded-proto": "https", "x-forwarded-for": "2001:db8:bb::1" };
    const client = new Client(svc.url, "", 30_000, proxyHead);
    const legit = await client.obtainKeys(sink, "owner@example.com");
    const bogus = () => ({
      "x-api-key": legit.apiKey,
      "x-timestamp": String(Math.floor(Date.now() / 1000)),
      "x-signature": "0".repeat(64),
    });
    const target = { port: svc.port };
    return await measure("one IPv6 /48, the owner's api_key", svc, client, legit.apiKey, proxyHead, () =>
      attack((i) => slowUpload(target, bogus(), { forwardedFor: `2001:db8:aa:${(i * 256).toString(16)}::1` }), 40, 3),
    );
  } finally {
    await svc.stop();
    await sink.close();
  }
}

const kinds = (answers: string[]) => {
  const counts = new Map<string, number>();
  // An upload still open when the attack stopped was answered nothing.
  const kind = (a: string) => a.slice(9, 12) || "still open at the end";
  for (const a of answers) counts.set(kind(a), (counts.get(kind(a)) ?? 0) + 1);
  return [...counts].map(([code, n]) => `${n}× ${code}`).join(", ");
};

function report(outcomes: Outcome[]): string {
  const rows = outcomes.map((o) => {
    const extra = Math.max(...o.attacked) - Math.max(...o.alone);
    return [
      o.name,
      `${fmtMs(median(o.alone))} / ${fmtMs(Math.max(...o.alone))}`,
      `${fmtMs(median(o.attacked))} / ${fmtMs(Math.max(...o.attacked))} (${o.attacked.length})`,
      `${fmtMs(extra)} ${extra < EXTRA_WAIT_MS ? "✓" : "✗"}`,
      `${o.paced.status.slice(9, 12) || o.paced.status} in ${fmtMs(o.paced.ms)} (${(o.paced.bytes / 1024).toFixed(0)} KiB)`,
      String(o.openPeak),
      kinds(o.answers),
      `${(o.rssBeforeKiB / 1024).toFixed(0)} → ${(o.rssPeakKiB / 1024).toFixed(0)} MiB`,
    ];
  });
  return [
    "<!-- slow uploads bench:start (written by bench/slow-uploads.ts --write) -->",
    "## Slow uploads (bench/slow-uploads.ts)",
    "",
    `Each scenario on its own server (2 conversion places, queue of 8, default upload budget and minimum rate): a legitimate`,
    `client's 1280×960 JPEG → WebP conversions alone, then while the attack runs (after ${ATTACK_S / 2} s of it, for ${ATTACK_S / 2} s),`,
    "then one legitimate upload paced at 256 KiB/s under attack. Slow uploads declare 1 MB and send one byte a second,",
    "reopened as soon as they are answered. Target: extra wait (slowest under attack − slowest alone) < 10 s; the paced upload 200.",
    "",
    table(
      [
        "attack",
        "alone p50 / max",
        "under attack p50 / max (n)",
        "extra wait",
        "paced upload",
        "slow uploads open (peak)",
        "attackers' answers",
        "RSS",
      ],
      rows,
    ),
    "<!-- slow uploads bench:end -->",
  ].join("\n");
}

progress("IPv4 scenario");
const v4 = await ipv4Scenario();
progress("IPv6 scenario");
const v6 = await ipv6Scenario();
const markdown = report([v4, v6]);
console.log(`\n${markdown}\n`);
if (opt.write) progress(`wrote ${writeSection(SLOW_UPLOADS_BLOCK, markdown)}`);
