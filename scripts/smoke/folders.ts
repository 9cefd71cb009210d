// The folders the smoke test looks at: the native-library cache, noexec mounts, its own temporary root.
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { assert } from "./report.ts";
import type { Arch } from "./target.ts";

const LIBRARIES = ["sharp", "libsql"] as const;

/** The extracted libraries in a cache folder, by library (the folder name starts with its package). */
export function cacheEntries(dir: string): {
  names: string[];
  byLibrary: Record<string, string[]>;
  leftovers: string[];
} {
  const names = existsSync(dir) ? readdirSync(dir).sort() : [];
  const byLibrary: Record<string, string[]> = {};
  for (const lib of LIBRARIES) byLibrary[lib] = names.filter((n) => n.startsWith(`${lib}-linux-`));
  const leftovers = names.filter((n) => !LIBRARIES.some((lib) => n.startsWith(`${lib}-linux-`)));
  return { names, byLibrary, leftovers };
}

/** Asserts exactly one complete extraction per library, for this CPU, and nothing else. */
export function assertOneExtraction(dir: string, arch: Arch, same?: string[]): string {
  const { names, byLibrary, leftovers } = cacheEntries(dir);
  for (const lib of LIBRARIES) {
    const hits = byLibrary[lib]!;
    assert(hits.length === 1, `${dir}: expected one ${lib} extraction, found ${hits.length} in [${names.join(", ")}]`);
    assert(hits[0]!.startsWith(`${lib}-linux-${arch}-`), `${dir}/${hits[0]} is not for ${arch}`);
  }
  assert(
    leftovers.length === 0,
    `${dir}: unexpected entries [${leftovers.join(", ")}] (temporary folders not cleaned up?)`,
  );
  if (same)
    assert(JSON.stringify(names) === JSON.stringify(same), `${dir} holds [${names}], the first start made [${same}]`);
  return names
    .map((name) => {
      const files = listFiles(join(dir, name));
      assert(
        files.some((f) => f.endsWith(".node")),
        `${dir}/${name} has no .node file`,
      );
      return `${name} (${files.length} files)`;
    })
    .join(", ");
}

/** Every file under `dir`, recursively. */
function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(path));
    else out.push(path);
  }
  return out;
}

/** Mount points with their options, from /proc/self/mounts (empty when unreadable). */
function mounts(): { mountPoint: string; options: string[] }[] {
  try {
    return (
      readFileSync("/proc/self/mounts", "utf8")
        .split("\n")
        .map((line) => line.split(" "))
        .filter((f) => f.length >= 4)
        // /proc/mounts escapes spaces and the like as octal (\040).
        .map((f) => ({
          mountPoint: f[1]!.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))),
          options: f[3]!.split(","),
        }))
    );
  } catch {
    return [];
  }
}

/** True when `path` lies on a filesystem mounted noexec. */
function onNoexec(path: string): boolean {
  let best: { mountPoint: string; options: string[] } | undefined;
  for (const m of mounts()) {
    const inside =
      path === m.mountPoint || path.startsWith(m.mountPoint.endsWith("/") ? m.mountPoint : `${m.mountPoint}/`);
    if (inside && (!best || m.mountPoint.length >= best.mountPoint.length)) best = m;
  }
  return best?.options.includes("noexec") ?? false;
}

/**
 * A writable folder on a noexec mount, for the "clear error" check: $SMOKE_NOEXEC_DIR, else a
 * new folder in a standard noexec mount (e.g. /dev/shm on many CI hosts), else none.
 */
export function noexecDir(): { dir: string } | undefined {
  if (process.env.SMOKE_NOEXEC_DIR) return { dir: mkdtempSync(join(process.env.SMOKE_NOEXEC_DIR, "imgpress-smoke-")) };
  for (const m of mounts()) {
    if (!m.options.includes("noexec") || !m.options.includes("rw")) continue;
    if (!["/dev/shm", "/run/shm", "/tmp", "/var/tmp"].includes(m.mountPoint)) continue;
    try {
      return { dir: mkdtempSync(join(m.mountPoint, "imgpress-smoke-noexec-")) };
    } catch {
      // not writable for us
    }
  }
  return undefined;
}

/** Where the temporary folders go: $SMOKE_TMPDIR, else the system's, unless that is noexec. */
export function tempRoot(): string {
  const candidates = process.env.SMOKE_TMPDIR ? [process.env.SMOKE_TMPDIR] : [tmpdir(), "/var/tmp"];
  for (const dir of candidates) {
    const real = realpathSync(dir);
    if (!onNoexec(real)) return real;
  }
  throw new Error(
    `${candidates.join(" and ")} are mounted noexec, so no binary can run there; set SMOKE_TMPDIR to another folder`,
  );
}

/** A node_modules folder in `dir` or above it would let a broken binary load packages from it. */
export function nodeModulesAbove(dir: string): string | undefined {
  for (let d = dir; ; d = resolve(d, "..")) {
    if (existsSync(join(d, "node_modules"))) return join(d, "node_modules");
    if (d === "/") return undefined;
  }
}
