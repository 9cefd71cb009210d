// Tests every artifact of `npm run release` for real on this machine (Debian, as root: it installs
// the .deb and runs podman): the archives, the .deb, the OCI image. Run by .ci/run after the
// release; every check prints one line and the last line is exactly "N passed, N failed".
//
//   npm run build && npm run release && bun scripts/release-test.ts
//   bun scripts/release-test.ts --only deb      # or archive, image
//
// Needs what scripts/ci-setup.sh installs: dpkg, lintian, systemd (systemd-analyze), podman with
// runc, skopeo, qemu-user-static and the arm64 C libraries. RELEASE_TEST_TMPDIR moves the temporary
// folder (it must allow executables).
import { readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startSmtpSink } from "../test/support/smtp.ts";
import { archiveStage } from "./release-test/archive.ts";
import { type Ctx, ok, runFolder } from "./release-test/context.ts";
import { debStage } from "./release-test/deb.ts";
import { imageStage } from "./release-test/image.ts";
import { pickPhoto } from "./smoke/photo.ts";
import { assert, fmtMs, Report } from "./smoke/report.ts";

const ROOT = resolve(import.meta.dir, "..");
const STAGES = { archive: archiveStage, deb: debStage, image: imageStage } as const;

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { only: { type: "string", multiple: true }, keep: { type: "boolean" } } });
  const only = (values.only ?? Object.keys(STAGES)) as (keyof typeof STAGES)[];
  const report = new Report();
  const t0 = performance.now();
  const version = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;
  const dir = join(ROOT, "dist/release");
  const ready = await report.check("setup", "dist/release: SHA256SUMS over every artifact, all OK", async () => {
    assert(process.getuid?.() === 0, "run as root: the test installs the .deb and runs podman");
    const sums = await ok(["sha256sum", "-c", "SHA256SUMS"], { cwd: dir });
    const names = sums
      .trim()
      .split("\n")
      .map((l) => l.replace(/: OK$/, ""));
    const expected = [
      `imgpress-${version}-linux-arm64.tar.gz`,
      `imgpress-${version}-linux-x64.tar.gz`,
      `imgpress-${version}-oci.tar`,
      "compose.yaml",
      "imgpress.env.example",
      "imgpress-wordpress.zip",
      `imgpress_${version}_amd64.deb`,
      `imgpress_${version}_arm64.deb`,
    ].sort();
    assert(JSON.stringify(names.sort()) === JSON.stringify(expected), `SHA256SUMS lists ${names.join(", ")}`);
    return `${names.length} files`;
  });
  const photo = await report.check("setup", "photo", pickPhoto, (p) => `${p.source}, ${p.width}×${p.height}`);
  const sink = await report.check("setup", "SMTP sink", startSmtpSink, (s) => s.url);
  if (ready && photo && sink) {
    const ctx: Ctx = { report, dir, version, sink, photo, tmp: runFolder() };
    try {
      for (const name of only) {
        const t = performance.now();
        console.log(`---- ${name}`);
        try {
          await STAGES[name](ctx);
        } catch (err) {
          report.fail(name, `unexpected error: ${(err as Error).stack ?? err}`);
        }
        console.log(`---- ${name}: ${fmtMs(performance.now() - t)}`);
      }
    } finally {
      await sink.close();
      if (report.failed === 0 && !values.keep) rmSync(ctx.tmp, { recursive: true, force: true });
      else console.log(`files kept in ${ctx.tmp}`);
    }
  } else await sink?.close();
  console.log(`release test: ${fmtMs(performance.now() - t0)}`);
  console.log(report.summary());
  return report.failed === 0 && report.passed > 0 ? 0 : 1;
}

process.exit(await main());
