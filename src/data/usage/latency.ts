import { LATENCY_BOUNDS_MS } from "../db/schema.ts";

/** Number of latency histogram bins (the bounds plus one open bin). */
export const LATENCY_BINS = LATENCY_BOUNDS_MS.length + 1;

/** The histogram bin of a conversion that took `ms` milliseconds. */
export function latencyBin(ms: number): number {
  const i = LATENCY_BOUNDS_MS.findIndex((bound) => ms < bound);
  return i === -1 ? LATENCY_BOUNDS_MS.length : i;
}

/**
 * The `q` quantile (0…1) of a histogram, interpolated linearly inside its bin; null when empty.
 * The open last bin is read as [32768, 65536) ms: conversions that slow hit the time limit anyway.
 */
export function latencyQuantile(counts: readonly number[], q: number): number | null {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const target = q * total;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    const n = counts[i]!;
    if (n > 0 && seen + n >= target) {
      const lower = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1]!;
      const upper = LATENCY_BOUNDS_MS[i] ?? lower * 2;
      return Math.round((lower + ((upper - lower) * (target - seen)) / n) * 10) / 10;
    }
    seen += n;
  }
  return null;
}
