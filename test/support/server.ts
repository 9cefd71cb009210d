/**
 * The end-to-end tests' view of a real service (test/support/imgpress.ts does the work): the
 * runtime is chosen by E2E_RUNTIME, "bun" (default) runs `bun src/main.ts`, "deno" runs
 * `deno run <the flags of deno.json's "start" task> src/deno.ts`.
 *
 *   const server = await startServer({ env: { IMGPRESS_SMTP_URL: sink.url } });
 *   const res = await server.fetch("/health");
 *   await server.stop();
 */
import { afterAll, beforeAll } from "bun:test";
import { cleanEnv, type LogLine, launchCommand, ROOT, runCommand, startService } from "./imgpress.ts";
import { type SmtpSink, startSmtpSink } from "./smtp.ts";

export { denoExecutable, denoStartTask, type LogLine, ROOT } from "./imgpress.ts";

/** A source runtime the end-to-end suite runs under. */
export type E2eRuntime = "bun" | "deno";

/** The runtime named by E2E_RUNTIME (default bun). */
export function e2eRuntime(): E2eRuntime {
  const value = (process.env.E2E_RUNTIME ?? "bun").trim().toLowerCase();
  if (value !== "bun" && value !== "deno") throw new Error(`E2E_RUNTIME must be "bun" or "deno", not "${value}"`);
  return value;
}

/** The argv that runs the imgpress entry point under `runtime`; Deno's permissions must name `dataDir`. */
export function runtimeCommand(runtime: E2eRuntime = e2eRuntime(), dataDir?: string): string[] {
  return launchCommand({ runtime }, dataDir);
}

/** What a finished command printed and its exit status. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `imgpress <args>` to completion (e.g. `["keys", "list"]`) with `env` on top of a clean environment. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runCommand({ runtime: e2eRuntime() }, args, {
    cwd: ROOT,
    env: { ...cleanEnv(), ...env },
    dataDir: dataDirOf(args, env),
  });
}

/** The data folder a command will use: `--data-dir` wins over IMGPRESS_DATA_DIR (as in config.ts). */
function dataDirOf(args: string[], env: Record<string, string>): string | undefined {
  const flag = args.findIndex((a) => a === "--data-dir" || a.startsWith("--data-dir="));
  if (flag >= 0) return args[flag]!.includes("=") ? args[flag]!.slice("--data-dir=".length) : args[flag + 1];
  return env.IMGPRESS_DATA_DIR;
}

/** How an end-to-end test starts the service. */
export interface ServerOptions {
  /** Extra environment (IMGPRESS_SMTP_URL, IMGPRESS_BEHIND_PROXY…); wins over the defaults. */
  env?: Record<string, string>;
  /** Reuse a data folder (otherwise a fresh temporary one, removed by `stop({ keepData: false })`). */
  dataDir?: string;
  /** How long to wait for the "imgpress listening" line. */
  startTimeoutMs?: number;
}

/** A running service as the end-to-end tests use it. */
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
  json(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Headers; body: any }>;
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
  const service = await startService({
    launch: { runtime: e2eRuntime() },
    dataDir: options.dataDir,
    env: { IMGPRESS_MAIL_FROM: "imgpress@test.invalid", ...options.env },
    startTimeoutMs: options.startTimeoutMs,
  });
  const dataDir = service.env.IMGPRESS_DATA_DIR!;
  return {
    get url() {
      return service.url;
    },
    get port() {
      return service.port;
    },
    get ca() {
      return service.ca;
    },
    dataDir,
    logs: service.log.lines,
    env: service.env,
    fetch: (path, init = {}) => service.client.fetch(path, init),
    json: (method, path, body, headers) => service.client.json(method, path, body, headers),
    waitForLog: (predicate, timeoutMs = 10_000) => service.log.waitFor(predicate, timeoutMs),
    restart: () => service.restart(),
    stop: (stopOptions) => service.stop(stopOptions),
    kill: (signal) => service.proc.kill(signal),
    exited: () => service.proc.exited,
  };
}

/**
 * A value a `beforeAll` sets: read through it only inside tests and hooks that run after that
 * hook (reading it earlier throws, naming what is missing).
 */
export function lateBound<T extends object>(what: string, current: () => T | undefined): T {
  return new Proxy({} as T, {
    get(_, property) {
      const target = current();
      if (!target)
        throw new Error(
          `${what} is not started: read it inside a test or a hook that runs after useServer's beforeAll`,
        );
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** An SMTP sink for the enclosing file or describe block: started before its tests, closed after. */
export function useSmtpSink(): SmtpSink {
  let sink: SmtpSink | undefined;
  beforeAll(async () => {
    sink = await startSmtpSink();
  });
  afterAll(async () => {
    await sink?.close();
  });
  return lateBound("the SMTP sink", () => sink);
}

/** How `useServer` starts the service: `env` may be worked out when the sink is up (it is given the sink). */
export interface UseServerOptions extends Omit<ServerOptions, "env"> {
  env?: Record<string, string> | (() => Record<string, string>);
  /** How `afterAll` stops it (keep a data folder the test made itself). */
  keepData?: boolean;
}

/**
 * An SMTP sink and a server that mails through it, for the enclosing file or describe block:
 * both started by a `beforeAll`, stopped by an `afterAll`. The handles are usable in tests and in
 * hooks registered after this call.
 */
export function useServer(options: UseServerOptions = {}): { server: RunningServer; sink: SmtpSink } {
  let sink: SmtpSink | undefined;
  let server: RunningServer | undefined;
  beforeAll(async () => {
    sink = await startSmtpSink();
    const env = typeof options.env === "function" ? options.env() : options.env;
    server = await startServer({ ...options, env: { IMGPRESS_SMTP_URL: sink.url, ...env } });
  }, 60_000);
  afterAll(async () => {
    await server?.stop({ keepData: options.keepData });
    await sink?.close();
  });
  return { server: lateBound("the server", () => server), sink: lateBound("the SMTP sink", () => sink) };
}
