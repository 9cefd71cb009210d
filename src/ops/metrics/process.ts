import { readdirSync, readFileSync } from "node:fs";
import { Counter, type Registry } from "prom-client";
import { liveGauge } from "./gauges.ts";

/**
 * The standard `process_*` metrics, read at scrape time. prom-client's `collectDefaultMetrics`
 * was measured under both runtimes and not used: under Bun its event-loop collector reports a
 * minimum lag of 9.2e9 s and NaN means (Bun's monitorEventLoopDelay is a stub), and under Deno it
 * reports 0 bytes of resident memory (it parses /proc/self/status, which the sandbox hides).
 * `process.memoryUsage()` and `process.cpuUsage()` work in both; only the fd counts need /proc,
 * which Deno opens only to --allow-all: there they are left out rather than reported as 0.
 */
export function registerProcessMetrics(registry: Registry): void {
  const cpu = (name: string, help: string, microseconds: (usage: NodeJS.CpuUsage) => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      // A counter must only rise; the process's own total does, so it is copied as is at each scrape.
      collect() {
        this.reset();
        this.inc(microseconds(process.cpuUsage()) / 1e6);
      },
    });
  cpu("process_cpu_user_seconds_total", "Total user CPU time spent in seconds.", (u) => u.user);
  cpu("process_cpu_system_seconds_total", "Total system CPU time spent in seconds.", (u) => u.system);
  cpu("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", (u) => u.user + u.system);
  const startSeconds = Math.round((Date.now() - performance.now()) / 1000);
  liveGauge(
    registry,
    "process_start_time_seconds",
    "Start time of the process since unix epoch in seconds.",
    () => startSeconds,
  );
  liveGauge(
    registry,
    "process_resident_memory_bytes",
    "Resident memory size in bytes.",
    () => process.memoryUsage().rss,
  );
  liveGauge(registry, "process_heap_bytes", "JavaScript heap in use, in bytes.", () => process.memoryUsage().heapUsed);
  if (openFds() === null) return;
  liveGauge(registry, "process_open_fds", "Number of open file descriptors.", () => openFds() ?? 0);
  const limit = /^Max open files\s+(\d+)/m.exec(readOrEmpty("/proc/self/limits"))?.[1];
  if (limit) liveGauge(registry, "process_max_fds", "Maximum number of open file descriptors.", () => Number(limit));
}

function openFds(): number | null {
  try {
    return readdirSync("/proc/self/fd").length;
  } catch {
    return null;
  }
}

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}
