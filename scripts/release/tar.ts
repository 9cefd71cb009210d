// A small ustar writer: the release archives and the image layers are written entry by entry with
// the owners, modes and times they must have, without a root shell, a staging folder or GNU tar's
// flags, and byte-for-byte the same on every run (one fixed time, entries in the order given).

/** One entry: a folder (path ends without "/"), a file with its bytes, or a symbolic link. */
export type TarEntry =
  | { type: "dir"; path: string; mode: number; uid?: number; gid?: number }
  | { type: "file"; path: string; mode: number; data: Uint8Array; uid?: number; gid?: number }
  | { type: "symlink"; path: string; target: string };

const BLOCK = 512;
const encoder = new TextEncoder();

function put(header: Uint8Array, offset: number, length: number, text: string): void {
  const bytes = encoder.encode(text);
  if (bytes.length > length) throw new Error(`tar: "${text}" does not fit in ${length} bytes`);
  header.set(bytes, offset);
}

// Numbers are zero-padded octal with a NUL, as ustar readers expect.
const octal = (n: number, length: number) => `${n.toString(8).padStart(length - 1, "0")}\0`;

/** ustar splits a long path into a prefix (up to 155 bytes) and a name (up to 100). */
function splitPath(path: string): { prefix: string; name: string } {
  if (encoder.encode(path).length <= 100) return { prefix: "", name: path };
  const cut = path.lastIndexOf("/", 155);
  if (cut <= 0 || encoder.encode(path.slice(cut + 1)).length > 100) throw new Error(`tar: path too long: ${path}`);
  return { prefix: path.slice(0, cut), name: path.slice(cut + 1) };
}

function header(entry: TarEntry, mtime: number): Uint8Array {
  const h = new Uint8Array(BLOCK);
  const path = entry.type === "dir" ? `${entry.path.replace(/\/$/, "")}/` : entry.path;
  const { prefix, name } = splitPath(path);
  put(h, 0, 100, name);
  put(h, 100, 8, octal(entry.type === "symlink" ? 0o777 : entry.mode, 8));
  put(h, 108, 8, octal(entry.type === "symlink" ? 0 : (entry.uid ?? 0), 8));
  put(h, 116, 8, octal(entry.type === "symlink" ? 0 : (entry.gid ?? 0), 8));
  put(h, 124, 12, octal(entry.type === "file" ? entry.data.length : 0, 12));
  put(h, 136, 12, octal(mtime, 12));
  put(h, 148, 8, "        ");
  put(h, 156, 1, entry.type === "file" ? "0" : entry.type === "dir" ? "5" : "2");
  if (entry.type === "symlink") put(h, 157, 100, entry.target);
  put(h, 257, 8, "ustar\x0000");
  // Names only for root: an extracting root would otherwise map a name to its own system's ids.
  const uid = entry.type === "symlink" ? 0 : (entry.uid ?? 0);
  const gid = entry.type === "symlink" ? 0 : (entry.gid ?? 0);
  if (uid === 0) put(h, 265, 32, "root");
  if (gid === 0) put(h, 297, 32, "root");
  put(h, 345, 155, prefix);
  let sum = 0;
  for (const b of h) sum += b;
  put(h, 148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
  return h;
}

/** The archive's bytes; `mtime` (seconds since 1970) is every entry's time. */
export function tar(entries: TarEntry[], mtime: number): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const entry of entries) {
    parts.push(header(entry, mtime));
    if (entry.type === "file") {
      parts.push(entry.data);
      const pad = (BLOCK - (entry.data.length % BLOCK)) % BLOCK;
      if (pad) parts.push(new Uint8Array(pad));
    }
  }
  parts.push(new Uint8Array(BLOCK * 2));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
