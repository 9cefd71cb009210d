// The server as src/main.ts starts it, minus its glibc malloc tuning (mallopt: 2 arenas, fixed 16 MiB
// mmap threshold, 1 MiB from commit 04ce795 until 2026-11-23; malloc_trim when conversions pause): the "before" row of RESULTS.md's allocator table, so
// that every run still measures what the tuning buys. Same runtime object as src/main.ts.
// With BENCH_MALLOPT set (lib/mallopt.ts, evaluated first) it runs under those settings instead:
// how bench/alloc-sweep.ts tries other mallopt() values before src/main.ts is changed; with
// BENCH_IDLE_RELEASE also src/main.ts's release of freed memory once conversions pause.

import { bunRuntime } from "../../src/bun.ts";
import { runMain } from "../../src/cli/run.ts";
import { idleRelease } from "./mallopt.ts";

process.exit(
  await runMain(process.argv.slice(2), idleRelease ? { ...bunRuntime, releaseFreedMemory: idleRelease } : bunRuntime),
);
