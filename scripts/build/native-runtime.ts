// Runs inside the compiled executable: the build plugin puts it in place of sharp's and
// libsql's require of their native addon. sharp's addon links libvips through an RPATH,
// so it cannot be loaded from the executable's embedded files; this copies the files
// once to a cache folder, in the same relative layout as in node_modules, and loads the
// addon from there. libsql goes the same way (rather than Bun's own .node embedding,
// which extracts to $TMPDIR) so both honour IMGPRESS_CACHE_DIR and the noexec check.
// This is the one place that reads process.env directly: it runs while modules are
// still being imported, before the app's config exists.
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";

/** One embedded file and where it goes inside the extraction folder. */
export interface EmbeddedFile {
  /** Path of the embedded copy (from `import x from "..." with { type: "file" }`). */
  src: string;
  /** Path relative to the extraction folder, e.g. `sharp-linux-x64/lib/x.node`. */
  rel: string;
  /** Expected size in bytes: a cheap check that an existing extraction is complete. */
  size: number;
}

/** What the build plugin knows about an addon to extract and load. */
export interface NativeBundle {
  /** Folder name: package, version, CPU and content hash, so versions never collide. */
  key: string;
  files: EmbeddedFile[];
  /** `rel` of the .node file to load. */
  addon: string;
}

const ENV = "IMGPRESS_CACHE_DIR";
// Half-written folders of a crashed start are removed by a later extraction after this.
const STALE_MS = 10 * 60 * 1000;

/** Cache folders to try, best first; an explicit IMGPRESS_CACHE_DIR is the only one. `inData`: inside the data folder, which is made owner-only if it does not exist yet. */
function candidates(): { dir: string; explicit: boolean; inData?: boolean }[] {
  const env = process.env;
  // Trimmed as every setting is (a blank value is unset), so " " names no folder called " ".
  const explicit = env[ENV]?.trim();
  if (explicit) return [{ dir: resolve(explicit), explicit: true }];
  const list: string[] = [];
  const xdg = env.XDG_CACHE_HOME;
  // XDG: a relative XDG_CACHE_HOME is invalid and must be ignored.
  if (xdg && isAbsolute(xdg)) list.push(join(xdg, "imgpress"));
  else {
    const home = env.HOME || safeHomedir();
    if (home) list.push(join(home, ".cache", "imgpress"));
  }
  // The data folder as the command line or the settings name it (--data-dir wins, as in src/core/config.ts).
  const dataDir = dataDirFlag() ?? env.IMGPRESS_DATA_DIR?.trim();
  return [
    ...list.map((dir) => ({ dir, explicit: false })),
    { dir: join(resolve(dataDir || "./imgpress-data"), "cache"), explicit: false, inData: true },
  ];
}

// `--data-dir DIR` or `--data-dir=DIR`, read before the command line is parsed (src/cli/args.ts
// does that, after this); the last one given, as there.
function dataDirFlag(): string | undefined {
  const argv = process.argv;
  let found: string | undefined;
  for (let i = 2; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") break;
    if (arg === "--data-dir") found = argv[++i]?.trim() || undefined;
    else if (arg.startsWith("--data-dir=")) found = arg.slice("--data-dir=".length).trim() || undefined;
  }
  return found;
}

// os.homedir() can throw when the user has no passwd entry (e.g. an arbitrary container uid).
function safeHomedir(): string {
  try {
    return homedir();
  } catch {
    return "";
  }
}

function statOrNull(path: string): Stats | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}

/**
 * True when every file of the bundle is present with its expected size, in a folder
 * owned by us (or root) that nobody else can write, as our extraction makes it: in a
 * shared cache folder, a copy planted by another user is never loaded.
 */
function complete(dir: string, bundle: NativeBundle): boolean {
  const st = statOrNull(dir);
  if (!st || (st.uid !== process.getuid?.() && st.uid !== 0) || (st.mode & 0o022) !== 0) return false;
  return bundle.files.every((f) => statOrNull(join(dir, f.rel))?.size === f.size);
}

/** Our user id (-1 where there is none, which matches no owner). */
const myUid = (): number => process.getuid?.() ?? -1;

/** Removes a folder if we can; a leftover is only disk space, never a reason to fail. */
function tryRemove(path: string): void {
  try {
    rmSync(path, { recursive: true, force: true });
  } catch {
    // e.g. EACCES on another user's folder: leave it
  }
}

/** Removes our own leftovers of crashed starts; never ones that may still be in use. */
function sweep(base: string): void {
  const now = Date.now();
  for (const name of readdirSync(base)) {
    if (!name.startsWith(".tmp-") && !name.startsWith(".old-")) continue;
    const st = statOrNull(join(base, name));
    if (st && st.uid === myUid() && now - st.mtimeMs > STALE_MS) tryRemove(join(base, name));
  }
}

/**
 * Makes sure `<base>/<key>` holds the bundle and returns it. Several processes may run
 * this at once: each writes a private temporary folder and renames it into place, and
 * rename of a folder onto an existing non-empty one fails, so exactly one wins and the
 * others discard their copy.
 */
function ensureExtracted(base: string, bundle: NativeBundle, inData = false): string {
  const primary = join(base, bundle.key);
  if (complete(primary, bundle)) return primary;
  // A folder of another user that we cannot use (e.g. root ran `imgpress keys list` with a
  // service's cache folder, or the service meets root's 0700 copy) is not ours to replace:
  // that would break the other user. We use a folder of our own beside it instead.
  const owner = statOrNull(primary)?.uid;
  const final = owner === undefined || owner === myUid() ? primary : `${primary}-u${myUid()}`;
  if (final !== primary && complete(final, bundle)) return final;

  // The data folder, when this makes it, is owner-only as the service would have made it.
  if (inData) mkdirSync(dirname(base), { recursive: true, mode: 0o700 });
  mkdirSync(base, { recursive: true, mode: 0o755 });
  sweep(base);
  const tmp = mkdtempSync(join(base, `.tmp-${bundle.key}-`));
  try {
    for (const f of bundle.files) {
      const to = join(tmp, f.rel);
      mkdirSync(dirname(to), { recursive: true });
      writeFileSync(to, readFileSync(f.src), { mode: 0o644 });
    }
    try {
      renameSync(tmp, final);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ENOTEMPTY" && code !== "EEXIST") throw err;
      // Someone else won the race: use theirs, unless it is a truncated copy of ours (e.g.
      // a crash before data reached disk), which we move aside and replace with ours.
      if (!complete(final, bundle)) {
        if (statOrNull(final)?.uid !== myUid()) throw new Error(`${final} belongs to another user and cannot be used`);
        const old = join(base, `.old-${bundle.key}-${process.pid}-${Date.now()}`);
        try {
          renameSync(final, old);
          renameSync(tmp, final);
        } catch (again) {
          // A third process may have put a good copy there in between.
          if (!complete(final, bundle)) throw again;
        }
        tryRemove(old);
      }
    }
  } finally {
    tryRemove(tmp);
  }
  return final;
}

/** Prints one line naming the setting to change and exits: the app cannot run without it. */
function fatal(message: string): never {
  process.stderr.write(`imgpress: ${message}\n`);
  process.exit(1);
}

/** Extracts the bundle (once per content) into the cache folder and loads its addon. */
export function loadNative(bundle: NativeBundle): unknown {
  const tried: string[] = [];
  let dir = "";
  for (const c of candidates()) {
    try {
      dir = ensureExtracted(c.dir, bundle, c.inData);
      break;
    } catch (err) {
      const why = `${c.dir} (${(err as Error).message})`;
      if (c.explicit) fatal(`cannot write native libraries to ${ENV}=${why}; set ${ENV} to a writable folder`);
      tried.push(why);
    }
  }
  if (!dir) fatal(`no writable cache folder for native libraries, tried ${tried.join(", ")}; set ${ENV}`);

  const file = join(dir, bundle.addon);
  const mod = { exports: {} as unknown };
  try {
    process.dlopen(mod, file);
  } catch (err) {
    const msg = String((err as Error).message).split("\n")[0] ?? "";
    // A noexec mount lets us write the files but not map them executable.
    if (/failed to map segment|operation not permitted|EPERM/i.test(msg)) {
      fatal(
        `cannot load native libraries from ${dir}: its filesystem is mounted noexec (or a security policy ` +
          `forbids running code from it); set ${ENV} to a folder on a filesystem that allows executables`,
      );
    }
    fatal(`cannot load ${file}: ${msg}`);
  }
  return mod.exports;
}
