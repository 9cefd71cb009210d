import { statSync } from "node:fs";
import { Gauge, type Registry } from "prom-client";
import sharp from "sharp";
import type { ConversionGate } from "../../conversion/gate.ts";
import { version } from "../../core/version.ts";

/** Registers a gauge whose value is read when Prometheus scrapes (nothing is kept in between). */
export function liveGauge(registry: Registry, name: string, help: string, read: () => number): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}

/** The configured sizes of the conversion gate. */
export interface GateSizes {
  /** IMGPRESS_CONCURRENCY. */
  slots: number;
  /** IMGPRESS_QUEUE_SIZE. */
  queueSize: number;
}

/**
 * Registers imgpress_database_file_bytes: the embedded database file and its write-ahead log, read
 * at scrape time, so that growth can be alerted on before the disk fills. A file that is not there
 * (no WAL yet, or the database removed under the server, which readiness reports) counts 0; a file
 * that cannot be looked at leaves the value out (NaN), so an alert on growth is not fed a false 0.
 */
export function registerDatabaseFileGauge(registry: Registry, databaseFile: string): void {
  const sizeOf = (path: string) => {
    try {
      return statSync(path).size;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === "ENOENT" ? 0 : Number.NaN;
    }
  };
  liveGauge(
    registry,
    "imgpress_database_file_bytes",
    "Size of the embedded database file and its write-ahead log (-wal).",
    () => sizeOf(databaseFile) + sizeOf(`${databaseFile}-wal`),
  );
}

/** What the service is, and how full its conversion slots and libvips are, at scrape time. */
export function registerServiceGauges(
  registry: Registry,
  gate: ConversionGate,
  sizes: GateSizes,
  runtime: string,
): void {
  new Gauge({
    name: "imgpress_build_info",
    help: "Always 1; the labels name the build.",
    labelNames: ["version", "runtime", "sharp", "libvips"],
    registers: [registry],
  }).set({ version, runtime, sharp: sharp.versions.sharp ?? "unknown", libvips: sharp.versions.vips }, 1);
  liveGauge(
    registry,
    "imgpress_conversion_slots",
    "Conversions that may run at once (IMGPRESS_CONCURRENCY).",
    () => sizes.slots,
  );
  liveGauge(
    registry,
    "imgpress_queue_capacity",
    "Requests admitted beyond IMGPRESS_CONCURRENCY before 503 SERVER_BUSY (IMGPRESS_QUEUE_SIZE); small conversions running in half slots use these places too.",
    () => sizes.queueSize,
  );
  liveGauge(
    registry,
    "imgpress_conversions_in_progress",
    "Conversions running now (a small lossy one takes half a slot, so up to twice the slots).",
    () => gate.stats().running,
  );
  liveGauge(
    registry,
    "imgpress_conversion_slots_busy",
    "Conversion slots in use now (a small lossy conversion counts a half).",
    () => gate.stats().slotsBusy,
  );
  liveGauge(
    registry,
    "imgpress_queue_length",
    "Requests admitted and not yet converting (uploading or waiting for a slot).",
    () => {
      const { admitted, running } = gate.stats();
      return Math.max(0, admitted - running);
    },
  );
  // sharp.cache() without arguments only reads libvips' tracked allocations; it changes no setting.
  liveGauge(
    registry,
    "imgpress_libvips_memory_bytes",
    "Memory libvips has allocated now: pixel buffers and caches.",
    () => sharp.cache().memory.current,
  );
  liveGauge(
    registry,
    "imgpress_libvips_memory_high_bytes",
    "Highest libvips memory use since start.",
    () => sharp.cache().memory.high,
  );
  new Gauge({
    name: "imgpress_libvips_tasks",
    help: "libvips tasks (sharp.counters()): queued for a worker thread, or processing.",
    labelNames: ["state"],
    registers: [registry],
    collect() {
      const { queue, process } = sharp.counters();
      this.set({ state: "queued" }, queue);
      this.set({ state: "processing" }, process);
    },
  });
}
