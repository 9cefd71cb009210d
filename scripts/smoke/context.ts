// What the stages of one binary share, and the few things they all do with it.
import { join } from "node:path";
import { type Launch, runCommand, type Service, startService } from "../../test/support/imgpress.ts";
import type { SmtpSink } from "../../test/support/smtp.ts";
import type { Photo } from "./photo.ts";
import { assert, type Report } from "./report.ts";
import type { Limits, Target } from "./target.ts";

/** One binary's run: where it lives, how it is started, and what the stages report to. */
export interface Smoke {
  t: Target;
  /** Prefix of every line, e.g. "arm64 qemu". */
  tag: string;
  lim: Limits;
  report: Report;
  /** The binary's temporary folder (run/, home/, xdg-cache/, tmpdir/). */
  tmp: string;
  /** The working folder the binary is copied into and started from. */
  run: string;
  exe: string;
  launch: Launch;
  /** The environment of every run: nothing inherited but PATH. */
  env: Record<string, string>;
  /** The native-library cache under $XDG_CACHE_HOME. */
  cacheDir: string;
  /** `./imgpress-data` of the working folder (the default data folder). */
  dataDir: string;
  certPath: string;
  email: string;
  version: string;
  photo: Photo;
  sink: SmtpSink;
  /** Every service started, killed at the end whatever happened. */
  services: Service[];
}

/** The environment of every run of `t` in `tmp`: nothing inherited but PATH, so no IMGPRESS_* of the caller leaks in. */
export function baseEnv(tmp: string, t: Target): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(tmp, "home"),
    XDG_CACHE_HOME: join(tmp, "xdg-cache"),
    TMPDIR: join(tmp, "tmpdir"),
    LANG: "C.UTF-8",
  };
  if (t.emulated) {
    // Room for slow emulated encoders; the defaults fit real hardware.
    env.IMGPRESS_CONVERT_TIMEOUT_S = "600";
    env.IMGPRESS_QUEUE_TIMEOUT_S = "600";
    env.IMGPRESS_UPLOAD_TIMEOUT_S = "600";
  }
  return env;
}

/** Starts `serve` from the working folder, mail to the sink; `env` adds to the base environment. */
export async function startServe(s: Smoke, env: Record<string, string> = {}): Promise<Service> {
  const svc = await startService({
    launch: s.launch,
    dataDir: false,
    cwd: s.run,
    baseEnv: s.env,
    env: { IMGPRESS_SMTP_URL: s.sink.url, ...env },
    startTimeoutMs: s.lim.start,
    stopTimeoutMs: s.lim.stop,
    requestTimeoutMs: s.lim.request,
  });
  s.services.push(svc);
  return svc;
}

/** SIGTERM: the service must exit 0 after logging "stopped". */
export async function stopServe(svc: Service): Promise<string> {
  const code = await svc.stop();
  assert(code === 0, `exit status ${code} after SIGTERM; output:\n${svc.log.tail()}`);
  assert(
    svc.log.lines.some((l) => l.json?.msg === "stopped"),
    `no "stopped" log line; output:\n${svc.log.tail()}`,
  );
  return "exit 0 after SIGTERM";
}

/** Runs a command of the binary to completion from the working folder. */
export function cli(
  s: Smoke,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return runCommand(s.launch, args, { cwd: s.run, env: { ...s.env, ...env }, timeoutMs: s.lim.cli });
}
