import type { Size } from "./inspect.ts";
import type { OutputFormat, QualityMode } from "./presets.ts";

/**
 * Peak memory per output pixel of each encoder, the decoded pixels the pipeline holds included
 * (bytes; measured as the process's peak RSS over one conversion of a 4–25 MP photo, 2026-11-24,
 * rounded up: lossy WebP 5.5–5.7, lossy AVIF 20–27 with the quality guard, lossless WebP 28,
 * lossless AVIF 35 MiB per megapixel). AVIF's encoder keeps several full-size planes.
 */
const BYTES_PER_OUTPUT_PIXEL: Record<OutputFormat, Record<QualityMode, number>> = {
  webp: { lossy: 6, lossless: 30 },
  avif: { lossy: 28, lossless: 36 },
};
/** The decoder's buffers while the image streams into the resize (JPEG shrinks on load; PNG does not). */
const BYTES_PER_INPUT_PIXEL = 2;

/** About how much memory converting an image of `upright` pixels to `size` in `format` takes at its peak. */
export function conversionMemoryBytes(upright: Size, size: Size, format: OutputFormat, quality: QualityMode): number {
  return size.width * size.height * BYTES_PER_OUTPUT_PIXEL[format][quality] + upright.width * upright.height * BYTES_PER_INPUT_PIXEL;
}
