/**
 * Drives a real imgpress process the way a user's client does, for the end-to-end tests
 * (test/support/server.ts), the docs recipes, the smoke test (scripts/smoke/) and the bench
 * (bench/lib/service.ts): start the Bun or Deno source entry or a compiled binary, wait for its
 * "imgpress listening" line, talk HTTPS with its own certificate as the only trusted CA, obtain keys
 * through the real one-time-code flow (the code read from the SMTP sink of ./smtp.ts), send bearer
 * or signed (./sign.ts) conversions, and stop it.
 *
 *   const sink = await startSmtpSink();
 *   const svc = await startService({ launch: { runtime: "bun" }, env: { IMGPRESS_SMTP_URL: sink.url } });
 *   const keys = await svc.client.obtainKeys(sink, "me@example.com");
 *   const res = await svc.client.convert(keys, "signed", multipart({ format: "webp" }, jpeg, "photo.jpg"));
 *   await svc.stop();
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { signedHeaders } from "./sign.ts";
import { extractOtp, type SmtpSink, sixDigitRuns } from "./smtp.ts";

/** The repository root (this file is test/support/imgpress.ts). */
export const ROOT = resolve(import.meta.dir, "../..");

/** What to run: a source entry under Bun (default src/main.ts) or Deno, or a compiled executable (under `runner`, e.g. qemu). */
export type Launch =
  | { runtime: "bun"; entry?: string }
  | { runtime: "deno" }
  | { runtime: "binary"; file: string; runner?: string[] };

/** The argv that runs `launch` (imgpress's own arguments follow); Deno's permissions must name `dataDir`. */
export function launchCommand(launch: Launch, dataDir?: string): string[] {
  switch (launch.runtime) {
    case "bun":
      return [join(ROOT, "node_modules/.bin/bun"), launch.entry ?? join(ROOT, "src/main.ts")];
    case "deno": {
      const { flags, entry } = denoStartTask();
      const dataFlags = dataDir ? [`--allow-read=${dataDir}`, `--allow-write=${dataDir}`] : [];
      return [denoExecutable(), "run", ...flags, ...dataFlags, join(ROOT, entry)];
    }
    case "binary":
      return [...(launch.runner ?? []), launch.file];
  }
}

/**
 * The permission flags and entry of deno.json's "start" task (`./node_modules/.bin/deno run <flags>
 * src/deno.ts`), the one place they are written: the tests run exactly what `deno task start` runs.
 */
export function denoStartTask(): { flags: string[]; entry: string } {
  const config = JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")) as {
    tasks?: Record<string, string | { command?: string }>;
  };
  const task = config.tasks?.start;
  const command = (typeof task === "string" ? task : task?.command) ?? "";
  const words = command.trim().split(/\s+/);
  const flags = words.slice(2, -1);
  const entry = words.at(-1) ?? "";
  if (
    words[0] !== "./node_modules/.bin/deno" ||
    words[1] !== "run" ||
    !entry.endsWith(".ts") ||
    flags.some((f) => !f.startsWith("--"))
  ) {
    throw new Error(
      `deno.json's "start" task must read "./node_modules/.bin/deno run --flag… src/deno.ts", not "${command}"`,
    );
  }
  return { flags, entry };
}

/**
 * Deno from the `deno` devDependency: the native binary once the package's install script has
 * run; where it was skipped `.bin/deno` is a Node wrapper that would not pass SIGTERM on, so let
 * the wrapper place the binary (it does so on its first run) and use that.
 */
export function denoExecutable(): string {
  const wrapper = join(ROOT, "node_modules/.bin/deno");
  const native = join(ROOT, "node_modules/deno/deno");
  if (!existsSync(native)) Bun.spawnSync([wrapper, "--version"], { stdout: "ignore", stderr: "inherit" });
  return existsSync(native) ? native : wrapper;
}

/** The inherited environment minus every IMGPRESS_* variable, so the developer's shell cannot leak in. */
export function cleanEnv(from: Record<string, string | undefined> = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(from)) if (v !== undefined && !k.startsWith("IMGPRESS_")) env[k] = v;
  return env;
}

/** One line a process wrote. */
export interface LogLine {
  /** The raw line as written. */
  raw: string;
  /** The parsed JSON object, or null for a line that is not JSON. */
  json: Record<string, unknown> | null;
  stream: "stdout" | "stderr";
}

/** Lines written by one or more processes in turn, with a way to wait for one (past or future). */
export class LogBook {
  /** Every line so far, oldest first. */
  readonly lines: LogLine[] = [];
  private readonly waiters = new Set<() => void>();

  /** Records a line and wakes the waiters. */
  push(raw: string, stream: LogLine["stream"]): void {
    let json: Record<string, unknown> | null = null;
    try {
      const parsed = JSON.parse(raw);
      if (parsed && typeof parsed === "object") json = parsed;
    } catch {
      json = null;
    }
    this.lines.push({ raw, json, stream });
    this.wake();
  }

  /** Resolves with the first line from index `from` on matching `predicate`; rejects after `timeoutMs` or once `gone()` says no line can come. */
  waitFor(
    predicate: (l: LogLine) => boolean,
    timeoutMs: number,
    what = "matching log line",
    from = 0,
    gone?: () => string | undefined,
  ): Promise<LogLine> {
    return new Promise((resolveLine, reject) => {
      const done = () => (clearTimeout(timer), this.waiters.delete(poll));
      const timer = setTimeout(
        () => (done(), reject(new Error(`no ${what} within ${timeoutMs} ms; output:\n${this.tail()}`))),
        timeoutMs,
      );
      const poll = () => {
        const line = this.lines.slice(from).find(predicate);
        const exit = line ? undefined : gone?.();
        if (line) done(), resolveLine(line);
        else if (exit) done(), reject(new Error(`${exit} before ${what}; output:\n${this.tail()}`));
      };
      this.waiters.add(poll);
      poll();
    });
  }

  /** The last lines, for a failure message. */
  tail(n = 20): string {
    return (
      this.lines
        .slice(-n)
        .map((l) => `  | ${l.raw.length > 400 ? `${l.raw.slice(0, 400)}…` : l.raw}`)
        .join("\n") || "  | (no output)"
    );
  }

  /** Wakes every waiter (a new line, or a process exit). */
  wake(): void {
    for (const w of [...this.waiters]) w();
  }
}

/** A child process whose stdout and stderr lines go into a LogBook. */
export class Proc {
  /** Resolves with the exit status once both streams are drained. */
  readonly exited: Promise<number>;
  /** performance.now() at spawn. */
  readonly spawnedAt = performance.now();
  private readonly sub: Bun.Subprocess<"ignore", "pipe", "pipe">;
  private ended: string | undefined;

  constructor(
    cmd: string[],
    options: { cwd: string; env: Record<string, string>; log?: LogBook },
    readonly log = options.log ?? new LogBook(),
  ) {
    this.sub = Bun.spawn(cmd, { cwd: options.cwd, env: options.env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const pumps = [this.pump(this.sub.stdout, "stdout"), this.pump(this.sub.stderr, "stderr")];
    this.exited = this.sub.exited.then(async (code) => {
      await Promise.all(pumps);
      this.ended = `exited (${this.sub.signalCode ?? code})`;
      this.log.wake();
      return code;
    });
  }

  /** The process id. */
  get pid(): number {
    return this.sub.pid;
  }

  /** "exited (N)" once the process has exited and all its output is in the log, else undefined. */
  gone(): string | undefined {
    return this.ended;
  }

  /** Sends `signal` unless the process has already exited. */
  kill(signal: NodeJS.Signals = "SIGTERM"): void {
    if (this.sub.exitCode === null && this.sub.signalCode === null) this.sub.kill(signal);
  }

  /** The first line written by this process (from now or earlier) matching `predicate`; rejects on exit or timeout. */
  waitForLine(predicate: (l: LogLine) => boolean, timeoutMs: number, what?: string, from = 0): Promise<LogLine> {
    return this.log.waitFor(predicate, timeoutMs, what, from, () => this.gone());
  }

  /** Resolves with the exit status, or kills the process and rejects after `timeoutMs`. */
  async waitExit(timeoutMs: number): Promise<number> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.kill("SIGKILL");
        reject(new Error(`did not exit within ${timeoutMs} ms (killed); output:\n${this.log.tail()}`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async pump(stream: ReadableStream<Uint8Array>, name: LogLine["stream"]): Promise<void> {
    const decoder = new TextDecoder();
    let pending = "";
    for await (const chunk of stream) {
      pending += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = pending.indexOf("\n")) >= 0) {
        this.log.push(pending.slice(0, newline).replace(/\r$/, ""), name);
        pending = pending.slice(newline + 1);
      }
    }
    if (pending) this.log.push(pending, name);
  }
}

/** Runs a command of `launch` (e.g. `["keys", "list"]`) to completion; killed after `timeoutMs`. */
export async function runCommand(
  launch: Launch,
  args: string[],
  options: { cwd: string; env: Record<string, string>; dataDir?: string; timeoutMs?: number },
): Promise<{ code: number; stdout: string; stderr: string }> {
  const sub = Bun.spawn([...launchCommand(launch, options.dataDir), ...args], {
    cwd: options.cwd,
    env: options.env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => sub.kill("SIGKILL"), options.timeoutMs ?? 60_000);
  try {
    const [stdout, stderr, code] = await Promise.all([
      new Response(sub.stdout).text(),
      new Response(sub.stderr).text(),
      sub.exited,
    ]);
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}

/** The credentials verify-otp hands out. */
export interface Keys {
  apiKey: string;
  secretKey: string;
}

/** A multipart body as the exact bytes sent (so a signature covers them) and its content type. */
export interface Multipart {
  body: Uint8Array;
  contentType: string;
}

/** Builds a multipart/form-data body with text `fields` and the `image` part, under a fresh random boundary (so every signature differs). */
export function multipart(
  fields: Record<string, string>,
  image: Uint8Array,
  filename: string,
  type = filename.endsWith(".png") ? "image/png" : "image/jpeg",
): Multipart {
  const boundary = `----imgpress-${randomBytes(12).toString("hex")}`;
  const head = Object.entries(fields).map(
    ([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`,
  );
  const part = `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n`;
  const body = new Uint8Array(
    Buffer.concat([Buffer.from(head.join("") + part), image, Buffer.from(`\r\n--${boundary}--\r\n`)]),
  );
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/** The credential headers of a conversion: a bearer key, or scheme B's signature over `body` (./sign.ts). */
export function authHeaders(
  keys: Keys,
  auth: "bearer" | "signed",
  body: Uint8Array,
  timestamp = Math.floor(Date.now() / 1000),
): Record<string, string> {
  return auth === "bearer" ? { authorization: `Bearer ${keys.apiKey}` } : signedHeaders({ ...keys, timestamp, body });
}

/**
 * An HTTPS client of one server: its certificate is the only trusted CA (none behind a proxy).
 * `headers` go with every request (under the request's own), e.g. the `X-Forwarded-Proto` and
 * `X-Forwarded-For` a proxy would add when talking to an instance behind it directly.
 */
export class Client {
  constructor(
    readonly url: string,
    readonly ca: string,
    readonly timeoutMs = 30_000,
    readonly headers: Record<string, string> = {},
  ) {}

  /** `fetch` of a path of the server. */
  fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(this.headers);
    for (const [name, value] of new Headers(init.headers)) headers.set(name, value);
    return fetch(`${this.url}${path}`, {
      signal: AbortSignal.timeout(this.timeoutMs),
      ...init,
      headers,
      ...(this.ca ? { tls: { ca: this.ca } } : {}),
    } as RequestInit);
  }

  /** Sends JSON and returns status, headers and the parsed body (the text when it is not JSON). */
  async json(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; headers: Headers; body: any }> {
    const res = await this.fetch(path, {
      method,
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    try {
      return { status: res.status, headers: res.headers, body: JSON.parse(text) };
    } catch {
      return { status: res.status, headers: res.headers, body: text };
    }
  }

  /** The real one-time-code flow: request a code, read it from the mail the sink received, exchange it for keys. */
  async obtainKeys(
    sink: SmtpSink,
    email: string,
    siteUrl = "https://blog.example.com",
  ): Promise<Keys & { subject: string }> {
    const seen = sink.messages.length;
    const asked = await this.json("POST", "/v1/plugin/auth/request-otp", { email, site_url: siteUrl });
    if (asked.status !== 200 || asked.body?.status !== "success")
      throw new Error(`request-otp: HTTP ${asked.status} ${JSON.stringify(asked.body)}`);
    const mail = await sink.waitFor(
      (m) =>
        sink.messages.indexOf(m) >= seen &&
        m.envelopeTo.includes(email.toLowerCase()) &&
        sixDigitRuns(m.text).length === 1,
      this.timeoutMs,
    );
    const verified = await this.json("POST", "/v1/plugin/auth/verify-otp", {
      email,
      otp: extractOtp(mail),
      site_url: siteUrl,
    });
    const { api_key: apiKey, secret_key: secretKey } = verified.body ?? {};
    if (verified.status !== 200 || typeof apiKey !== "string" || typeof secretKey !== "string")
      throw new Error(`verify-otp: HTTP ${verified.status} ${JSON.stringify(verified.body)}`);
    return { apiKey, secretKey, subject: mail.subject };
  }

  /** POST /v1/plugin/convert with `form`, authenticated by a bearer key or a signature. */
  convert(keys: Keys, auth: "bearer" | "signed", form: Multipart, timestamp?: number): Promise<Response> {
    const headers = { "content-type": form.contentType, ...authHeaders(keys, auth, form.body, timestamp) };
    return this.fetch("/v1/plugin/convert", { method: "POST", headers, body: form.body as Uint8Array<ArrayBuffer> });
  }
}

/** How to start a service. */
export interface ServiceOptions {
  launch: Launch;
  /** A data folder (IMGPRESS_DATA_DIR); a fresh temporary one when absent (removed by `stop`); `false`: leave it to the service (`./imgpress-data` of `cwd`). */
  dataDir?: string | false;
  /** Working folder (default: the repository root). */
  cwd?: string;
  /** Environment under `env` (default: the inherited one minus IMGPRESS_*). */
  baseEnv?: Record<string, string>;
  /** Extra environment; wins over IMGPRESS_HOST=127.0.0.1 and IMGPRESS_PORT=0. */
  env?: Record<string, string>;
  /** How long to wait for the "imgpress listening" line (default 20 s). */
  startTimeoutMs?: number;
  /** How long a stop may take before SIGKILL (default 15 s). */
  stopTimeoutMs?: number;
  /** Client time limit per request (default 30 s). */
  requestTimeoutMs?: number;
}

/** The fields of the "imgpress listening" line. */
export interface Listening {
  url: string;
  dataDir: string;
  selfSignedCert?: string;
  certSha256?: string;
}

/** A running service: its address, certificate, output and client. */
export interface Service {
  /** e.g. `https://127.0.0.1:40123` (or `http://…` behind a proxy). */
  readonly url: string;
  readonly port: number;
  /** PEM of the served certificate (empty behind a proxy, where the service speaks plain HTTP). */
  readonly ca: string;
  /** The data folder the service reported. */
  readonly dataDir: string;
  /** The listening line of the current start. */
  readonly info: Listening;
  /** The current process. */
  readonly proc: Proc;
  /** The env the service was started with, for commands on the same database. */
  readonly env: Record<string, string>;
  /** Every line written, across restarts. */
  readonly log: LogBook;
  /** A client trusting the current certificate. */
  readonly client: Client;
  /** SIGTERM, waits for the exit and starts again on the same data folder; resolves when listening. */
  restart(): Promise<void>;
  /** SIGTERM (SIGKILL after the stop time limit), waits for the exit; removes a temporary data folder unless `keepData`. */
  stop(options?: { keepData?: boolean }): Promise<number>;
}

/** Starts `imgpress serve` on 127.0.0.1 with a free port and resolves once it logs "imgpress listening". */
export async function startService(options: ServiceOptions): Promise<Service> {
  const ownData = options.dataDir === undefined;
  const dataDir =
    options.dataDir === undefined ? await mkdtemp(join(tmpdir(), "imgpress-e2e-")) : options.dataDir || undefined;
  const env: Record<string, string> = {
    ...(options.baseEnv ?? cleanEnv()),
    IMGPRESS_PORT: "0",
    IMGPRESS_HOST: "127.0.0.1",
    ...(dataDir ? { IMGPRESS_DATA_DIR: dataDir } : {}),
    ...options.env,
  };
  const log = new LogBook();
  let proc!: Proc;
  let info!: Listening;
  let ca = "";
  let client!: Client;

  async function launch(): Promise<void> {
    const from = log.lines.length;
    proc = new Proc([...launchCommand(options.launch, dataDir), "serve"], { cwd: options.cwd ?? ROOT, env, log });
    try {
      const line = await proc.waitForLine(
        (l) => l.json?.msg === "imgpress listening",
        options.startTimeoutMs ?? 20_000,
        'the "imgpress listening" line',
        from,
      );
      info = line.json as unknown as Listening;
      ca = info.url.startsWith("https:")
        ? await readFile(info.selfSignedCert ?? join(info.dataDir, "tls", "cert.pem"), "utf8")
        : "";
      client = new Client(info.url, ca, options.requestTimeoutMs);
    } catch (err) {
      // Never leave a half-started server behind (e.g. one that hangs before listening).
      proc.kill("SIGKILL");
      await proc.exited;
      if (ownData && dataDir) await rm(dataDir, { recursive: true, force: true });
      throw err;
    }
  }

  async function terminate(): Promise<number> {
    proc.kill("SIGTERM");
    return proc.waitExit(options.stopTimeoutMs ?? 15_000);
  }

  await launch();
  return {
    get url() {
      return info.url;
    },
    get port() {
      return Number(new URL(info.url).port);
    },
    get ca() {
      return ca;
    },
    get dataDir() {
      return info.dataDir;
    },
    get info() {
      return info;
    },
    get proc() {
      return proc;
    },
    get client() {
      return client;
    },
    env,
    log,
    async restart() {
      await terminate();
      await launch();
    },
    async stop({ keepData = false } = {}) {
      const code = proc.gone() ? await proc.exited : await terminate();
      if (ownData && !keepData && dataDir) await rm(dataDir, { recursive: true, force: true });
      return code;
    },
  };
}
