import { lstatSync, readlinkSync, realpathSync, type Stats } from "node:fs";
import { link, mkdir, readFile, rename, stat, unlink, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";

/**
 * Returns the file's text, creating it with `make()` when missing. The content is written under a
 * temporary name and hard-linked into place, so concurrent first starts all end up using one content.
 */
export async function readOrCreate(path: string, make: () => Promise<string>, mode = 0o600): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temp = await writeTemporary(path, await make(), mode);
  try {
    await link(temp, path); // fails with EEXIST when another process won the race: its content stands
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    await unlink(temp).catch(() => {});
  }
  return readFile(path, "utf8");
}

/** Writes `content` to `path` under a temporary name and renames it into place, so a reader sees the old file or the new one, never half of one. */
export async function replaceFile(path: string, content: string, mode: number): Promise<void> {
  const temp = await writeTemporary(path, content, mode);
  await rename(temp, path).catch(async (err) => {
    await unlink(temp).catch(() => {});
    throw err;
  });
}

// `content` in a new file beside `path`; a failed write (a full disk) leaves none behind, and its error names the file.
async function writeTemporary(path: string, content: string, mode: number): Promise<string> {
  const temp = `${path}.${crypto.randomUUID()}.tmp`;
  try {
    await writeFile(temp, content, { mode, flag: "wx" });
  } catch (err) {
    await unlink(temp).catch(() => {});
    throw cannotWrite(path, err);
  }
  return temp;
}

/** A write error that names the file (Node's says only "ENOSPC: no space left on device, write"), with the original code. */
export function cannotWrite(path: string, err: unknown): Error {
  const error = err as NodeJS.ErrnoException;
  return Object.assign(new Error(`cannot write ${path}: ${error.message}`), { code: error.code });
}

/** Whether something is at `path` (false too when it cannot be looked at). */
export async function pathExists(path: string): Promise<boolean> {
  return (await statOf(path)) !== null;
}

/** What `stat` says of `path`, or null when there is nothing there (or it cannot be looked at). */
export async function statOf(path: string): Promise<Stats | null> {
  return stat(path).catch(() => null);
}

/**
 * Creates `path` empty and owner-only when nothing is there yet, so a file another program then
 * fills (SQLite's database, whose -wal and -shm take its mode) is never readable by others.
 */
export async function createOwnerOnly(path: string): Promise<void> {
  // Any failure (it exists, or the folder is not writable) is left to the program that opens it
  // next, which reports it in its own words.
  await writeFile(path, "", { mode: 0o600, flag: "wx" }).catch(() => {});
}

/**
 * The file `path` names with every symbolic link resolved, also when it does not exist yet (a
 * link to a database a first start will create: its record must sit where restore looks later).
 */
export function realFile(path: string, depth = 0): string {
  try {
    return realpathSync(path);
  } catch {
    // Not there (yet): follow the link by hand, or resolve the folder and keep the name.
  }
  try {
    // A relative target is read from where the link really is (its folder may itself be a link).
    if (depth < 16 && lstatSync(path).isSymbolicLink())
      return realFile(resolve(realFolder(path), readlinkSync(path)), depth + 1);
  } catch {
    // No link either.
  }
  return join(realFolder(path), basename(path));
}

// The folder of `path` with its links resolved, or as written where it does not exist.
function realFolder(path: string): string {
  try {
    return realpathSync(dirname(path));
  } catch {
    return dirname(path);
  }
}

/**
 * Why the secret file `path` can be read by other users of this machine, or null when it cannot:
 * "`what` `path` can be read by … (modes): `why`". imgpress creates its folders 0700 and files 0600;
 * a folder made by an older version (0755, files 0644) or by hand keeps its modes across an upgrade.
 */
export async function readableByOthers(path: string, what: string, why: string): Promise<string | null> {
  const folder = dirname(path);
  const [folderStat, fileStat] = await Promise.all([statOf(folder), statOf(path)]);
  if (!fileStat) return null;
  // Others need to pass through the folder (x) and read the file (r).
  const mode = (n: number) => (n & 0o777).toString(8).padStart(4, "0");
  if ((fileStat.mode & 0o044) === 0 || (folderStat && (folderStat.mode & 0o011) === 0)) return null;
  // A folder this process may not look at (Deno given the file alone) may still let others in: the file's mode decides then.
  const folderMode = folderStat ? `folder mode ${mode(folderStat.mode)}` : "its folder could not be checked";
  return `${what} ${path} can be read by other users of this machine (${folderMode}, file mode ${mode(fileStat.mode)}): ${why}`;
}
