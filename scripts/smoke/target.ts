// Which CPU an executable is for and how to run it here: natively, or under qemu-user.
import { existsSync, readFileSync } from "node:fs";
import { arch as hostArch } from "node:os";
import { join } from "node:path";
import { assert } from "./report.ts";

/** The CPUs the build targets. */
export type Arch = "x64" | "arm64";

const ELF_ARCH: Record<number, Arch> = { 62: "x64", 183: "arm64" };
const QEMU: Record<Arch, { exe: string; sysroot: string }> = {
  x64: { exe: "qemu-x86_64-static", sysroot: "/usr/x86_64-linux-gnu" },
  arm64: { exe: "qemu-aarch64-static", sysroot: "/usr/aarch64-linux-gnu" },
};
const DEFAULT_QEMU_CPU: Record<Arch, string | undefined> = { x64: undefined, arm64: "cortex-a53" };

/** One executable to smoke-test, and how this machine runs it. */
export interface Target {
  file: string;
  arch: Arch;
  /** Command prefix: [] natively, the qemu command line for a foreign CPU. */
  runner: string[];
  emulated: boolean;
}

/** The CPU an ELF executable is for, from its header. */
function elfArch(file: string): Arch {
  const header = readFileSync(file).subarray(0, 20);
  assert(header[0] === 0x7f && header.toString("latin1", 1, 4) === "ELF", `${file} is not an ELF executable`);
  const arch = ELF_ARCH[header.readUInt16LE(18)];
  assert(arch, `${file}: unsupported ELF machine ${header.readUInt16LE(18)}`);
  return arch;
}

/** The first `exe` on PATH. */
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
export function target(file: string, cpus: Partial<Record<Arch, string>>): Target {
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

/** Time limits of one binary's steps, in ms. */
export interface Limits {
  start: number;
  request: number;
  convert: number;
  stop: number;
  cli: number;
}

/** Time limits: qemu-user runs the arm64 binary roughly 20–30× slower than native. */
export function limits(t: Target): Limits {
  const f = t.emulated ? 10 : 1;
  return { start: 20_000 * f, request: 15_000 * f, convert: 30_000 * f, stop: 15_000 * f, cli: 20_000 * f };
}
