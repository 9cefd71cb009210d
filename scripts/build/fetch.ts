// Fetches packages that npm ci does not install on this host (the other CPU's bun and
// native addons) into .build-cache, without touching package.json or the lockfile.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { LockedPackage } from "./lockfile.ts";

/** Runs a command and returns its stdout; throws with its stderr if it fails. */
async function run(cmd: string[], cwd?: string): Promise<string> {
  const proc = Bun.spawn(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) throw new Error(`${cmd.join(" ")} failed (${code}):\n${err.trim()}`);
  return out;
}

/**
 * Returns the folder of `pkg` unpacked under `cacheDir`, downloading it with `npm pack`
 * the first time. The tarball must match the lockfile's integrity hash.
 */
export async function fetchPackage(cacheDir: string, pkg: LockedPackage): Promise<string> {
  const slug = `${pkg.name.replace("/", "+")}@${pkg.version}`;
  const dest = join(cacheDir, slug);
  // The folder only appears after a complete, verified unpack (rename below), so its
  // existence means it is usable.
  if (existsSync(join(dest, "package.json"))) return dest;

  const work = join(cacheDir, `.tmp-${slug}-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const json = await run(
      ["npm", "pack", `${pkg.name}@${pkg.version}`, "--pack-destination", work, "--json", "--silent"],
      work,
    );
    const [info] = JSON.parse(json) as { filename: string }[];
    if (!info) throw new Error(`npm pack ${pkg.name}@${pkg.version} printed no file name`);
    const tarball = join(work, info.filename);

    // npm pack does not check the lockfile, so compare the hash ourselves.
    const [algo, expected] = pkg.integrity.split(/-(.*)/s) as [string, string];
    const actual = createHash(algo)
      .update(await Bun.file(tarball).bytes())
      .digest("base64");
    if (actual !== expected) {
      throw new Error(`${pkg.name}@${pkg.version}: tarball ${algo} ${actual} != lockfile ${expected}`);
    }

    await run(["tar", "-xzf", tarball, "-C", work]);
    rmSync(dest, { recursive: true, force: true });
    renameSync(join(work, "package"), dest);
    return dest;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
