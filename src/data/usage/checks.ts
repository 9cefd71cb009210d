import { DAY_MS } from "../../core/durations.ts";
import { AppError } from "../../core/errors.ts";
import { MAX_RANGE_DAYS } from "./model.ts";

/** Aligns [from, to) outward to whole steps and refuses empty, reversed or over-long ranges. */
export function checkRange(from: number, to: number, stepMs: number, offset: number): { from: number; to: number } {
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 0)
    throw invalid("from and to must be Unix milliseconds");
  if (to <= from) throw invalid("to must be later than from");
  if (to - from > MAX_RANGE_DAYS * DAY_MS) throw invalid(`a range may span at most ${MAX_RANGE_DAYS} days`);
  return {
    from: Math.floor((from + offset) / stepMs) * stepMs - offset,
    to: Math.ceil((to + offset) / stepMs) * stepMs - offset,
  };
}

/** The 400 answer of a query value out of bounds. */
export function invalid(message: string): AppError {
  return new AppError(400, "VALIDATION_ERROR", message);
}
