// Smoke test of the built single-file executables, the way a user runs them: each binary is
// copied into an empty folder and started from there with HOME, XDG_CACHE_HOME and TMPDIR
// pointed at empty temporary folders, so the native-library extraction cache starts empty.
//
//   npm run build && bun scripts/smoke.ts        # dist/imgpress and dist/imgpress-linux-arm64
//   bun scripts/smoke.ts dist/imgpress           # one binary
//   bun scripts/smoke.ts --keep                  # keep the temporary folders (kept anyway on failure)
//   bun scripts/smoke.ts --cpu x64=Nehalem       # the x64 binary under qemu as a CPU without AVX
//
// The CPU of each file is read from its ELF header. A foreign one runs under qemu-user
// (`qemu-aarch64-static -cpu cortex-a53 -L /usr/aarch64-linux-gnu`; scripts/ci-setup.sh
// installs it), with longer time limits. Every check prints one line; the last line is exactly
// "N passed, N failed" and the exit status is non-zero when anything failed. The stages are in
// scripts/smoke/ (cli, first start, docs, dashboard, keys, convert, restart, concurrency, noexec); the process
// handling and the client are test/support/imgpress.ts, shared with the tests and the bench.
//
// Environment: SMOKE_PHOTO=/path/to.jpg chooses the photo (default: the JPEG closest to 1.5 MP
// in /usr/share/backgrounds, from Debian's mate-backgrounds; else one generated with sharp);
// SMOKE_TMPDIR moves the temporary folders; SMOKE_NOEXEC_DIR names a folder on a noexec mount
// for the "clear error" check (default: /dev/shm, /tmp or /var/tmp when mounted noexec).
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Service } from "../test/support/imgpress.ts";
import { type SmtpSink, startSmtpSink } from "../test/support/smtp.ts";
import { sourceCommit } from "./build.ts";
import { cliStage } from "./smoke/cli.ts";
import { concurrencyStage } from "./smoke/concurrency.ts";
import { baseEnv, type Smoke, stopServe } from "./smoke/context.ts";
import { convertStage } from "./smoke/convert.ts";
import { dashboardStage } from "./smoke/dashboard.ts";
import { docsStage } from "./smoke/docs.ts";
import { firstStartStage } from "./smoke/first-start.ts";
import { nodeModulesAbove, tempRoot } from "./smoke/folders.ts";
import { keysListStage, keysStage } from "./smoke/keys.ts";
import { noexecStage } from "./smoke/noexec.ts";
import { operationsStage } from "./smoke/operations.ts";
import { type Photo, pickPhoto } from "./smoke/photo.ts";
import { assert, Fatal, fmtMs, Report } from "./smoke/report.ts";
import { footprintStage, restartStage } from "./smoke/restart.ts";
import { type Arch, limits, type Target, target } from "./smoke/target.ts";

const ROOT = resolve(import.meta.dir, "..");
const DEFAULT_BINARIES = ["dist/imgpress", "dist/imgpress-linux-arm64"];

/** The stages of one binary, in order, on a fresh folder; false when any check failed. */
async function smokeBinary(
  t: Target,
  root: string,
  photo: Photo,
  sink: SmtpSink,
  report: Report,
  services: Service[],
  keep: boolean,
): Promise<boolean> {
  const tag = t.arch + (t.emulated ? " qemu" : "");
  const tmp = mkdtempSync(join(root, `imgpress-smoke-${t.arch}-`));
  const run = join(tmp, "run");
  for (const d of [run, join(tmp, "home"), join(tmp, "xdg-cache"), join(tmp, "tmpdir")])
    mkdirSync(d, { recursive: true });
  const exe = join(run, basename(t.file));
  copyFileSync(t.file, exe);
  chmodSync(exe, 0o755);
  const dataDir = join(run, "imgpress-data");
  const s: Smoke = {
    t,
    tag,
    lim: limits(t),
    report,
    tmp,
    run,
    exe,
    launch: { runtime: "binary", file: exe, runner: t.runner },
    env: baseEnv(tmp, t),
    cacheDir: join(tmp, "xdg-cache", "imgpress"),
    dataDir,
    certPath: join(dataDir, "tls", "cert.pem"),
    email: `smoke-${t.arch}@example.com`,
    // As scripts/build.ts stamps it: the release, then the commit the executable was built from.
    version: `${((await Bun.file(join(ROOT, "package.json")).json()) as { version: string }).version}+${sourceCommit()}`,
    photo,
    sink,
    services,
  };
  const failedBefore = report.failed;
  const started = performance.now();
  const shown = relative(ROOT, t.file).startsWith("..") ? t.file : relative(ROOT, t.file);
  console.log(
    `---- ${shown}: ${t.arch}${t.emulated ? ` under ${t.runner.join(" ")}` : " native"}, ${(statSync(t.file).size / 1048576).toFixed(1)} MiB, in ${tmp}`,
  );
  try {
    const cache = await cliStage(s);
    const first = await firstStartStage(s);
    await docsStage(s, first.svc);
    await dashboardStage(s, first.svc);
    const keys = await keysStage(s, first.svc);
    await convertStage(s, first.svc, keys);
    await operationsStage(s, first.svc, 2);
    await report.must(tag, "SIGTERM", () => stopServe(first.svc));
    await restartStage(s, first.svc.info, first.ca, keys, cache.names);
    // Two conversions before the restart, one after.
    await keysListStage(s, keys, 3);
    await footprintStage(s);
    await concurrencyStage(s, cache.names);
    await noexecStage(s);
  } catch (err) {
    if (!(err instanceof Fatal)) report.fail(tag, `unexpected error: ${(err as Error).stack ?? err}`);
    else
      console.log(
        `     [${tag}] remaining checks skipped; server output:\n${services.at(-1)?.log.tail() ?? "  | (none started)"}`,
      );
  } finally {
    for (const svc of services) svc.proc.kill("SIGKILL");
    await Promise.all(services.map((svc) => svc.proc.exited));
    services.length = 0;
  }
  const ok = report.failed === failedBefore;
  console.log(
    `---- ${t.arch}: ${ok ? "passed" : "FAILED"} in ${fmtMs(performance.now() - started)}${ok && !keep ? "" : `; files kept in ${tmp}`}`,
  );
  if (ok && !keep) rmSync(tmp, { recursive: true, force: true });
  return ok;
}

/** The command line: `[--keep] [--cpu ARCH=MODEL]... [BINARY...]`. */
function options(): { keep: boolean; cpus: Partial<Record<Arch, string>>; files: string[] } {
  const usage = () => {
    console.error(
      `usage: bun scripts/smoke.ts [--keep] [--cpu ARCH=MODEL]... [BINARY...]\n` +
        `  default binaries: ${DEFAULT_BINARIES.join(" ")}\n` +
        `  --cpu x64=Nehalem     run the x64 binary under qemu-x86_64-static as a CPU without AVX\n` +
        `  --cpu arm64=max       emulated arm64 CPU model (default cortex-a53)`,
    );
    process.exit(2);
  };
  try {
    const { values, positionals } = parseArgs({
      options: { keep: { type: "boolean" }, cpu: { type: "string", multiple: true } },
      allowPositionals: true,
    });
    const cpus: Partial<Record<Arch, string>> = {};
    for (const spec of values.cpu ?? []) {
      const m = /^(x64|arm64)=([\w.+-]+)$/.exec(spec);
      if (!m) return usage();
      cpus[m[1] as Arch] = m[2]!;
    }
    return { keep: values.keep ?? false, cpus, files: positionals };
  } catch {
    return usage();
  }
}

/** Set-up checks (binaries, checksums, temporary folder, photo, SMTP sink), then each binary; exits 0 only when every check passed. */
async function main(): Promise<number> {
  const { keep, cpus, files } = options();
  const report = new Report();
  const services: Service[] = [];
  process.on("SIGINT", () => {
    for (const svc of services) svc.proc.kill("SIGKILL");
    process.exit(130);
  });
  const targets: Target[] = [];
  for (const f of files.length ? files : DEFAULT_BINARIES) {
    const file = resolve(ROOT, f);
    const t = await report.check(
      "setup",
      `binary ${f}`,
      () => {
        assert(existsSync(file), `${file} not found: run npm run build first`);
        return target(file, cpus);
      },
      (v) =>
        `${v.arch}${v.emulated ? `, via ${[basename(v.runner[0]!), ...v.runner.slice(1)].join(" ")}` : ", native"}`,
    );
    if (t) targets.push(t);
  }
  // The checksum file written by the build, when the binaries come from it.
  for (const t of targets) {
    const sums = join(resolve(t.file, ".."), "SHA256SUMS");
    const line = existsSync(sums)
      ? readFileSync(sums, "utf8")
          .split("\n")
          .find((l) => l.endsWith(`  ${basename(t.file)}`))
      : undefined;
    if (!line) continue;
    await report.check("setup", `SHA256SUMS entry of ${basename(t.file)}`, async () => {
      const digest = createHash("sha256")
        .update(await Bun.file(t.file).bytes())
        .digest("hex");
      assert(line.startsWith(`${digest}  `), `${sums} says ${line.split(" ")[0]}, the file hashes to ${digest}`);
      return `${digest.slice(0, 16)}… matches`;
    });
  }
  const root = await report.check(
    "setup",
    "temporary folder",
    () => {
      const dir = tempRoot();
      const above = nodeModulesAbove(dir);
      assert(
        !above,
        `${above} is visible from ${dir}: a binary that still needs node_modules could pass; set SMOKE_TMPDIR elsewhere`,
      );
      return dir;
    },
    (d) => `${d} (exec allowed, no node_modules above)`,
  );
  const photo = await report.check(
    "setup",
    "photo",
    pickPhoto,
    (p) => `${p.source}, ${p.width}×${p.height}, ${p.bytes.length} bytes`,
  );
  const sink = await report.check("setup", "SMTP sink", startSmtpSink, (v) => v.url);
  if (root && photo && sink) {
    try {
      for (const t of targets) await smokeBinary(t, root, photo, sink, report, services, keep);
    } finally {
      await sink.close();
    }
  }
  console.log(report.summary());
  return report.failed === 0 && report.passed > 0 ? 0 : 1;
}

process.exit(await main());
