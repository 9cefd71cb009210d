// Describes each build target and locates, per target, the bun executable and the
// native packages it embeds: from node_modules when npm ci installed them for this host,
// otherwise fetched at the lockfile's version into .build-cache.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fetchPackage } from "./fetch.ts";
import { locked, readLock } from "./lockfile.ts";

/** A CPU the binary is built for (glibc Linux only). */
export interface TargetSpec {
  /** Node's name of the CPU, as in process.arch and the sharp/libsql package names. */
  arch: "x64" | "arm64";
  /** Output file, relative to the project root. */
  outfile: string;
}

/** Everything a target's build needs on disk. */
export interface ResolvedTarget extends TargetSpec {
  bunTarget: "bun-linux-x64" | "bun-linux-arm64";
  /** The bun runtime that becomes the executable's base. */
  executablePath: string;
  /** Folders of the native packages for this CPU. */
  sharpDir: string;
  libvipsDir: string;
  libsqlDir: string;
}

/** Bun's own package names use "aarch64" where Node says "arm64". */
const bunCpu = { x64: "x64", arm64: "aarch64" } as const;

/**
 * Resolves a target: native packages at the versions the lockfile pins for them and
 * a bun executable of exactly the version running this script.
 */
export async function resolveTarget(root: string, spec: TargetSpec, cacheDir: string): Promise<ResolvedTarget> {
  const lock = await readLock(root);
  const { arch } = spec;

  // Use the installed copy only if it is the locked version; otherwise fetch that version.
  const pkgDir = async (name: string): Promise<string> => {
    const pkg = locked(lock, name);
    const installed = join(root, "node_modules", name);
    if (existsSync(join(installed, "package.json"))) {
      const { version } = (await Bun.file(join(installed, "package.json")).json()) as { version: string };
      if (version === pkg.version) return installed;
    }
    return fetchPackage(cacheDir, pkg);
  };

  // The other CPU's packages must be the same versions as this CPU's, or the two
  // binaries would differ in behaviour; the lockfile pins each separately.
  const other = arch === "x64" ? "arm64" : "x64";
  for (const [mine, theirs] of [
    [`@img/sharp-linux-${arch}`, `@img/sharp-linux-${other}`],
    [`@img/sharp-libvips-linux-${arch}`, `@img/sharp-libvips-linux-${other}`],
    [`@libsql/linux-${arch}-gnu`, `@libsql/linux-${other}-gnu`],
  ] as const) {
    const a = locked(lock, mine).version;
    const b = locked(lock, theirs).version;
    if (a !== b) throw new Error(`package-lock.json pins ${mine}@${a} but ${theirs}@${b}`);
  }

  const bunTarget = arch === "x64" ? "bun-linux-x64" : "bun-linux-arm64";
  // Bun does not check that executablePath is its own version, so we do.
  const lockedBun = locked(lock, "bun").version;
  if (Bun.version !== lockedBun) {
    throw new Error(`running bun ${Bun.version} but package-lock.json pins bun ${lockedBun}: run via npm run build`);
  }
  let executablePath = process.execPath;
  if (process.arch !== arch || process.platform !== "linux") {
    const dir = await pkgDir(`@oven/bun-linux-${bunCpu[arch]}`);
    executablePath = join(dir, "bin", "bun");
    const { version } = (await Bun.file(join(dir, "package.json")).json()) as { version: string };
    const bytes = await Bun.file(executablePath).bytes();
    // The revision string is baked into every bun binary; matching it proves the same build.
    if (version !== Bun.version || !Buffer.from(bytes.buffer).includes(`${Bun.version}+${Bun.revision.slice(0, 9)}`)) {
      throw new Error(`${executablePath} is not bun ${Bun.version}+${Bun.revision.slice(0, 9)}`);
    }
  }

  return {
    ...spec,
    bunTarget,
    executablePath,
    sharpDir: await pkgDir(`@img/sharp-linux-${arch}`),
    libvipsDir: await pkgDir(`@img/sharp-libvips-linux-${arch}`),
    libsqlDir: await pkgDir(`@libsql/linux-${arch}-gnu`),
  };
}
