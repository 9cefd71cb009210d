/**
 * Starts the REAL service as a child process for end-to-end tests and talks to it over HTTPS with
 * real certificate verification (the self-signed certificate the service generates into
 * `<data dir>/tls/cert.pem` is the only trusted CA).
 *
 *   const server = await startServer({ env: { IMGPRESS_SMTP_URL: sink.url } });
 *   const res = await server.fetch("/health");
 *   await server.stop();
 *
 * The runtime is chosen by E2E_RUNTIME: "bun" (default) runs `bun src/main.ts`; "deno" runs
 * `deno run <the flags of deno.json's "start" task> src/deno.ts` (see `runtimeCommand`).
 */
import { existsSync, readFileSync } from "node:fs";
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

/**
 * The argv that runs the imgpress entry point (followed by imgpress's own arguments). `dataDir` is
 * the data folder the process will use: Deno's file permissions must name it (Bun has none).
 */
export function runtimeCommand(runtime: E2eRuntime = e2eRuntime(), dataDir?: string): string[] {
  switch (runtime) {
    case "bun":
      return [BUN, join(ROOT, "src/main.ts")];
    case "deno": {
      const { flags, entry } = denoStartTask();
      const dataFlags = dataDir ? [`--allow-read=${dataDir}`, `--allow-write=${dataDir}`] : [];
      return [denoExecutable(), "run", ...flags, ...dataFlags, join(ROOT, entry)];
    }
  }
}

/**
 * The permission flags and entry of deno.json's "start" task (`./node_modules/.bin/deno run <flags>
 * src/deno.ts`), the one place they are written: the tests run exactly what `deno task start` runs.
 * Its read/write scopes name the default data folder; a repeated `--allow-read=…`/`--allow-write=…`
 * adds to them.
 */
export function denoStartTask(): { flags: string[]; entry: string } {
  const config = JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")) as { tasks?: Record<string, string | { command?: string }> };
  const task = config.tasks?.start;
  const command = (typeof task === "string" ? task : task?.command) ?? "";
  const words = command.trim().split(/\s+/);
  const flags = words.slice(2, -1);
  const entry = words.at(-1) ?? "";
  if (words[0] !== "./node_modules/.bin/deno" || words[1] !== "run" || !entry.endsWith(".ts") || flags.some((f) => !f.startsWith("--"))) {
    throw new Error(`deno.json's "start" task must read "./node_modules/.bin/deno run --flag… src/deno.ts", not "${command}"`);
  }
  return { flags, entry };
}

/**
 * Deno from the `deno` devDependency. Its `.bin/deno` is the native binary once the package's
 * install script has run; where install scripts were skipped it is a Node wrapper (bin.cjs) that
 * would not pass SIGTERM on, so let the wrapper place the binary (it does so on its first run) and
 * use that binary directly.
 */
function denoExecutable(): string {
  const wrapper = join(ROOT, "node_modules/.bin/deno");
  const native = join(ROOT, "node_modules/deno/deno");
  if (!existsSync(native)) Bun.spawnSync([wrapper, "--version"], { stdout: "ignore", stderr: "inherit" });
  return existsSync(native) ? native : wrapper;
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
  const proc = Bun.spawn([...runtimeCommand(e2eRuntime(), dataDirOf(args, env)), ...args], {
    cwd: ROOT,
    env: { ...baseEnv(), ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** The data folder a command will use: `--data-dir` wins over IMGPRESS_DATA_DIR (as in config.ts). */
function dataDirOf(args: string[], env: Record<string, string>): string | undefined {
  const flag = args.findIndex((a) => a === "--data-dir" || a.startsWith("--data-dir="));
  if (flag >= 0) return args[flag]!.includes("=") ? args[flag]!.slice("--data-dir=".length) : args[flag + 1];
  return env.IMGPRESS_DATA_DIR;
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
  /** Sends a signal to the running process (SIGTERM mid-burst, SIGKILL for a crash…). */
  kill(signal: NodeJS.Signals): void;
  /** Resolves to the exit status once the process has ended by itself (after `kill`); `restart` then starts afresh. */
  exited(): Promise<number>;
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
    const child = Bun.spawn([...runtimeCommand(e2eRuntime(), dataDir), "serve"], {
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
    kill(signal) {
      proc?.kill(signal);
    },
    async exited() {
      if (!proc) return 0;
      const child = proc;
      const code = await child.exited;
      await Promise.all(readers);
      if (proc === child) proc = null;
      return code;
    },
    async stop({ keepData = false } = {}) {
      const code = await terminate();
      if (ownData && !keepData) await rm(dataDir, { recursive: true, force: true });
      return code;
    },
  };
  return server;
}
