// Optional glibc malloc tuning for the reference worker, to measure in-process what the same call
// in the service's entry point would do (the src change RESULTS.md proposes): BENCH_MALLOPT=
// "arena_max=2,mmap_threshold=16777216". Must be imported before sharp so that libvips' worker
// threads are created under the new settings. A no-op unless the variable is set.
import { dlopen, FFIType } from "bun:ffi";

const PARAMS: Record<string, number> = {
  trim_threshold: -1,
  top_pad: -2,
  mmap_threshold: -3,
  mmap_max: -4,
  arena_test: -7,
  arena_max: -8,
};

const spec = process.env.BENCH_MALLOPT;
const libc =
  spec || process.env.BENCH_MALLOC_TRIM || process.env.BENCH_IDLE_RELEASE
    ? dlopen("libc.so.6", {
        mallopt: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
        malloc_trim: { args: [FFIType.u64], returns: FFIType.i32 },
      })
    : undefined;
if (spec && libc) {
  for (const pair of spec.split(",")) {
    const [name, value] = pair.split("=");
    const param = PARAMS[name!.trim()];
    if (param === undefined || libc.symbols.mallopt(param, Number(value)) !== 1)
      throw new Error(`mallopt ${pair} failed`);
  }
}

/** With BENCH_MALLOC_TRIM=1, gives freed heap pages back after each conversion (malloc_trim(0)). */
export function afterConversion(): void {
  if (process.env.BENCH_MALLOC_TRIM) libc?.symbols.malloc_trim(0);
}

/**
 * With BENCH_IDLE_RELEASE=1, what src/main.ts hands the server as `releaseFreedMemory` (a full GC,
 * then malloc_trim once conversions pause), so that a BENCH_MALLOPT variant differs from the
 * server as is in its mallopt() values alone; undefined otherwise.
 */
export const idleRelease = process.env.BENCH_IDLE_RELEASE
  ? () => {
      Bun.gc(true);
      libc?.symbols.malloc_trim(0);
    }
  : undefined;
