// What the stages of the release test share: the release folder, the SMTP sink, the photo, the
// report, and running a command to completion.
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SmtpSink } from "../../test/support/smtp.ts";
import type { Photo } from "../smoke/photo.ts";
import type { Report } from "../smoke/report.ts";

/** One run of the release test. */
export interface Ctx {
  report: Report;
  /** dist/release, as `npm run release` left it. */
  dir: string;
  version: string;
  sink: SmtpSink;
  photo: Photo;
  /** A temporary folder of this run, removed at the end when everything passed. */
  tmp: string;
}

/** A fresh empty folder under the run's temporary folder. */
export function emptyFolder(ctx: Ctx, name: string): string {
  return mkdtempSync(join(ctx.tmp, `${name}-`));
}

/** Makes the run's temporary folder (under $TMPDIR, which must allow executables). */
export function runFolder(): string {
  return mkdtempSync(join(process.env.RELEASE_TEST_TMPDIR ?? tmpdir(), "imgpress-release-test-"));
}

/** Runs a command to completion; its output and status. */
export async function sh(
  cmd: string[],
  options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<{ code: number; stdout: string; stderr: string; out: string }> {
  const sub = Bun.spawn(cmd, {
    cwd: options.cwd,
    env: options.env ?? (process.env as Record<string, string>),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => sub.kill("SIGKILL"), options.timeoutMs ?? 120_000);
  try {
    const [stdout, stderr, code] = await Promise.all([
      new Response(sub.stdout).text(),
      new Response(sub.stderr).text(),
      sub.exited,
    ]);
    return { code, stdout, stderr, out: `${stdout}${stderr}`.trim() };
  } finally {
    clearTimeout(timer);
  }
}

/** Like `sh`, but throws with the command's output unless it exits 0. */
export async function ok(cmd: string[], options: Parameters<typeof sh>[1] = {}): Promise<string> {
  const r = await sh(cmd, options);
  if (r.code !== 0) throw new Error(`${cmd.join(" ")}: exit ${r.code}: ${r.out.slice(-1500)}`);
  return r.stdout;
}

/** A TCP port free on 127.0.0.1 now (for a server that cannot be told to pick one itself). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Polls `probe` every 200 ms until it returns a value, or throws after `timeoutMs`. */
export async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch {
      // not yet
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(200);
  }
}

/** dpkg-query's `-f` option for one field (its format is `${Field}`, written here without a template's look). */
export const dpkgField = (field: string) => `-f=\${${field}}`;
