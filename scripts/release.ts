// `npm run release` (after `npm run build`): every release artifact in dist/release/, one version
// (package.json's) in each name, package and label, and SHA256SUMS over them all:
//   imgpress-<v>-linux-x64.tar.gz, imgpress-<v>-linux-arm64.tar.gz   executable, LICENSE, README, unit
//   imgpress_<v>_amd64.deb, imgpress_<v>_arm64.deb                   dpkg-deb, lintian-clean
//   imgpress-<v>-oci.tar                                             OCI image index, amd64 + arm64
//   compose.yaml, imgpress.env.example                                for the image
//   imgpress-wordpress.zip                                            the WordPress plugin
// Needs dpkg-deb, and the arm64 C/C++ runtime libraries of scripts/ci-setup.sh for the image.
// scripts/release-test.sh tests each artifact for real.
import { mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { buildWordPressZip } from "./build-wordpress.ts";
import { archive, archiveName } from "./release/archive.ts";
import { compose } from "./release/compose.ts";
import { ARCHES, projectFile, ROOT, release, sha256 } from "./release/context.ts";
import { buildDeb } from "./release/deb.ts";
import { ENV_EXAMPLE, envExample } from "./release/env-example.ts";
import { ociArchive, ociName } from "./release/oci.ts";

const step = (msg: string) => console.log(`release: ${msg}`);

async function main(): Promise<void> {
  const t0 = performance.now();
  const r = release();
  step(`imgpress ${r.version} (${r.commit}), files dated ${new Date(r.epoch * 1000).toISOString()}`);
  if (new TextDecoder().decode(projectFile(ENV_EXAMPLE)) !== envExample()) {
    throw new Error(
      `${ENV_EXAMPLE} is out of date with src/core/config.ts: run bun scripts/release/env-example.ts --write`,
    );
  }
  for (const a of ARCHES) {
    try {
      statSync(a.binary);
    } catch {
      throw new Error(`${a.binary} is missing: run npm run build first`);
    }
  }
  // The executable must say the version the files are named after.
  const said = Bun.spawnSync([ARCHES[0]!.binary, "--version"], { stderr: "pipe" }).stdout.toString().trim();
  const stamped = /^imgpress (\S+)\+(\S+) /.exec(said);
  if (stamped?.[1] !== r.version)
    throw new Error(`dist/imgpress --version says "${said}", package.json ${r.version}: rebuild`);
  // The labels name the commit the executables were built from, which --version shows.
  r.commit = stamped[2]!;
  if (!r.source)
    step(
      "warning: package.json has no repository: the image has no org.opencontainers.image.source label, the package no Homepage",
    );

  rmSync(r.out, { recursive: true, force: true });
  mkdirSync(r.out, { recursive: true });
  const written: string[] = [];
  const write = async (name: string, data: Uint8Array | string) => {
    await Bun.write(join(r.out, name), data);
    written.push(name);
    step(`${name} ${(statSync(join(r.out, name)).size / 1048576).toFixed(1)} MiB`);
  };
  for (const a of ARCHES) await write(archiveName(r, a), archive(r, a));
  for (const a of ARCHES) {
    const deb = buildDeb(r, a);
    written.push(basename(deb));
    step(`${basename(deb)} ${(statSync(deb).size / 1048576).toFixed(1)} MiB`);
  }
  await write(ociName(r), ociArchive(r, ARCHES));
  await write("compose.yaml", compose(r));
  await write("imgpress.env.example", projectFile(ENV_EXAMPLE));
  // Made afresh from clients/wordpress, so the release never carries a stale dist/ copy.
  const plugin = buildWordPressZip(join(r.out, "imgpress-wordpress.zip"));
  written.push(basename(plugin));
  step(`${basename(plugin)} ${(statSync(plugin).size / 1024).toFixed(0)} KiB`);

  const sums = written.sort().map((name) => `${sha256(readFileSync(join(r.out, name)))}  ${name}`);
  await Bun.write(join(r.out, "SHA256SUMS"), `${sums.join("\n")}\n`);
  step(
    `SHA256SUMS over ${written.length} files; in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${join(r.out).replace(`${ROOT}/`, "")}/`,
  );
}

await main().catch((err: unknown) => {
  console.error(`release: FAILED: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
