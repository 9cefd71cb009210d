import { readdirSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { Counter, Gauge, type Registry } from "prom-client";

/**
 * The standard `process_*` metrics, read at scrape time. prom-client's `collectDefaultMetrics`
 * was measured under both runtimes and not used: under Bun its event-loop collector reports a
 * minimum lag of 9.2e9 s and NaN means (Bun's monitorEventLoopDelay is a stub), and under Deno it
 * reports 0 bytes of resident memory (it parses /proc/self/status, which the sandbox hides).
 * `process.memoryUsage()` and `process.cpuUsage()` work in both; only the fd counts need /proc,
 * which Deno opens only to --allow-all: there they are left out rather than reported as 0.
 */
export function registerProcessMetrics(registry: Registry): void {
  const startSeconds = Math.round((Date.now() - performance.now()) / 1000);
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
  new Gauge({
    name: "process_start_time_seconds",
    help: "Start time of the process since unix epoch in seconds.",
    registers: [registry],
    collect() {
      this.set(startSeconds);
    },
  });
  new Gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
    registers: [registry],
    collect() {
      this.set(process.memoryUsage().rss);
    },
  });
  new Gauge({
    name: "process_heap_bytes",
    help: "JavaScript heap in use, in bytes.",
    registers: [registry],
    collect() {
      this.set(process.memoryUsage().heapUsed);
    },
  });
  if (!canRead("/proc/self/fd")) return;
  new Gauge({
    name: "process_open_fds",
    help: "Number of open file descriptors.",
    registers: [registry],
    async collect() {
      const fds = await readdir("/proc/self/fd").catch(() => null);
      if (fds) this.set(fds.length);
    },
  });
  new Gauge({
    name: "process_max_fds",
    help: "Maximum number of open file descriptors.",
    registers: [registry],
    async collect() {
      const limits = await readFile("/proc/self/limits", "utf8").catch(() => "");
      const soft = /^Max open files\s+(\d+)/m.exec(limits)?.[1];
      if (soft) this.set(Number(soft));
    },
  });
}

function canRead(folder: string): boolean {
  try {
    readdirSync(folder);
    return true;
  } catch {
    return false;
  }
}
