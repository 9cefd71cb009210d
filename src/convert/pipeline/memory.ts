import type { Size } from "./inspect.ts";
import type { OutputFormat, QualityMode } from "./presets.ts";

/**
 * Peak memory per output pixel of each encoder, the decoded pixels the pipeline holds included
 * (bytes; the process's RSS growth over one conversion, 2026-11-24, the worst case found, rounded
 * up). Lossy WebP: 5.5–5.7 MiB per megapixel on smooth photos, 15–16 on noise-textured ones
 * (libwebp's buffers grow with the output's entropy, which the client controls); lossy AVIF 20–27
 * with the quality guard; lossless WebP 28; lossless AVIF 35 for photos, 50 for a PNG with alpha.
 * AVIF's encoder keeps several full-size planes.
 */
const BYTES_PER_OUTPUT_PIXEL: Record<OutputFormat, Record<QualityMode, number>> = {
  webp: { lossy: 16, lossless: 30 },
  avif: { lossy: 28, lossless: 54 },
};
/** The decoder's buffers while the image streams into the resize (JPEG shrinks on load; PNG does not; 16-bit and CMYK take more). */
const BYTES_PER_INPUT_PIXEL = 3;

/** About how much memory converting an image of `upright` pixels to `size` in `format` takes at its peak. */
export function conversionMemoryBytes(upright: Size, size: Size, format: OutputFormat, quality: QualityMode): number {
  return size.width * size.height * BYTES_PER_OUTPUT_PIXEL[format][quality] + upright.width * upright.height * BYTES_PER_INPUT_PIXEL;
}

/**
 * The largest output width (`max_width`) whose conversion fits in `budgetBytes`, or 0 when none
 * does: decoding the input alone takes more (no max_width makes the decoded image smaller).
 */
export function largestWidthWithin(upright: Size, format: OutputFormat, quality: QualityMode, budgetBytes: number): number {
  const left = budgetBytes - upright.width * upright.height * BYTES_PER_INPUT_PIXEL;
  const perWidthSquared = (BYTES_PER_OUTPUT_PIXEL[format][quality] * upright.height) / upright.width;
  let width = Math.min(upright.width, Math.floor(Math.sqrt(Math.max(0, left) / perWidthSquared)));
  // The output's height is rounded (outputSize): step down until the estimate itself fits.
  while (width > 0 && conversionMemoryBytes(upright, scaledToWidth(upright, width), format, quality) > budgetBytes) width--;
  return width;
}

/** `upright` scaled to `width`, its height rounded and at least 1 pixel (what max_width makes of it). */
export function scaledToWidth(upright: Size, width: number): Size {
  return { width, height: Math.max(1, Math.round((upright.height * width) / upright.width)) };
}
