// Durations the usage buckets, the dashboard's ranges and the certificate checks count in.

/** One hour in milliseconds: the width of a usage bucket. */
export const HOUR_MS = 3_600_000;
/** One day in milliseconds: the width of a daily usage bucket. */
export const DAY_MS = 24 * HOUR_MS;

/** The width in milliseconds of a usage series' step. */
export function stepMs(step: "hour" | "day"): number {
  return step === "day" ? DAY_MS : HOUR_MS;
}
