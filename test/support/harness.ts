/**
 * Builds the real app for unit-level tests, in process, from real parts: a fresh libSQL file in a
 * temporary folder, `loadConfig` over a test environment, the real SMTP mailer talking to an
 * in-process sink, a fixed test master key and a clock the test moves by hand.
 *
 *   const h = await createHarness();
 *   const res = await h.request("POST", "/v1/plugin/auth/request-otp", { json: { email: "a@example.com" } });
 *   h.clock.advance(61_000);
 *   await h.close();
 *
 * Requests go through `app.handle` (no socket). A request built by hand has no TCP peer, so its
 * client IP is "unknown" unless the test passes `ip`, which is attached with `attachMeta` exactly
 * as the runtime entry does.
 */
import { expect } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type App, createApp } from "../../src/app.ts";
import { type Config, loadConfig } from "../../src/core/config.ts";
import { attachMeta } from "../../src/core/http/meta.ts";
import { createLogger } from "../../src/core/log.ts";
import { logMailer, smtpMailer } from "../../src/core/mail/mailer.ts";
import { openStore, type Store } from "../../src/data/db/index.ts";
import type { SqliteStore } from "../../src/data/db/sqlite.ts";
import { loadMasterKey } from "../../src/server/masterkey.ts";
import { createServices, type Services } from "../../src/services.ts";
import { extractOtp, type SinkMessage, type SmtpSink, startSmtpSink } from "./smtp.ts";

/** 32 fixed bytes as hex: the master key of every harness (tests need no secrecy, only stability). */
export const TEST_MASTER_KEY = "0f".repeat(32);

/** 2030-01-01T00:00:00Z: far from any real clock, so a test that forgot the fake clock would notice. */
export const T0 = Date.UTC(2030, 0, 1);

/** A hand-driven clock in Unix milliseconds. */
export interface Clock {
  now: () => number;
  advance(ms: number): void;
  set(ms: number): void;
}

/** A clock that moves only when the test says so. */
export function createClock(start = T0): Clock {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms), set: (ms) => void (t = ms) };
}

/** A response, read once: status, headers, the parsed JSON body (or null) and the raw text. */
export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** Extras of one request: body, headers, client IP. */
export interface RequestOptions {
  /** Serialised as JSON with Content-Type: application/json (unless `headers` sets another type). */
  json?: unknown;
  /** A raw body, sent as is. */
  body?: BodyInit;
  headers?: Record<string, string>;
  /** Client address for rate limiting; absent → the app sees "unknown". */
  ip?: string;
}

/** The in-process app with its parts, for unit-level tests. */
export interface Harness {
  app: App;
  services: Services;
  store: Store;
  /** The same store when it is the default libSQL file (its raw client, for PRAGMAs); throws on PostgreSQL. */
  readonly sqlite: SqliteStore;
  config: Config;
  clock: Clock;
  /** The sink (the mailer delivers elsewhere when a test overrides IMGPRESS_SMTP_URL). */
  smtp: SmtpSink;
  /** Log lines the app wrote (JSON strings). */
  logs: string[];
  /** The temporary data folder (removed by `close`). */
  dir: string;
  /** The database file (`<dir>/imgpress.db` unless IMGPRESS_DATABASE_URL points elsewhere). */
  dbPath: string;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  /** POST /v1/plugin/auth/request-otp. */
  requestOtp(body: Record<string, unknown>, options?: RequestOptions): Promise<TestResponse>;
  /** POST /v1/plugin/auth/verify-otp. */
  verifyOtp(body: Record<string, unknown>, options?: RequestOptions): Promise<TestResponse>;
  /** Requests a code for `email` and returns it, read from the OTP mail the sink received. */
  obtainOtp(email: string, siteUrl?: string, options?: RequestOptions): Promise<{ code: string; mail: SinkMessage }>;
  /** The whole flow: request, read the mail, verify; returns the 200 body (api_key, secret_key…). */
  issueKey(email: string, siteUrl?: string, options?: RequestOptions): Promise<{ api_key: string; secret_key: string }>;
  close(): Promise<void>;
}

/** How a harness is built. */
export interface HarnessOptions {
  /** Environment overrides on top of the harness defaults (data dir, SMTP URL, master key). */
  env?: Record<string, string>;
  /** Reuse a sink (otherwise each harness starts and closes its own). */
  smtp?: SmtpSink;
  clockStart?: number;
}

/** Builds the real app in process on a fresh database, with an SMTP sink and a hand-moved clock. */
export async function createHarness(options: HarnessOptions = {}): Promise<Harness> {
  const dir = await mkdtemp(join(tmpdir(), "imgpress-test-"));
  const ownSink = !options.smtp;
  const smtp = options.smtp ?? (await startSmtpSink());
  let config: Config;
  let store: Store;
  try {
    config = loadConfig({
      IMGPRESS_DATA_DIR: dir,
      IMGPRESS_SMTP_URL: smtp.url,
      IMGPRESS_MAIL_FROM: "imgpress@test.invalid",
      IMGPRESS_MASTER_KEY: TEST_MASTER_KEY,
      IMGPRESS_LOG_LEVEL: "debug",
      ...options.env,
    });
    store = await openStore(config.databaseUrl, {
      authToken: config.databaseAuthToken,
      poolSize: config.databasePoolSize,
      timeoutS: config.databaseTimeoutS,
    });
  } catch (err) {
    // A bad override must not leak the sink or the folder.
    if (ownSink) await smtp.close();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const logs: string[] = [];
  const logger = createLogger(config.logLevel, (line) => logs.push(line));
  const clock = createClock(options.clockStart);
  const deps = {
    config,
    store,
    logger,
    // The development transport only when a test blanks IMGPRESS_SMTP_URL on purpose.
    mailer: config.smtpUrl ? smtpMailer(config.smtpUrl, config.mailFrom) : logMailer((text) => logs.push(text)),
    masterKey: await loadMasterKey(config),
    loadDocsAsset: async () => new Blob(["/* scalar stand-in */"], { type: "text/javascript" }),
    now: clock.now,
  };
  const services = await createServices(deps);
  const app = createApp(deps, services);

  async function request(method: string, path: string, opts: RequestOptions = {}): Promise<TestResponse> {
    const headers = new Headers(opts.headers);
    let body = opts.body;
    if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      if (!headers.has("content-type")) headers.set("content-type", "application/json");
    }
    const req = new Request(`http://localhost${path}`, { method, headers, body });
    if (opts.ip !== undefined) attachMeta(req, opts.ip);
    const res = await app.handle(req);
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  }

  const requestOtp = (json: Record<string, unknown>, opts?: RequestOptions) =>
    request("POST", "/v1/plugin/auth/request-otp", { ...opts, json });
  const verifyOtp = (json: Record<string, unknown>, opts?: RequestOptions) =>
    request("POST", "/v1/plugin/auth/verify-otp", { ...opts, json });

  async function obtainOtp(email: string, siteUrl?: string, opts?: RequestOptions) {
    const before = smtp.messages.length;
    const res = await requestOtp({ email, ...(siteUrl === undefined ? {} : { site_url: siteUrl }) }, opts);
    if (res.status !== 200) throw new Error(`request-otp for ${email} answered ${res.status}: ${res.text}`);
    // The mailer has finished sending when the route answers, so the mail is already in the sink.
    const mail = smtp.messages.slice(before).find((m) => m.subject.includes("code"));
    if (!mail) throw new Error(`no OTP mail for ${email} in the sink`);
    return { code: extractOtp(mail), mail };
  }

  async function issueKey(email: string, siteUrl?: string, opts?: RequestOptions) {
    const { code } = await obtainOtp(email, siteUrl, opts);
    const res = await verifyOtp({ email, otp: code, ...(siteUrl === undefined ? {} : { site_url: siteUrl }) }, opts);
    if (res.status !== 200) throw new Error(`verify-otp for ${email} answered ${res.status}: ${res.text}`);
    return res.body as { api_key: string; secret_key: string };
  }

  return {
    app,
    services,
    store,
    get sqlite() {
      if (store.dialect !== "sqlite")
        throw new Error("this harness runs on PostgreSQL: the test needs the libSQL file");
      return store as SqliteStore;
    },
    config,
    clock,
    smtp,
    logs,
    dir,
    dbPath: config.databaseUrl.startsWith("file:")
      ? config.databaseUrl.slice("file:".length)
      : join(dir, "imgpress.db"),
    request,
    requestOtp,
    verifyOtp,
    obtainOtp,
    issueKey,
    async close() {
      await store.close();
      if (ownSink) await smtp.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The error body of spec 2.3: exactly {error, message, code}, all non-empty strings, as JSON. */
export function expectError(res: TestResponse, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.code }).toEqual({ status, code });
  expect(Object.keys(res.body).sort()).toEqual(["code", "error", "message"]);
  expect(typeof res.body.error).toBe("string");
  expect(typeof res.body.message).toBe("string");
  expect(res.body.error.length).toBeGreaterThan(0);
  expect(res.body.message.length).toBeGreaterThan(0);
  // One spelling for every JSON answer, success or error (clients compare the header as a string).
  expect(res.headers.get("content-type")).toBe("application/json;charset=utf-8");
}

export { wrongCode } from "./codes.ts";
