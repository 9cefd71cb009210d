// Smoke test of the built single-file executables, the way a user runs them: each binary is
// copied into an empty folder and started from there with HOME, XDG_CACHE_HOME and TMPDIR
// pointed at empty temporary folders, so the native-library extraction cache starts empty.
//
//   npm run build && bun scripts/smoke.ts        # dist/imgpress and dist/imgpress-linux-arm64
//   bun scripts/smoke.ts dist/imgpress           # one binary
//   bun scripts/smoke.ts --keep                  # keep the temporary folders (kept anyway on failure)
//   bun scripts/smoke.ts --cpu x64=Nehalem       # the x64 binary under qemu as a CPU without AVX
//
// The CPU of each file is read from its ELF header. A foreign one runs under qemu-user
// (`qemu-aarch64-static -cpu cortex-a53 -L /usr/aarch64-linux-gnu`; scripts/ci-setup.sh
// installs it), with longer time limits. Every check prints one line; the last line is exactly
// "N passed, N failed" and the exit status is non-zero when anything failed.
//
// Environment: SMOKE_PHOTO=/path/to.jpg chooses the photo (default: the JPEG closest to 1.5 MP
// in /usr/share/backgrounds, from Debian's mate-backgrounds; else one generated with sharp);
// SMOKE_TMPDIR moves the temporary folders; SMOKE_NOEXEC_DIR names a folder on a noexec mount
// for the "clear error" check (default: /dev/shm, /tmp or /var/tmp when mounted noexec).
import { createHash, createHmac } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs";
import { arch as hostArch, tmpdir } from "node:os";
import { basename, join, relative, resolve } from "node:path";
import sharp, { type Metadata } from "sharp";
import { extractOtp, startSmtpSink, type SmtpSink } from "../test/support/smtp.ts";

const ROOT = resolve(import.meta.dir, "..");
const DEFAULT_BINARIES = ["dist/imgpress", "dist/imgpress-linux-arm64"];
const CONCURRENT_STARTS = 8;
const ELF_ARCH: Record<number, Arch> = { 62: "x64", 183: "arm64" };
const QEMU: Record<Arch, { exe: string; sysroot: string }> = {
  x64: { exe: "qemu-x86_64-static", sysroot: "/usr/x86_64-linux-gnu" },
  arm64: { exe: "qemu-aarch64-static", sysroot: "/usr/aarch64-linux-gnu" },
};
const LIBRARIES = ["sharp", "libsql"] as const;
const DEFAULT_QEMU_CPU: Record<Arch, string | undefined> = { x64: undefined, arm64: "cortex-a53" };

type Arch = "x64" | "arm64";

// ---------------------------------------------------------------- reporting

let passed = 0;
let failed = 0;

/** Thrown by a check whose failure makes the remaining checks of a binary pointless. */
class Fatal extends Error {}

const fmtMs = (ms: number) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`);

/** Runs one check and prints one line; returns its value, or undefined when it failed. */
async function check<T>(tag: string, name: string, fn: () => Promise<T | string> | T | string, describe?: (v: T) => string): Promise<T | undefined> {
  const t0 = performance.now();
  try {
    const value = await fn();
    const detail = describe ? describe(value as T) : typeof value === "string" ? value : "";
    passed++;
    console.log(`ok   [${tag}] ${name}${detail ? `: ${detail}` : ""} (${fmtMs(performance.now() - t0)})`);
    return value as T;
  } catch (err) {
    failed++;
    const message = err instanceof Error ? err.message : String(err);
    console.log(`FAIL [${tag}] ${name}: ${message.split("\n").join("\n       ")} (${fmtMs(performance.now() - t0)})`);
    return undefined;
  }
}

/** Like `check`, but a failure stops the binary's remaining checks. */
async function must<T>(tag: string, name: string, fn: () => Promise<T> | T, describe?: (v: T) => string): Promise<T> {
  const value = await check<T>(tag, name, fn as () => Promise<T>, describe);
  if (value === undefined) throw new Fatal(`${name} failed`);
  return value;
}

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

// ---------------------------------------------------------------- processes

const children = new Set<Proc>();

/** A started binary: its output lines (stdout and stderr), and ways to wait for them. */
class Proc {
  readonly lines: string[] = [];
  readonly exited: Promise<number>;
  private readonly waiters = new Set<() => void>();
  private readonly sub: Bun.Subprocess<"ignore", "pipe", "pipe">;

  constructor(cmd: string[], opts: { cwd: string; env: Record<string, string> }) {
    this.sub = Bun.spawn(cmd, { cwd: opts.cwd, env: opts.env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    children.add(this);
    const pumps = [this.pump(this.sub.stdout), this.pump(this.sub.stderr)];
    this.exited = this.sub.exited.then(async (code) => {
      await Promise.all(pumps);
      children.delete(this);
      this.notify();
      return code;
    });
  }

  get pid(): number {
    return this.sub.pid;
  }

  get exitCode(): number | null {
    return this.sub.exitCode;
  }

  kill(signal: NodeJS.Signals = "SIGTERM"): void {
    if (this.sub.exitCode === null && this.sub.signalCode === null) this.sub.kill(signal);
  }

  /** The last lines of output, for a failure message. */
  tail(n = 15): string {
    return this.lines.slice(-n).map((l) => `  | ${l.length > 400 ? `${l.slice(0, 400)}…` : l}`).join("\n") || "  | (no output)";
  }

  /** Resolves with the first output line matching `predicate`; rejects on exit or timeout. */
  waitForLine(predicate: (line: string) => boolean, timeoutMs: number, what: string): Promise<string> {
    return new Promise((resolvePromise, reject) => {
      const deadline = setTimeout(() => {
        this.waiters.delete(poll);
        reject(new Error(`no ${what} within ${fmtMs(timeoutMs)}; output:\n${this.tail()}`));
      }, timeoutMs);
      const poll = () => {
        const line = this.lines.find(predicate);
        if (line !== undefined) {
          clearTimeout(deadline);
          this.waiters.delete(poll);
          resolvePromise(line);
        } else if (this.exitCode !== null || this.sub.signalCode !== null) {
          clearTimeout(deadline);
          this.waiters.delete(poll);
          reject(new Error(`exited (${this.exitCode ?? this.sub.signalCode}) before ${what}; output:\n${this.tail()}`));
        }
      };
      this.waiters.add(poll);
      poll();
    });
  }

  /** Resolves with the exit code, or kills the process and rejects after `timeoutMs`. */
  async waitExit(timeoutMs: number): Promise<number> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.kill("SIGKILL");
        reject(new Error(`did not exit within ${fmtMs(timeoutMs)} (killed); output:\n${this.tail()}`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async pump(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let rest = "";
    for await (const chunk of stream) {
      rest += decoder.decode(chunk, { stream: true });
      const parts = rest.split("\n");
      rest = parts.pop()!;
      if (parts.length) {
        this.lines.push(...parts);
        this.notify();
      }
    }
    if (rest) this.lines.push(rest);
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }
}

function killAll(): void {
  for (const p of children) p.kill("SIGKILL");
}
process.on("SIGINT", () => {
  killAll();
  process.exit(130);
});

// ---------------------------------------------------------------- HTTPS client

/** Fetch over HTTPS trusting only `ca`; throws on timeout. */
async function get(url: string, ca: string, timeoutMs: number, init: RequestInit = {}): Promise<Response> {
  return fetch(url, { ...init, tls: { ca }, signal: AbortSignal.timeout(timeoutMs) } as RequestInit);
}

async function json(res: Response): Promise<any> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`HTTP ${res.status}, not JSON: ${text.slice(0, 300)}`);
  }
}

/** The multipart body as exact bytes (so a signature covers what is sent) and its content type. */
async function multipart(fields: Record<string, string>, image: Uint8Array, filename: string): Promise<{ body: Uint8Array; contentType: string }> {
  const form = new FormData();
  form.append("image", new Blob([image as Uint8Array<ArrayBuffer>], { type: "image/jpeg" }), filename);
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  const request = new Request("https://localhost/", { method: "POST", body: form });
  // Read the header first: Bun forgets it once the body has been consumed.
  const contentType = request.headers.get("content-type");
  if (!contentType?.startsWith("multipart/form-data")) throw new Error(`FormData gave content-type ${contentType}`);
  return { body: new Uint8Array(await request.arrayBuffer()), contentType };
}

interface Keys {
  apiKey: string;
  secretKey: string;
}

type Auth = "bearer" | "signed";

/** POST /v1/plugin/convert with a bearer key or an HMAC signature (METHOD\nPATH\nTIMESTAMP\nSHA256(body)). */
async function convertRequest(
  base: string,
  ca: string,
  keys: Keys,
  auth: Auth,
  form: { body: Uint8Array; contentType: string },
  timeoutMs: number,
  timestamp = Math.floor(Date.now() / 1000),
): Promise<Response> {
  const headers: Record<string, string> = { "content-type": form.contentType };
  if (auth === "bearer") headers.authorization = `Bearer ${keys.apiKey}`;
  else {
    const bodyHash = createHash("sha256").update(form.body).digest("hex");
    headers["x-api-key"] = keys.apiKey;
    headers["x-timestamp"] = String(timestamp);
    headers["x-signature"] = createHmac("sha256", keys.secretKey).update(`POST\n/v1/plugin/convert\n${timestamp}\n${bodyHash}`).digest("hex");
  }
  return get(`${base}/v1/plugin/convert`, ca, timeoutMs, { method: "POST", headers, body: form.body as Uint8Array<ArrayBuffer> });
}

// ---------------------------------------------------------------- photo

interface Photo {
  bytes: Uint8Array;
  source: string;
  width: number;
  height: number;
}

/** Pixel count the arm64 run under qemu can convert in a few seconds. */
const TARGET_PIXELS = 1.5e6;

function listJpegs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listJpegs(path));
    else if (entry.isFile() && /\.jpe?g$/i.test(entry.name)) out.push(path);
  }
  return out.sort();
}

/** Upright dimensions (EXIF orientations 5–8 swap width and height). */
function upright(meta: Metadata): { width: number; height: number } {
  const swap = (meta.orientation ?? 1) >= 5;
  return { width: swap ? meta.height! : meta.width!, height: swap ? meta.width! : meta.height! };
}

/**
 * A real photo of about 1–2 megapixels: $SMOKE_PHOTO, else the JPEG in /usr/share/backgrounds
 * (Debian's mate-backgrounds) closest to 1.5 MP, scaled down if it is larger than 2.5 MP, else a
 * photo-like picture generated with sharp (noise, blur and gradients; never a flat image).
 */
async function pickPhoto(): Promise<Photo> {
  const explicit = process.env.SMOKE_PHOTO;
  const candidates = explicit ? [explicit] : listJpegs("/usr/share/backgrounds");
  let best: { path: string; meta: Metadata; score: number } | undefined;
  for (const path of candidates) {
    try {
      const meta = await sharp(path).metadata();
      if (meta.format !== "jpeg" || !meta.width || !meta.height) continue;
      const score = Math.abs(Math.log((meta.width * meta.height) / TARGET_PIXELS));
      if (!best || score < best.score) best = { path, meta, score };
    } catch {
      // not readable: skip
    }
  }
  if (explicit && !best) throw new Error(`SMOKE_PHOTO=${explicit} is not a readable JPEG`);
  if (best) {
    const { width, height } = upright(best.meta);
    if (width * height <= 2.5e6) return { bytes: readFileSync(best.path), source: best.path, width, height };
    const scale = Math.sqrt(TARGET_PIXELS / (width * height));
    const { data, info } = await sharp(best.path)
      .autoOrient()
      .resize({ width: Math.round(width * scale) })
      .jpeg({ quality: 90 })
      .toBuffer({ resolveWithObject: true });
    return { bytes: data, source: `${best.path} scaled to ${info.width}×${info.height}`, width: info.width, height: info.height };
  }
  const width = 1400;
  const height = 1000;
  const sky = Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
      <defs><linearGradient id="g" x1="0" y1="0" x2="0.3" y2="1">
        <stop offset="0" stop-color="#5d8ec9"/><stop offset="0.55" stop-color="#e8c98f"/><stop offset="1" stop-color="#3f5a2a"/>
      </linearGradient></defs>
      <rect width="100%" height="100%" fill="url(#g)"/>
      <circle cx="1050" cy="260" r="120" fill="#fff3c4" opacity="0.8"/>
      <path d="M0 700 Q 350 560 700 690 T 1400 650 V 1000 H 0 Z" fill="#2d4221" opacity="0.85"/>
    </svg>`,
  );
  const grain = await sharp({ create: { width, height, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 40 } } })
    .blur(1.2)
    .png()
    .toBuffer();
  const bytes = await sharp(sky)
    .composite([{ input: grain, blend: "soft-light" }])
    .jpeg({ quality: 88 })
    .toBuffer();
  return { bytes, source: "generated with sharp (no JPEG in /usr/share/backgrounds; run scripts/ci-setup.sh)", width, height };
}

/** Decodes a conversion result and checks its format and dimensions. */
async function checkImage(res: Response, format: "webp" | "avif", width: number, height: number, originalSize: number): Promise<string> {
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 300)}`);
  const type = res.headers.get("content-type");
  assert(type === `image/${format}`, `content-type ${type}, expected image/${format}`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  assert(res.headers.get("x-original-size") === String(originalSize), `x-original-size ${res.headers.get("x-original-size")} != ${originalSize}`);
  assert(res.headers.get("x-optimized-size") === String(bytes.length), `x-optimized-size ${res.headers.get("x-optimized-size")} != ${bytes.length} bytes received`);
  const meta = await sharp(bytes).metadata();
  const decoded = format === "webp" ? meta.format === "webp" : meta.format === "heif" && meta.compression === "av1";
  assert(decoded, `decodes as ${meta.format}/${meta.compression ?? "-"}, expected ${format}`);
  assert(meta.width === width && Math.abs(meta.height! - height) <= 1, `decoded ${meta.width}×${meta.height}, expected ${width}×${height}`);
  // Decode the pixels too, not only the header.
  const { info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
  assert(info.width === meta.width && info.height === meta.height, "pixel data does not match the header");
  return `${format} ${meta.width}×${meta.height}, ${bytes.length} bytes (from ${originalSize}, ${res.headers.get("x-savings-percent")}% saved)`;
}

// ---------------------------------------------------------------- the binaries

interface Target {
  file: string;
  arch: Arch;
  /** Command prefix: [] natively, the qemu command line for a foreign CPU. */
  runner: string[];
  emulated: boolean;
}

function elfArch(file: string): Arch {
  const header = readFileSync(file).subarray(0, 20);
  assert(header[0] === 0x7f && header.toString("latin1", 1, 4) === "ELF", `${file} is not an ELF executable`);
  const arch = ELF_ARCH[header.readUInt16LE(18)];
  assert(arch, `${file}: unsupported ELF machine ${header.readUInt16LE(18)}`);
  return arch;
}

function which(exe: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(":")) if (dir && existsSync(join(dir, exe))) return join(dir, exe);
  return undefined;
}

/**
 * How to run `file`: natively when it is for this CPU (unless a CPU model is asked for), else
 * under qemu-user with `cpu` as the emulated model. The default foreign arm64 model is the
 * Cortex-A53 (ARMv8.0, as in the Raspberry Pi 3 and Zero 2 and many NAS boards): qemu's
 * default "max" model would hide a binary that needs newer instructions.
 */
function target(file: string, cpus: Partial<Record<Arch, string>>): Target {
  const arch = elfArch(file);
  const native: Arch = hostArch() === "arm64" ? "arm64" : "x64";
  const cpu = cpus[arch] ?? (arch === native ? undefined : DEFAULT_QEMU_CPU[arch]);
  if (arch === native && !cpu) return { file, arch, runner: [], emulated: false };
  const q = QEMU[arch];
  const exe = which(q.exe);
  assert(exe, `${q.exe} not found: run scripts/ci-setup.sh (needs qemu-user-static and the ${arch} cross libraries)`);
  const sysroot = arch === native ? [] : ["-L", q.sysroot];
  if (arch !== native) assert(existsSync(q.sysroot), `${q.sysroot} missing: run scripts/ci-setup.sh`);
  return { file, arch, runner: [exe, ...(cpu ? ["-cpu", cpu] : []), ...sysroot], emulated: true };
}

/** Timeouts: qemu-user runs the arm64 binary roughly 20–30× slower than native. */
function limits(t: Target) {
  const f = t.emulated ? 10 : 1;
  return { start: 20_000 * f, request: 15_000 * f, convert: 30_000 * f, stop: 15_000 * f, cli: 20_000 * f };
}

/** The extracted libraries in a cache folder, by library (the folder name starts with its package). */
function cacheEntries(dir: string): { names: string[]; byLibrary: Record<string, string[]>; leftovers: string[] } {
  const names = existsSync(dir) ? readdirSync(dir).sort() : [];
  const byLibrary: Record<string, string[]> = {};
  for (const lib of LIBRARIES) byLibrary[lib] = names.filter((n) => n.startsWith(`${lib}-linux-`));
  const leftovers = names.filter((n) => !LIBRARIES.some((lib) => n.startsWith(`${lib}-linux-`)));
  return { names, byLibrary, leftovers };
}

/** Asserts exactly one complete extraction per library, for this CPU, and nothing else. */
function assertOneExtraction(dir: string, arch: Arch, same?: string[]): string {
  const { names, byLibrary, leftovers } = cacheEntries(dir);
  for (const lib of LIBRARIES) {
    const hits = byLibrary[lib]!;
    assert(hits.length === 1, `${dir}: expected one ${lib} extraction, found ${hits.length} in [${names.join(", ")}]`);
    assert(hits[0]!.startsWith(`${lib}-linux-${arch}-`), `${dir}/${hits[0]} is not for ${arch}`);
  }
  assert(leftovers.length === 0, `${dir}: unexpected entries [${leftovers.join(", ")}] (temporary folders not cleaned up?)`);
  if (same) assert(JSON.stringify(names) === JSON.stringify(same), `${dir} holds [${names}], the first start made [${same}]`);
  return names
    .map((name) => {
      const files = listFiles(join(dir, name));
      assert(files.some((f) => f.endsWith(".node")), `${dir}/${name} has no .node file`);
      return `${name} (${files.length} files)`;
    })
    .join(", ");
}

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
    return readFileSync("/proc/self/mounts", "utf8")
      .split("\n")
      .map((line) => line.split(" "))
      .filter((f) => f.length >= 4)
      // /proc/mounts escapes spaces and the like as octal (\040).
      .map((f) => ({ mountPoint: f[1]!.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))), options: f[3]!.split(",") }));
  } catch {
    return [];
  }
}

/** True when `path` lies on a filesystem mounted noexec. */
function onNoexec(path: string): boolean {
  let best: { mountPoint: string; options: string[] } | undefined;
  for (const m of mounts()) {
    const inside = path === m.mountPoint || path.startsWith(m.mountPoint.endsWith("/") ? m.mountPoint : `${m.mountPoint}/`);
    if (inside && (!best || m.mountPoint.length >= best.mountPoint.length)) best = m;
  }
  return best?.options.includes("noexec") ?? false;
}

/**
 * A writable folder on a noexec mount, for the "clear error" check: $SMOKE_NOEXEC_DIR, else a
 * new folder in a standard noexec mount (e.g. /dev/shm on many CI hosts), else none.
 */
function noexecDir(): { dir: string } | undefined {
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
function tempRoot(): string {
  const candidates = process.env.SMOKE_TMPDIR ? [process.env.SMOKE_TMPDIR] : [tmpdir(), "/var/tmp"];
  for (const dir of candidates) {
    const real = realpathSync(dir);
    if (!onNoexec(real)) return real;
  }
  throw new Error(`${candidates.join(" and ")} are mounted noexec, so no binary can run there; set SMOKE_TMPDIR to another folder`);
}

/** A node_modules folder in `dir` or above it would let a broken binary load packages from it. */
function nodeModulesAbove(dir: string): string | undefined {
  for (let d = dir; ; d = resolve(d, "..")) {
    if (existsSync(join(d, "node_modules"))) return join(d, "node_modules");
    if (d === "/") return undefined;
  }
}

interface Listening {
  url: string;
  dataDir: string;
  selfSignedCert?: string;
  certSha256?: string;
}

/** Starts `serve` and waits for its "imgpress listening" log line. */
async function startServer(t: Target, exe: string, cwd: string, env: Record<string, string>): Promise<{ proc: Proc; info: Listening }> {
  const proc = new Proc([...t.runner, exe], { cwd, env });
  try {
    const line = await proc.waitForLine((l) => l.includes('"imgpress listening"'), limits(t).start, 'the "imgpress listening" log line');
    return { proc, info: JSON.parse(line) as Listening };
  } catch (err) {
    proc.kill("SIGKILL");
    throw err;
  }
}

async function stopServer(t: Target, proc: Proc): Promise<string> {
  proc.kill("SIGTERM");
  const code = await proc.waitExit(limits(t).stop);
  assert(code === 0, `exit status ${code} after SIGTERM; output:\n${proc.tail()}`);
  assert(proc.lines.some((l) => l.includes('"msg":"stopped"')), `no "stopped" log line; output:\n${proc.tail()}`);
  return "exit 0 after SIGTERM";
}

/** Runs a CLI command of the binary to completion. */
async function runCli(t: Target, exe: string, args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const sub = Bun.spawn([...t.runner, exe, ...args], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => sub.kill("SIGKILL"), limits(t).cli);
  try {
    const [stdout, stderr, code] = await Promise.all([new Response(sub.stdout).text(), new Response(sub.stderr).text(), sub.exited]);
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}

/** The environment of every run: nothing inherited but PATH, so no IMGPRESS_* of the caller leaks in. */
function baseEnv(tmp: string, t: Target): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(tmp, "home"),
    XDG_CACHE_HOME: join(tmp, "xdg-cache"),
    TMPDIR: join(tmp, "tmpdir"),
    LANG: "C.UTF-8",
  };
  if (t.emulated) {
    // Room for slow emulated encoders; the defaults fit real hardware.
    env.IMGPRESS_CONVERT_TIMEOUT_S = "600";
    env.IMGPRESS_QUEUE_TIMEOUT_S = "600";
    env.IMGPRESS_UPLOAD_TIMEOUT_S = "600";
  }
  return env;
}

async function smokeBinary(t: Target, root: string, photo: Photo, sink: SmtpSink, keep: boolean): Promise<boolean> {
  const tag = t.arch + (t.emulated ? " qemu" : "");
  const lim = limits(t);
  const tmp = mkdtempSync(join(root, `imgpress-smoke-${t.arch}-`));
  const run = join(tmp, "run");
  for (const d of [run, join(tmp, "home"), join(tmp, "xdg-cache"), join(tmp, "tmpdir")]) mkdirSync(d, { recursive: true });
  const exe = join(run, basename(t.file));
  copyFileSync(t.file, exe);
  chmodSync(exe, 0o755);
  const env = baseEnv(tmp, t);
  const cacheDir = join(tmp, "xdg-cache", "imgpress");
  const dataDir = join(run, "imgpress-data");
  const version = ((await Bun.file(join(ROOT, "package.json")).json()) as { version: string }).version;
  const email = `smoke-${t.arch}@example.com`;
  const failedBefore = failed;
  const started = performance.now();
  const shown = relative(ROOT, t.file).startsWith("..") ? t.file : relative(ROOT, t.file);
  console.log(`---- ${shown}: ${t.arch}${t.emulated ? ` under ${t.runner.join(" ")}` : " native"}, ${(statSync(t.file).size / 1048576).toFixed(1)} MiB, in ${tmp}`);

  const servers: Proc[] = [];
  try {
    await check(tag, "--version", async () => {
      const r = await runCli(t, exe, ["--version"], run, env);
      assert(r.code === 0, `exit ${r.code}: ${r.stderr.trim()}`);
      assert(r.stdout.trim().startsWith(`imgpress ${version} `), `prints ${JSON.stringify(r.stdout.trim())}, expected "imgpress ${version} (…)"`);
      return r.stdout.trim();
    });
    await check(tag, "--help", async () => {
      const r = await runCli(t, exe, ["--help"], run, env);
      assert(r.code === 0, `exit ${r.code}: ${r.stderr.trim()}`);
      for (const word of ["Usage:", "keys list", "IMGPRESS_PORT", "IMGPRESS_DATA_DIR", "IMGPRESS_SMTP_URL"]) {
        assert(r.stdout.includes(word), `help text lacks ${JSON.stringify(word)}`);
      }
      return `${r.stdout.split("\n").length} lines`;
    });
    const firstCache = await must(tag, "cache: one extraction per library under $XDG_CACHE_HOME/imgpress", () => {
      const summary = assertOneExtraction(cacheDir, t.arch);
      assert(!existsSync(join(tmp, "home", ".cache")), "also wrote to $HOME/.cache although XDG_CACHE_HOME is set");
      return { summary, names: cacheEntries(cacheDir).names };
    }, (v) => v.summary);

    // ---- first start
    const serveEnv = { ...env, IMGPRESS_PORT: "0", IMGPRESS_HOST: "127.0.0.1", IMGPRESS_SMTP_URL: sink.url };
    const first = await must(tag, "serve: first start", async () => {
      const s = await startServer(t, exe, run, serveEnv);
      servers.push(s.proc);
      return s;
    }, (s) => `${s.info.url}, data ${relative(tmp, s.info.dataDir)}`);
    const base = first.info.url;
    const certPath = join(dataDir, "tls", "cert.pem");
    const ca = await must(tag, "serve: listening line and self-signed certificate", () => {
      assert(/^https:\/\/127\.0\.0\.1:\d+$/.test(base), `url ${base}`);
      assert(first.info.dataDir === dataDir, `dataDir ${first.info.dataDir}, expected ${dataDir} (./imgpress-data)`);
      assert(first.info.selfSignedCert === certPath, `selfSignedCert ${first.info.selfSignedCert}, expected ${certPath}`);
      return readFileSync(certPath, "utf8");
    }, () => `${relative(tmp, certPath)}, sha256 ${first.info.certSha256?.slice(0, 23)}…`);

    await must(tag, "GET /health over verified HTTPS", async () => {
      const res = await get(`${base}/health`, ca, lim.request);
      const body = await json(res);
      assert(res.status === 200, `HTTP ${res.status}: ${JSON.stringify(body)}`);
      assert(JSON.stringify(body) === '{"status":"ok"}', `body ${JSON.stringify(body)}`);
      // The same request without the certificate must be refused, or the check above proved nothing.
      const unverified = await fetch(`${base}/health`, { signal: AbortSignal.timeout(lim.request) }).then(
        () => "accepted",
        (err: Error) => err.message,
      );
      assert(unverified !== "accepted", "a client that does not trust cert.pem was accepted: TLS verification is not in effect");
      return `200 {"status":"ok"}; untrusted client refused (${unverified.slice(0, 60)})`;
    });

    await check(tag, "GET /v1/docs: HTML with its script served locally", async () => {
      const res = await get(`${base}/v1/docs`, ca, lim.request);
      const html = await res.text();
      assert(res.status === 200 && /text\/html/.test(res.headers.get("content-type") ?? ""), `HTTP ${res.status} ${res.headers.get("content-type")}`);
      const refs = [...html.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!);
      const external = refs.filter((r) => /^(https?:)?\/\//i.test(r));
      assert(external.length === 0, `page loads from outside the server: ${external.join(", ")}`);
      const scripts = refs.filter((r) => /\.m?js(\?|$)/.test(r));
      assert(scripts.length > 0, "page references no script");
      const sizes: string[] = [];
      for (const src of scripts) {
        const js = await get(new URL(src, `${base}/v1/docs`).href, ca, lim.request);
        const body = await js.arrayBuffer();
        assert(js.status === 200, `${src}: HTTP ${js.status}`);
        assert(/javascript/.test(js.headers.get("content-type") ?? ""), `${src}: content-type ${js.headers.get("content-type")}`);
        assert(body.byteLength > 100_000, `${src}: only ${body.byteLength} bytes`);
        sizes.push(`${src} ${(body.byteLength / 1048576).toFixed(1)} MiB`);
      }
      const spec = await json(await get(`${base}/v1/docs/json`, ca, lim.request));
      assert(spec.paths?.["/v1/plugin/convert"], "/v1/docs/json lacks /v1/plugin/convert");
      return `${sizes.join(", ")}; /v1/docs/json has ${Object.keys(spec.paths).length} paths`;
    });

    // ---- credentials by e-mail
    const keys = await must(tag, "OTP round trip through the SMTP sink", async () => {
      const req = await get(`${base}/v1/plugin/auth/request-otp`, ca, lim.request, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email, site_url: "https://blog.example.com" }),
      });
      const reqBody = await json(req);
      assert(req.status === 200 && reqBody.status === "success", `request-otp: HTTP ${req.status} ${JSON.stringify(reqBody)}`);
      const mail = await sink.waitFor((m) => m.envelopeTo.includes(email), lim.request);
      const otp = extractOtp(mail);
      const ver = await get(`${base}/v1/plugin/auth/verify-otp`, ca, lim.request, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email, otp, site_url: "https://blog.example.com" }),
      });
      const verBody = await json(ver);
      assert(ver.status === 200 && verBody.status === "success", `verify-otp: HTTP ${ver.status} ${JSON.stringify(verBody)}`);
      assert(/^imp_/.test(verBody.api_key) && /^imps_/.test(verBody.secret_key), `unexpected keys ${verBody.api_key?.slice(0, 8)}… ${verBody.secret_key?.slice(0, 8)}…`);
      return { apiKey: verBody.api_key as string, secretKey: verBody.secret_key as string, subject: mail.subject };
    }, (k) => `mail "${k.subject}" → code → api_key ${k.apiKey.slice(0, 12)}…`);

    // ---- conversions of a real photo
    const webpForm = await multipart({ format: "webp" }, photo.bytes, "photo.jpg");
    await check(tag, "convert JPEG → WebP (bearer key)", async () => {
      const res = await convertRequest(base, ca, keys, "bearer", webpForm, lim.convert);
      return checkImage(res, "webp", photo.width, photo.height, photo.bytes.length);
    });
    const avifWidth = Math.min(640, photo.width);
    const avifHeight = Math.round((photo.height * avifWidth) / photo.width);
    const avifForm = await multipart({ format: "avif", max_width: String(avifWidth) }, photo.bytes, "photo.jpg");
    const avifTs = Math.floor(Date.now() / 1000);
    await check(tag, `convert JPEG → AVIF, max_width ${avifWidth} (signed request)`, async () => {
      const res = await convertRequest(base, ca, keys, "signed", avifForm, lim.convert, avifTs);
      return checkImage(res, "avif", avifWidth, avifHeight, photo.bytes.length);
    });
    await check(tag, "signed request replayed → 401 REPLAYED_REQUEST", async () => {
      const res = await convertRequest(base, ca, keys, "signed", avifForm, lim.convert, avifTs);
      const body = await json(res);
      assert(res.status === 401 && body.code === "REPLAYED_REQUEST", `HTTP ${res.status} ${JSON.stringify(body)}`);
      return "401 REPLAYED_REQUEST";
    });

    await check(tag, "GET /internal/metrics: prom-client output, counts the conversions, passes promtool", async () => {
      const res = await get(`${base}/internal/metrics`, ca, lim.request);
      const text = await res.text();
      assert(res.status === 200, `HTTP ${res.status}`);
      const ok = [...text.matchAll(/^imgpress_conversions_total\{[^}]*outcome="ok"\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
      assert(ok === 2, `imgpress_conversions_total{outcome="ok"} sums to ${ok}, not 2`);
      assert(/^process_resident_memory_bytes [1-9]/m.test(text), "no process_resident_memory_bytes");
      if (!Bun.which("promtool")) return `${ok} conversions counted; promtool not installed (scripts/ci-setup.sh installs it), not checked`;
      const promtool = Bun.spawn(["promtool", "check", "metrics"], { stdin: new TextEncoder().encode(text), stdout: "pipe", stderr: "pipe" });
      const [out, err, code] = await Promise.all([new Response(promtool.stdout).text(), new Response(promtool.stderr).text(), promtool.exited]);
      assert(code === 0, `promtool check metrics: ${out}${err}`);
      return `${ok} conversions counted; promtool check metrics clean`;
    });
    await check(tag, "imgpress health → exit 0 against the running server", async () => {
      const { code, stdout } = await runCli(t, exe, ["health", "--url", `${base}/health/ready`], run, serveEnv);
      assert(code === 0, `exit ${code}: ${stdout}`);
      return stdout.trim().slice(0, 60);
    });

    await must(tag, "SIGTERM", () => stopServer(t, first.proc));

    // ---- restart on the same data folder
    const second = await must(tag, "serve: restart on the same data folder", async () => {
      const s = await startServer(t, exe, run, serveEnv);
      servers.push(s.proc);
      return s;
    }, (s) => s.info.url);
    const base2 = second.info.url;
    await check(tag, "restart: same certificate, /health verified against the first start's cert.pem", async () => {
      assert(readFileSync(certPath, "utf8") === ca, "cert.pem changed on restart");
      assert(second.info.certSha256 === first.info.certSha256, `fingerprint ${second.info.certSha256} != ${first.info.certSha256}`);
      const res = await get(`${base2}/health`, ca, lim.request);
      assert(res.status === 200, `HTTP ${res.status}`);
      return "unchanged";
    });
    const small = Math.min(480, photo.width);
    await check(tag, `restart: key still valid, JPEG → WebP max_width ${small} (signed request)`, async () => {
      const form = await multipart({ format: "webp", max_width: String(small) }, photo.bytes, "photo.jpg");
      const res = await convertRequest(base2, ca, keys, "signed", form, lim.convert);
      return checkImage(res, "webp", small, Math.round((photo.height * small) / photo.width), photo.bytes.length);
    });
    await check(tag, "cache: extraction reused on restart (no new copy)", () => assertOneExtraction(cacheDir, t.arch, firstCache.names));
    await must(tag, "SIGTERM after restart", () => stopServer(t, second.proc));

    // ---- admin CLI
    await check(tag, "imgpress keys list", async () => {
      const table = await runCli(t, exe, ["keys", "list"], run, env);
      assert(table.code === 0, `exit ${table.code}: ${table.stderr.trim()}`);
      assert(table.stdout.includes(email) && table.stdout.includes(keys.apiKey.slice(0, 12)), `no row for ${email} / ${keys.apiKey.slice(0, 12)}…:\n${table.stdout}`);
      const listed = await runCli(t, exe, ["keys", "list", "--json"], run, env);
      assert(listed.code === 0, `--json: exit ${listed.code}: ${listed.stderr.trim()}`);
      const rows = JSON.parse(listed.stdout) as { email: string; keyPrefix: string; conversions: number }[];
      const row = rows.find((r) => r.email === email);
      assert(row && keys.apiKey.startsWith(row.keyPrefix), `--json has no row for ${email}: ${listed.stdout.slice(0, 300)}`);
      assert(row.conversions === 3, `conversions ${row.conversions}, expected 3`);
      return `row for ${email}, ${row.keyPrefix}…, 3 conversions`;
    });

    await check(tag, "nothing written outside the data, cache and home folders", () => {
      const inRun = readdirSync(run).sort();
      assert(JSON.stringify(inRun) === JSON.stringify([basename(exe), "imgpress-data"].sort()), `working folder holds [${inRun.join(", ")}]`);
      const inTmp = readdirSync(join(tmp, "tmpdir"));
      assert(inTmp.length === 0, `TMPDIR holds [${inTmp.join(", ")}]`);
      return `working folder: ${basename(exe)}, imgpress-data/ (${readdirSync(dataDir).sort().join(", ")}); TMPDIR empty`;
    });

    // ---- concurrent first starts on an empty cache
    await check(tag, `${CONCURRENT_STARTS} concurrent first starts on an empty IMGPRESS_CACHE_DIR`, async () => {
      const conc = join(tmp, "concurrent");
      const cache = join(conc, "cache");
      mkdirSync(conc, { recursive: true });
      const procs = Array.from({ length: CONCURRENT_STARTS }, (_, i) => {
        const p = new Proc([...t.runner, exe], {
          cwd: run,
          env: { ...serveEnv, IMGPRESS_CACHE_DIR: cache, IMGPRESS_DATA_DIR: join(conc, `data-${i}`) },
        });
        servers.push(p);
        return p;
      });
      const t0 = performance.now();
      try {
        const lines = await Promise.all(
          procs.map((p) => p.waitForLine((l) => l.includes('"imgpress listening"'), lim.start * 2, 'the "imgpress listening" log line')),
        );
        const startedIn = performance.now() - t0;
        await Promise.all(
          lines.map(async (line, i) => {
            const info = JSON.parse(line) as Listening;
            const res = await get(`${info.url}/health`, readFileSync(join(conc, `data-${i}`, "tls", "cert.pem"), "utf8"), lim.request * 2);
            assert(res.status === 200, `instance ${i}: /health HTTP ${res.status}`);
          }),
        );
        for (const p of procs) p.kill("SIGTERM");
        const codes = await Promise.all(procs.map((p) => p.waitExit(lim.stop * 2)));
        assert(codes.every((c) => c === 0), `exit statuses ${codes.join(",")}`);
        const summary = assertOneExtraction(cache, t.arch, firstCache.names);
        return `all ${CONCURRENT_STARTS} healthy (all listening after ${fmtMs(startedIn)}), exit 0; cache holds ${summary}`;
      } finally {
        for (const p of procs) p.kill("SIGKILL");
      }
    });

    // qemu-user maps code itself and ignores noexec, so this only means something natively.
    const noexec = t.emulated ? undefined : noexecDir();
    if (noexec) {
      await check(tag, `IMGPRESS_CACHE_DIR on a noexec mount (${noexec.dir}) → clear error`, async () => {
        const r = await runCli(t, exe, ["--version"], run, { ...env, IMGPRESS_CACHE_DIR: join(noexec.dir, "cache") });
        assert(r.code !== 0, "started although its libraries cannot be mapped executable");
        assert(/noexec/.test(r.stderr) && /IMGPRESS_CACHE_DIR/.test(r.stderr), `stderr does not explain it: ${r.stderr.trim().slice(0, 300)}`);
        return `exit ${r.code}: ${r.stderr.trim().split("\n")[0]!.slice(0, 110)}…`;
      });
      rmSync(noexec.dir, { recursive: true, force: true });
    }
  } catch (err) {
    if (!(err instanceof Fatal)) {
      failed++;
      console.log(`FAIL [${tag}] unexpected error: ${(err as Error).stack ?? err}`);
    } else {
      const last = servers.at(-1);
      if (last) console.log(`     [${tag}] remaining checks skipped; server output:\n${last.tail(20)}`);
      else console.log(`     [${tag}] remaining checks skipped`);
    }
  } finally {
    for (const p of servers) p.kill("SIGKILL");
    await Promise.all(servers.map((p) => p.exited));
  }
  const ok = failed === failedBefore;
  console.log(`---- ${t.arch}: ${ok ? "passed" : "FAILED"} in ${fmtMs(performance.now() - started)}${ok && !keep ? "" : `; files kept in ${tmp}`}`);
  if (ok && !keep) rmSync(tmp, { recursive: true, force: true });
  return ok;
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const usage = () => {
    console.error(
      `usage: bun scripts/smoke.ts [--keep] [--cpu ARCH=MODEL]... [BINARY...]\n` +
        `  default binaries: ${DEFAULT_BINARIES.join(" ")}\n` +
        `  --cpu x64=Nehalem     run the x64 binary under qemu-x86_64-static as a CPU without AVX\n` +
        `  --cpu arm64=max       emulated arm64 CPU model (default cortex-a53)`,
    );
    process.exit(2);
  };
  let keep = false;
  const cpus: Partial<Record<Arch, string>> = {};
  const files: string[] = [];
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--keep") keep = true;
    else if (a === "--cpu" || a.startsWith("--cpu=")) {
      const spec = a === "--cpu" ? args[++i] : a.slice("--cpu=".length);
      const m = /^(x64|arm64)=([\w.+-]+)$/.exec(spec ?? "");
      if (!m) usage();
      cpus[m![1] as Arch] = m![2]!;
    } else if (a.startsWith("-")) usage();
    else files.push(a);
  }
  const targets: Target[] = [];
  for (const f of files.length ? files : DEFAULT_BINARIES) {
    const file = resolve(ROOT, f);
    const t = await check("setup", `binary ${f}`, () => {
      assert(existsSync(file), `${file} not found: run npm run build first`);
      return target(file, cpus);
    }, (t) => `${t.arch}${t.emulated ? `, via ${[basename(t.runner[0]!), ...t.runner.slice(1)].join(" ")}` : ", native"}`);
    if (t) targets.push(t);
  }
  // The checksum file written by the build, when the binaries come from it.
  for (const t of targets) {
    const sums = join(resolve(t.file, ".."), "SHA256SUMS");
    const line = existsSync(sums) ? readFileSync(sums, "utf8").split("\n").find((l) => l.endsWith(`  ${basename(t.file)}`)) : undefined;
    if (!line) continue;
    await check("setup", `SHA256SUMS entry of ${basename(t.file)}`, async () => {
      const digest = createHash("sha256").update(await Bun.file(t.file).bytes()).digest("hex");
      assert(line.startsWith(`${digest}  `), `${sums} says ${line.split(" ")[0]}, the file hashes to ${digest}`);
      return `${digest.slice(0, 16)}… matches`;
    });
  }
  const root = await check("setup", "temporary folder", () => {
    const dir = tempRoot();
    const above = nodeModulesAbove(dir);
    assert(!above, `${above} is visible from ${dir}: a binary that still needs node_modules could pass; set SMOKE_TMPDIR elsewhere`);
    return dir;
  }, (d) => `${d} (exec allowed, no node_modules above)`);
  const photo = await check("setup", "photo", pickPhoto, (p) => `${p.source}, ${p.width}×${p.height}, ${p.bytes.length} bytes`);
  const sink = await check("setup", "SMTP sink", startSmtpSink, (s) => s.url);
  if (root && photo && sink) {
    try {
      for (const t of targets) await smokeBinary(t, root, photo, sink, keep);
    } finally {
      await sink.close();
    }
  }
  killAll();
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}

await main();
