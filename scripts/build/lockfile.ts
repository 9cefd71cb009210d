// Reads package versions and integrity hashes from package-lock.json, so the build
// fetches exactly what the lockfile pins and never guesses a version.
import { join } from "node:path";

/** A package pinned by package-lock.json. */
export interface LockedPackage {
  name: string;
  version: string;
  integrity: string;
}

interface LockFile {
  packages: Record<string, { version?: string; integrity?: string }>;
}

/** Loads package-lock.json of the project at `root`. */
export async function readLock(root: string): Promise<LockFile> {
  return (await Bun.file(join(root, "package-lock.json")).json()) as LockFile;
}

/** Returns the lockfile entry of a top-level package, or throws naming it. */
export function locked(lock: LockFile, name: string): LockedPackage {
  const entry = lock.packages[`node_modules/${name}`];
  if (!entry?.version || !entry.integrity) {
    throw new Error(`package-lock.json has no version/integrity for ${name}; run npm install to refresh it`);
  }
  return { name, version: entry.version, integrity: entry.integrity };
}
