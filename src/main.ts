// Bun entry point: tunes the allocator, then runs the command line on the Bun runtime (src/bun.ts).
import { dlopen, FFIType } from "bun:ffi";

/**
 * Buffers above this are mmap'ed and unmapped on free. 16 MiB keeps a 2048 px thumbnail's
 * decoded pixels (up to 12 MiB with alpha) in the arenas, where the next job reuses them instead
 * of page-faulting fresh memory (bench/RESULTS.md, "Thumbnails"); a large photo's still go back.
 */
const MMAP_THRESHOLD = 16 * 1024 * 1024;
const trimMalloc = tuneGlibcMalloc();
// Imported only now, so that libvips' worker threads start under the allocator settings above.
const [{ runMain }, { bunRuntime }] = await Promise.all([import("./cli/run.ts"), import("./bun.ts")]);

/**
 * glibc gives every thread that allocates its own malloc arena (up to 8 per core) and keeps freed
 * large buffers in them, so a conversion service's RSS climbs to the sum of its worst images and
 * stays there. Two arenas and a fixed mmap threshold (buffers above it, a large photo's pixels,
 * are mmap'ed and returned on free) cut peak RSS under load from ~880 to ~500 MiB at unchanged
 * throughput (bench/RESULTS.md). Setting MALLOC_ARENA_MAX at exec time would do the same, but a
 * downloaded binary cannot rely on its caller's environment, so the two are set here unless the
 * caller did set glibc's own variables (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_: read here,
 * before the config, because they are the allocator's, not imgpress settings). Returns
 * malloc_trim, which releaseFreedMemory calls once conversions pause (src/conversion/idle.ts), so that
 * what the arenas keep for the next images is handed back when there are none. Not glibc (e.g.
 * musl): nothing to tune.
 */
function tuneGlibcMalloc(): (() => void) | undefined {
  const M_MMAP_THRESHOLD = -3;
  const M_ARENA_MAX = -8;
  try {
    const libc = dlopen("libc.so.6", {
      mallopt: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
      malloc_trim: { args: [FFIType.u64], returns: FFIType.i32 },
    });
    if (!process.env.MALLOC_ARENA_MAX) libc.symbols.mallopt(M_ARENA_MAX, 2);
    if (!process.env.MALLOC_MMAP_THRESHOLD_) libc.symbols.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    return () => void libc.symbols.malloc_trim(0);
  } catch {
    // no glibc: leave the allocator as it is
    return undefined;
  }
}

/**
 * Once conversions pause: a full garbage collection first, so that the large buffers only the
 * garbage still points to (a decoded image the quality guard held, an upload) are freed (JSC may
 * otherwise keep a 300 MB one for minutes), then malloc_trim hands the freed memory back.
 */
function releaseFreedMemory(): void {
  Bun.gc(true);
  trimMalloc?.();
}

process.exit(await runMain(process.argv.slice(2), { ...bunRuntime, releaseFreedMemory }));
