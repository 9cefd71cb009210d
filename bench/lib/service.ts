// The bench's view of imgpress as a real process (source under Bun, or the compiled binary), on the
// shared harness test/support/imgpress.ts: HTTPS with the server's own certificate, keys through the
// real one-time-code flow (mail caught by the SMTP sink of test/support/smtp.ts), signed requests.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  authHeaders,
  Client,
  cleanEnv,
  type Keys,
  multipart,
  type Proc,
  ROOT,
  startService as startImgpress,
} from "../../test/support/imgpress.ts";
import type { SmtpSink } from "../../test/support/smtp.ts";
import { childEnv, procStatus } from "./util.ts";

export { type Keys, ROOT };

/** The compiled executable of `npm run build`. */
export const BINARY = join(ROOT, "dist", "imgpress");

/** How the bench starts a server. */
export interface ServiceOptions {
  kind: "source" | "binary";
  dataDir: string;
  /** Extraction cache of the compiled binary (IMGPRESS_CACHE_DIR). */
  cacheDir?: string;
  /** Extra environment (e.g. MALLOC_ARENA_MAX for a variant). */
  env?: Record<string, string>;
  /** Another entry file for `source` (to try a change before it is made in src/main.ts). */
  entry?: string;
  /** Where the server's mail goes (needed to obtain keys); without it mail goes to the log. */
  sink?: SmtpSink;
}

/** A running server as the bench measures it. */
export interface Service {
  proc: Proc;
  pid: number;
  base: string;
  ca: string;
  /** Milliseconds from spawn to the first /health = 200. */
  startMs: number;
  /** The sink its mail goes to, if any. */
  sink?: SmtpSink;
  stop(): Promise<void>;
}

/** A fresh temporary folder. */
export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `imgpress-bench-${prefix}-`));
}

/** Spawns the server and resolves once /health answers 200. */
export async function startService(o: ServiceOptions): Promise<Service> {
  const svc = await startImgpress({
    launch: o.kind === "binary" ? { runtime: "binary", file: BINARY } : { runtime: "bun", entry: o.entry },
    dataDir: o.dataDir,
    cwd: o.kind === "binary" ? o.dataDir : ROOT,
    // The bench controls the allocator and libvips settings per run: none inherited.
    baseEnv: cleanEnv(childEnv()),
    // The bench's clients share one key, and its bursts (8 × 20 MB) measure the whole gate: no per-key share.
    env: {
      IMGPRESS_LOG_LEVEL: "info",
      IMGPRESS_ALLOWED_EMAILS: "*",
      IMGPRESS_KEY_MAX_ADMITTED: "10000",
      ...(o.cacheDir ? { IMGPRESS_CACHE_DIR: o.cacheDir } : {}),
      ...(o.sink ? { IMGPRESS_SMTP_URL: o.sink.url } : {}),
      ...o.env,
    },
    startTimeoutMs: 30_000,
  });
  const health = await svc.client.fetch("/health");
  await health.arrayBuffer();
  if (health.status !== 200) throw new Error(`/health answered ${health.status}`);
  return {
    proc: svc.proc,
    pid: svc.proc.pid,
    base: svc.url,
    ca: svc.ca,
    startMs: performance.now() - svc.proc.spawnedAt,
    sink: o.sink,
    async stop() {
      await svc.stop({ keepData: true });
    },
  };
}

/** RSS of the server in KiB right now. */
export function rssKiB(s: Service): number {
  return procStatus(s.pid)?.VmRSS ?? Number.NaN;
}

/** The real one-time-code flow against `s` (started with a sink). */
export async function obtainKeys(s: Service, email = "bench@example.com"): Promise<Keys> {
  if (!s.sink) throw new Error("obtainKeys needs a service started with a sink");
  const { apiKey, secretKey } = await new Client(s.base, s.ca).obtainKeys(s.sink, email, "https://bench.example.com");
  return { apiKey, secretKey };
}

/** A prepared request: exact body bytes and headers. */
export interface ConvertRequest {
  body: Uint8Array;
  headers: Record<string, string>;
}

/** A signed multipart request for /v1/plugin/convert; a fresh random boundary makes every signature unique, as the replay check requires. */
export function signedConvert(
  keys: Keys,
  image: Uint8Array,
  filename: string,
  format: "webp" | "avif" = "webp",
  quality: "lossy" | "lossless" = "lossy",
): ConvertRequest {
  const form = multipart({ format, quality }, image, filename);
  return { body: form.body, headers: { "content-type": form.contentType, ...authHeaders(keys, "signed", form.body) } };
}

/** Status, size and time of one reply. */
export interface Reply {
  status: number;
  bytes: number;
  ms: number;
  error?: string;
}

/** Sends a prepared request and reads the whole reply; `ms` is request start → last byte. */
export async function send(s: { base: string; ca: string }, req: ConvertRequest): Promise<Reply> {
  const t0 = performance.now();
  const res = await fetch(`${s.base}/v1/plugin/convert`, {
    method: "POST",
    headers: req.headers,
    body: req.body,
    tls: { ca: s.ca },
  } as RequestInit);
  const buf = await res.arrayBuffer();
  const ms = performance.now() - t0;
  return {
    status: res.status,
    bytes: buf.byteLength,
    ms,
    ...(res.status !== 200 ? { error: new TextDecoder().decode(buf).slice(0, 300) } : {}),
  };
}
