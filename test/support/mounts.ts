/**
 * A private tmpfs for tests of a full or read-only disk, when this process may mount one (root
 * with mount rights, as in CI); elsewhere those tests are skipped, saying why.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A mounted tmpfs: its folder, read-only from now on, and its removal. */
export interface Tmpfs {
  path: string;
  readOnly(): void;
  unmount(): void;
}

/** Mounts a fresh tmpfs of `size` (e.g. "8m"), or returns null when this process may not. */
export function mountTmpfs(size = "8m"): Tmpfs | null {
  if (process.getuid?.() !== 0) return null;
  const path = mkdtempSync(join(tmpdir(), "imgpress-tmpfs-"));
  if (spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", path]).status !== 0) {
    rmSync(path, { recursive: true, force: true });
    return null;
  }
  return {
    path,
    readOnly: () => {
      if (spawnSync("mount", ["-o", "remount,ro", path]).status !== 0)
        throw new Error(`cannot remount ${path} read-only`);
    },
    // Lazy: libSQL may release its file handles a moment after close().
    unmount: () => (spawnSync("umount", ["-l", path]), rmSync(path, { recursive: true, force: true })),
  };
}

/** Whether a tmpfs can be mounted here: probed once at load, and unmounted at once. */
export const canMount: boolean = (() => {
  const probe = mountTmpfs("1m");
  probe?.unmount();
  return probe !== null;
})();
