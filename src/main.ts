// Bun entry point: tunes the allocator, then runs the command line on the Bun runtime (src/bun.ts).
import { dlopen, FFIType } from "bun:ffi";

tuneGlibcMalloc();
// Imported only now, so that libvips' worker threads start under the allocator settings above.
const [{ runMain }, { bunRuntime }] = await Promise.all([import("./cli/run.ts"), import("./bun.ts")]);

/**
 * glibc gives every thread that allocates its own malloc arena (up to 8 per core) and keeps freed
 * large buffers in them, so a conversion service's RSS climbs to the sum of its worst images and
 * stays there. Two arenas and a fixed 1 MiB mmap threshold (big pixel buffers are mmap'ed and
 * returned on free) cut peak RSS under load from ~880 to ~500 MiB at unchanged throughput
 * (bench/RESULTS.md). Setting MALLOC_ARENA_MAX at exec time would do the same, but a downloaded
 * binary cannot rely on its caller's environment. Not glibc (e.g. musl): nothing to tune.
 */
function tuneGlibcMalloc(): void {
  const M_MMAP_THRESHOLD = -3;
  const M_ARENA_MAX = -8;
  try {
    const libc = dlopen("libc.so.6", { mallopt: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } });
    if (!process.env.MALLOC_ARENA_MAX) libc.symbols.mallopt(M_ARENA_MAX, 2);
    if (!process.env.MALLOC_MMAP_THRESHOLD_) libc.symbols.mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
  } catch {
    // no glibc: leave the allocator as it is
  }
}

process.exit(await runMain(process.argv.slice(2), bunRuntime));
