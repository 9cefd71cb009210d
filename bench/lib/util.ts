// Small helpers shared by the bench scripts: statistics, formatting, progress lines, /proc reads.
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const started = performance.now();

/** A progress line with the elapsed time of the whole run. */
export function progress(msg: string): void {
  const s = Math.round((performance.now() - started) / 1000);
  const stamp = `${String(Math.floor(s / 60)).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}`;
  console.log(`[bench ${stamp}] ${msg}`);
}

/** The median (NaN for none). */
export function median(xs: number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** The 95th percentile (nearest rank) of `xs`. */
export function p95(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(0.95 * xs.length) - 1)]!;
}

/** MiB on disk of the libSQL database in `dir` (main file and write-ahead log). */
export function dbSizeMiB(dir: string): number {
  return (
    ["imgpress.db", "imgpress.db-wal"].reduce(
      (n, f) => n + (existsSync(join(dir, f)) ? statSync(join(dir, f)).size : 0),
      0,
    ) /
    2 ** 20
  );
}

/** The sum. */
export function sum(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}

/** The geometric mean. */
export function geomean(xs: number[]): number {
  return Math.exp(sum(xs.map(Math.log)) / xs.length);
}

/** KiB → MiB. */
export const mib = (kib: number) => kib / 1024;
/** A number with `digits` decimals, or "n/a". */
export const fmt = (x: number, digits = 2) => (Number.isFinite(x) ? x.toFixed(digits) : "n/a");
/** `12.3 ms`, `456 ms` or `12.3 s`. */
export const fmtMs = (ms: number) =>
  ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;

/** Fields of /proc/<pid>/status in KiB (VmRSS, VmHWM, RssAnon, RssFile…), or null once the process is gone. */
export function procStatus(pid: number): Record<string, number> | null {
  try {
    const out: Record<string, number> = {};
    for (const line of readFileSync(`/proc/${pid}/status`, "utf8").split("\n")) {
      const m = /^(\w+):\s+(\d+)(?: kB)?$/.exec(line);
      if (m) out[m[1]!] = Number(m[2]);
    }
    return out;
  } catch {
    return null;
  }
}

/** Resets the peak-RSS counter (VmHWM) of a process; false when the kernel refuses (not root, old kernel). */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

/**
 * Peak resident memory of a process over a phase: samples VmRSS every `intervalMs` and, where the
 * kernel allows, also resets and reads VmHWM (the exact high-water mark between samples).
 */
export class PeakRss {
  private maxKiB = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  private hwmReset = false;
  constructor(
    private readonly pid: number,
    private readonly intervalMs = 20,
  ) {}

  start(): this {
    this.hwmReset = resetPeak(this.pid);
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    return this;
  }

  private sample(): void {
    const s = procStatus(this.pid);
    if (s?.VmRSS) this.maxKiB = Math.max(this.maxKiB, s.VmRSS);
  }

  /** Stops sampling and returns the peak in KiB. */
  stop(): number {
    clearInterval(this.timer);
    this.sample();
    const s = procStatus(this.pid);
    if (this.hwmReset && s?.VmHWM) this.maxKiB = Math.max(this.maxKiB, s.VmHWM);
    return this.maxKiB;
  }
}

/** Markdown table. */
export function table(head: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.map((c) => String(c).replaceAll("|", "\\|")).join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join("\n");
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * The bench's environment for a child process, minus the allocator and libvips settings the bench
 * controls per run (an inherited value would skew the baseline), plus `extra`.
 */
export function childEnv(extra: Record<string, string | undefined> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(MALLOC_|VIPS_|GLIBC_TUNABLES$|BENCH_MALLOPT$)/.test(k)) continue;
    out[k] = v;
  }
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) out[k] = v;
  return out;
}

/**
 * A process's counters so far, from one read of /proc/<pid>/stat: CPU time (user + system) in ms,
 * robust to other load unlike wall time, and minor page faults (memory the kernel had to map in afresh).
 */
export function procCounters(pid: number): { cpuMs: number; minorFaults: number } {
  // Fields after the command's closing parenthesis: state is 0, minflt 7, utime 11, stime 12 (clock ticks, USER_HZ = 100).
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return { cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / 100, minorFaults: Number(fields[7]) };
}

/** CPU time (user + system) of a process so far, in ms (procCounters). */
export function cpuMs(pid: number): number {
  return procCounters(pid).cpuMs;
}
