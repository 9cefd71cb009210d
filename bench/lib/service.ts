// Runs imgpress as a real process (source under Bun, or the compiled binary) and talks to it as a
// user's client would: HTTPS with the server's own certificate as the trust anchor, keys obtained
// through the OTP flow (the development log transport prints the code), signed requests (scheme B).
import { createHash, createHmac, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { childEnv, procStatus, sleep } from "./util.ts";

export const ROOT = join(import.meta.dir, "..", "..");
export const BINARY = join(ROOT, "dist", "imgpress");

export interface ServiceOptions {
  kind: "source" | "binary";
  dataDir: string;
  /** Extraction cache of the compiled binary (IMGPRESS_CACHE_DIR). */
  cacheDir?: string;
  /** Extra environment (e.g. MALLOC_ARENA_MAX for a variant). */
  env?: Record<string, string>;
  /** Another entry file for `source` (to try a change before it is made in src/main.ts). */
  entry?: string;
}

export interface Service {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  pid: number;
  base: string;
  ca: string;
  /** Milliseconds from spawn to the first /health = 200. */
  startMs: number;
  /** Everything the server printed on stdout so far. */
  output(): string;
  stop(): Promise<void>;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `imgpress-bench-${prefix}-`));
}

/** Environment of a server: the caller's, minus anything IMGPRESS_* that could change the run. */
function serverEnv(o: ServiceOptions): Record<string, string> {
  const env = childEnv();
  for (const k of Object.keys(env)) if (k.startsWith("IMGPRESS_")) delete env[k];
  Object.assign(env, {
    IMGPRESS_DATA_DIR: o.dataDir,
    IMGPRESS_HOST: "127.0.0.1",
    IMGPRESS_PORT: "0",
    IMGPRESS_LOG_LEVEL: "info",
    IMGPRESS_ALLOWED_EMAILS: "*",
    ...(o.cacheDir ? { IMGPRESS_CACHE_DIR: o.cacheDir } : {}),
    ...o.env,
  });
  return env;
}

/** Spawns the server and resolves once /health answers 200. */
export async function startService(o: ServiceOptions): Promise<Service> {
  const cmd = o.kind === "binary" ? [BINARY] : [process.execPath, o.entry ?? join(ROOT, "src", "main.ts")];
  const t0 = performance.now();
  const proc = Bun.spawn(cmd, { cwd: o.kind === "binary" ? o.dataDir : ROOT, env: serverEnv(o), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  let out = "";
  let err = "";
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>, onText: (t: string) => void) => {
    for await (const chunk of stream) onText(decoder.decode(chunk, { stream: true }));
  };
  void pump(proc.stdout, (t) => (out += t));
  void pump(proc.stderr, (t) => (err += t));

  let listening: { url: string; selfSignedCert?: string } | undefined;
  while (!listening) {
    const line = out.split("\n").find((l) => l.includes('"imgpress listening"'));
    if (line) listening = JSON.parse(line);
    else if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode}:\n${out}\n${err}`);
    else if (performance.now() - t0 > 30_000) throw new Error(`server did not start within 30 s:\n${out}\n${err}`);
    else await sleep(2);
  }
  const base = listening.url.replace("0.0.0.0", "127.0.0.1");
  const ca = readFileSync(listening.selfSignedCert ?? join(o.dataDir, "tls", "cert.pem"), "utf8");
  const health = await fetch(`${base}/health`, { tls: { ca } } as RequestInit);
  if (health.status !== 200) throw new Error(`/health answered ${health.status}`);
  await health.arrayBuffer();
  const startMs = performance.now() - t0;
  return {
    proc,
    pid: proc.pid,
    base,
    ca,
    startMs,
    output: () => out,
    async stop() {
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
      await proc.exited;
      clearTimeout(timer);
    },
  };
}

/** RSS of the server in KiB right now. */
export function rssKiB(s: Service): number {
  return procStatus(s.pid)?.VmRSS ?? Number.NaN;
}

export interface Keys {
  apiKey: string;
  secretKey: string;
}

/** The real OTP flow: request a code, read it from the server's log (development transport), verify. */
export async function obtainKeys(s: Service, email = "bench@example.com"): Promise<Keys> {
  const before = s.output().length;
  const post = (path: string, body: unknown) =>
    fetch(`${s.base}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), tls: { ca: s.ca } } as RequestInit);
  const r1 = await post("/v1/plugin/auth/request-otp", { email, site_url: "https://bench.example.com" });
  if (r1.status !== 200) throw new Error(`request-otp answered ${r1.status}: ${await r1.text()}`);
  let code: string | undefined;
  for (let i = 0; i < 500 && !code; i++) {
    code = /sign-in code is:\s*(\d{6})/.exec(s.output().slice(before))?.[1];
    if (!code) await sleep(10);
  }
  if (!code) throw new Error("no OTP code appeared in the server log");
  const r2 = await post("/v1/plugin/auth/verify-otp", { email, otp: code, site_url: "https://bench.example.com" });
  const body = (await r2.json()) as { api_key?: string; secret_key?: string };
  if (r2.status !== 200 || !body.api_key || !body.secret_key) throw new Error(`verify-otp answered ${r2.status}: ${JSON.stringify(body)}`);
  return { apiKey: body.api_key, secretKey: body.secret_key };
}

export interface ConvertRequest {
  body: Uint8Array;
  headers: Record<string, string>;
}

const sha256Hex = (data: Uint8Array | string) => createHash("sha256").update(data).digest("hex");

/**
 * A signed multipart request for /v1/plugin/convert (scheme B): the signature is
 * HMAC-SHA256(secret, "POST\n/plugin/convert\n<ts>\n<sha256 hex of the raw body>"). A fresh random
 * boundary makes every body (and so every signature) unique, as the replay check requires.
 */
export function signedConvert(keys: Keys, image: Uint8Array, filename: string, format: "webp" | "avif" = "webp", quality: "lossy" | "lossless" = "lossy"): ConvertRequest {
  const boundary = `----imgpress-bench-${randomBytes(12).toString("hex")}`;
  const type = filename.endsWith(".png") ? "image/png" : "image/jpeg";
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="format"\r\n\r\n${format}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="quality"\r\n\r\n${quality}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const body = new Uint8Array(Buffer.concat([head, image, tail]));
  const ts = String(Math.floor(Date.now() / 1000));
  const signature = createHmac("sha256", keys.secretKey).update(`POST\n/plugin/convert\n${ts}\n${sha256Hex(body)}`).digest("hex");
  return {
    body,
    headers: {
      "content-type": `multipart/form-data; boundary=${boundary}`,
      "x-api-key": keys.apiKey,
      "x-timestamp": ts,
      "x-signature": signature,
    },
  };
}

export interface Reply {
  status: number;
  bytes: number;
  ms: number;
  error?: string;
}

/** Sends a prepared request and reads the whole reply; `ms` is request start → last byte. */
export async function send(s: { base: string; ca: string }, req: ConvertRequest): Promise<Reply> {
  const t0 = performance.now();
  const res = await fetch(`${s.base}/v1/plugin/convert`, { method: "POST", headers: req.headers, body: req.body, tls: { ca: s.ca } } as RequestInit);
  const buf = await res.arrayBuffer();
  const ms = performance.now() - t0;
  return { status: res.status, bytes: buf.byteLength, ms, ...(res.status !== 200 ? { error: new TextDecoder().decode(buf).slice(0, 300) } : {}) };
}
