/**
 * Starts the REAL service as a child process for end-to-end tests and talks to it over HTTPS with
 * real certificate verification (the self-signed certificate the service generates into
 * `<data dir>/tls/cert.pem` is the only trusted CA).
 *
 *   const server = await startServer({ env: { IMGPRESS_SMTP_URL: sink.url } });
 *   const res = await server.fetch("/health");
 *   await server.stop();
 *
 * The runtime is chosen by E2E_RUNTIME: "bun" (default) runs `bun src/main.ts`; "deno" is reserved
 * for the Deno entry (see `runtimeCommand`).
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/** The repository root (this file is test/support/server.ts). */
export const ROOT = resolve(import.meta.dir, "../..");
const BUN = join(ROOT, "node_modules/.bin/bun");

// ---------------------------------------------------------------- runtime

export type E2eRuntime = "bun" | "deno";

export function e2eRuntime(): E2eRuntime {
  const value = (process.env.E2E_RUNTIME ?? "bun").trim().toLowerCase();
  if (value !== "bun" && value !== "deno") throw new Error(`E2E_RUNTIME must be "bun" or "deno", not "${value}"`);
  return value;
}

/** The argv that runs the imgpress entry point (followed by imgpress's own arguments). */
export function runtimeCommand(runtime: E2eRuntime = e2eRuntime()): string[] {
  switch (runtime) {
    case "bun":
      return [BUN, join(ROOT, "src/main.ts")];
    case "deno":
      // ---------------------------------------------------------------------------------------
      // DENO: to be filled in by the engineer who owns the Deno entry, e.g.
      //   return ["deno", "run", "--allow-net", "--allow-read", "--allow-write", "--allow-env",
      //           "--allow-sys", "--allow-ffi", join(ROOT, "src/main.deno.ts")];
      // Everything else in this file is runtime-neutral (stdout JSON lines, SIGTERM, cert.pem).
      // ---------------------------------------------------------------------------------------
      throw new Error('E2E_RUNTIME="deno" is not yet supported by test/support/server.ts');
  }
}

/** The inherited environment minus every IMGPRESS_* variable, so the developer's shell cannot leak in. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("IMGPRESS_")) env[k] = v;
  return env;
}

// ---------------------------------------------------------------- CLI

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `imgpress <args>` to completion (e.g. `["keys", "list"]`) with `env` on top of a clean environment. */
export async function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const proc = Bun.spawn([...runtimeCommand(), ...args], {
    cwd: ROOT,
    env: { ...baseEnv(), ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

// ---------------------------------------------------------------- server

export interface ServerOptions {
  /** Extra environment (IMGPRESS_SMTP_URL, IMGPRESS_BEHIND_PROXY…); wins over the defaults below. */
  env?: Record<string, string>;
  /** Reuse a data folder (otherwise a fresh temporary one, removed by `stop({ keepData: false })`). */
  dataDir?: string;
  /** How long to wait for the "imgpress listening" line. */
  startTimeoutMs?: number;
}

export interface LogLine {
  /** The raw line as written. */
  raw: string;
  /** The parsed JSON object, or null for a line that is not JSON. */
  json: Record<string, unknown> | null;
  stream: "stdout" | "stderr";
}

export interface RunningServer {
  /** e.g. `https://127.0.0.1:40123` (or `http://…` behind a proxy). */
  url: string;
  port: number;
  dataDir: string;
  /** PEM of the generated certificate (empty behind a proxy, where the service speaks plain HTTP). */
  ca: string;
  /** Every line the process wrote so far, across restarts. */
  logs: LogLine[];
  /** The env the service was started with (data dir, SMTP URL, …), for `runCli` on the same database. */
  env: Record<string, string>;
  /** `fetch` against the server with the generated certificate as the only trusted CA. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Sends JSON and returns status, headers and the parsed body. */
  json(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; headers: Headers; body: any }>;
  /** Resolves with the first log line (past or future) matching `predicate`. */
  waitForLog(predicate: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** Stops (SIGTERM, waits for exit) and starts again on the same data folder; resolves when listening. */
  restart(): Promise<void>;
  /** SIGTERM, then waits for the exit; resolves to the exit status. Removes a temporary data folder unless `keepData`. */
  stop(options?: { keepData?: boolean }): Promise<number>;
}

/** Starts `imgpress serve` on 127.0.0.1 with a free port and waits until it logs "imgpress listening". */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const ownData = !options.dataDir;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), "imgpress-e2e-")));
  const env: Record<string, string> = {
    IMGPRESS_PORT: "0",
    IMGPRESS_HOST: "127.0.0.1",
    IMGPRESS_DATA_DIR: dataDir,
    IMGPRESS_MAIL_FROM: "imgpress@test.invalid",
    ...options.env,
  };
  const logs: LogLine[] = [];
  const waiters = new Set<{ predicate: (l: LogLine) => boolean; resolve: (l: LogLine) => void }>();
  const startTimeoutMs = options.startTimeoutMs ?? 20_000;

  let proc: ReturnType<typeof Bun.spawn> | null = null;
  let readers: Promise<void>[] = [];
  let url = "";
  let port = 0;
  let ca = "";

  const push = (raw: string, stream: LogLine["stream"]) => {
    let json: Record<string, unknown> | null = null;
    try {
      const parsed = JSON.parse(raw);
      if (parsed && typeof parsed === "object") json = parsed;
    } catch {
      json = null;
    }
    const line = { raw, json, stream };
    logs.push(line);
    for (const waiter of [...waiters]) {
      if (waiter.predicate(line)) {
        waiters.delete(waiter);
        waiter.resolve(line);
      }
    }
  };

  const pump = async (stream: ReadableStream<Uint8Array>, name: LogLine["stream"]) => {
    const decoder = new TextDecoder();
    let pending = "";
    for await (const chunk of stream) {
      pending += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = pending.indexOf("\n")) >= 0) {
        push(pending.slice(0, newline).replace(/\r$/, ""), name);
        pending = pending.slice(newline + 1);
      }
    }
    if (pending) push(pending, name);
  };

  function waitForLog(predicate: (l: LogLine) => boolean, timeoutMs = 10_000): Promise<LogLine> {
    const found = logs.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolvePromise, rejectPromise) => {
      const waiter = {
        predicate,
        resolve: (l: LogLine) => {
          clearTimeout(timer);
          resolvePromise(l);
        },
      };
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        rejectPromise(new Error(`no matching log line within ${timeoutMs} ms; log so far:\n${logs.map((l) => l.raw).join("\n")}`));
      }, timeoutMs);
      waiters.add(waiter);
    });
  }

  async function launch(): Promise<void> {
    const already = logs.length;
    const child = Bun.spawn([...runtimeCommand(), "serve"], {
      cwd: ROOT,
      env: { ...baseEnv(), ...env },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    proc = child;
    readers = [pump(child.stdout, "stdout"), pump(child.stderr, "stderr")];
    const listening = waitForLog((l) => logs.indexOf(l) >= already && l.json?.msg === "imgpress listening", startTimeoutMs);
    const exited = child.exited.then((code) => {
      throw new Error(`imgpress exited with ${code} before listening; log:\n${logs.slice(already).map((l) => l.raw).join("\n")}`);
    });
    // Only the race below cares: the loser must not surface later as an unhandled rejection.
    exited.catch(() => {});
    listening.catch(() => {});
    let line: LogLine;
    try {
      line = await Promise.race([listening, exited]);
    } catch (err) {
      // Never leave a half-started server behind (e.g. one that hangs before listening).
      proc = null;
      child.kill("SIGKILL");
      await child.exited;
      if (ownData) await rm(dataDir, { recursive: true, force: true });
      throw err;
    }
    url = String(line.json!.url);
    port = Number(new URL(url).port);
    ca = url.startsWith("https:") ? await readFile(join(dataDir, "tls", "cert.pem"), "utf8") : "";
  }

  async function terminate(): Promise<number> {
    if (!proc) return 0;
    const child = proc;
    proc = null;
    child.kill("SIGTERM");
    const code = await child.exited;
    await Promise.all(readers);
    return code;
  }

  await launch();

  const server: RunningServer = {
    get url() {
      return url;
    },
    get port() {
      return port;
    },
    get ca() {
      return ca;
    },
    dataDir,
    logs,
    env,
    fetch(path, init = {}) {
      return fetch(`${url}${path}`, { ...init, ...(ca ? { tls: { ca } } : {}) } as RequestInit);
    },
    async json(method, path, body, headers = {}) {
      const res = await server.fetch(path, {
        method,
        headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
      return { status: res.status, headers: res.headers, body: parsed };
    },
    waitForLog,
    async restart() {
      await terminate();
      await launch();
    },
    async stop({ keepData = false } = {}) {
      const code = await terminate();
      if (ownData && !keepData) await rm(dataDir, { recursive: true, force: true });
      return code;
    },
  };
  return server;
}
