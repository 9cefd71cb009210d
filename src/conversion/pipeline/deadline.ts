import { AppError } from "../../core/errors.ts";
import { within } from "../../core/timeout.ts";

/**
 * 504 for a conversion over its time limit. The encoder cannot be interrupted (libvips' own
 * timeout is not checked inside the AVIF encoder), so `stillRunning` settles when it really
 * stops: the gate keeps the slot taken until then.
 */
class ConversionTimeout extends AppError {
  constructor(
    timeoutS: number,
    readonly stillRunning: Promise<unknown>,
  ) {
    super(
      504,
      "CONVERSION_TIMEOUT",
      `The conversion took longer than the limit of ${timeoutS} s; try a smaller max_width or lossy quality.`,
    );
  }
}

/** Resolves with `work`, or rejects with ConversionTimeout after `timeoutS`. */
export function withDeadline<T>(work: Promise<T>, timeoutS: number): Promise<T> {
  const settled = work.then(
    () => undefined,
    () => undefined,
  );
  return within(work, timeoutS * 1000, () => new ConversionTimeout(timeoutS, settled));
}
