import type { Size } from "./inspect.ts";
import type { OutputFormat, QualityMode } from "./presets.ts";

/**
 * Peak memory per output pixel of each encoder, the decoded pixels the pipeline holds included
 * (bytes; the process's RSS growth over one conversion, the worst case found, rounded up). Lossy
 * WebP: 5.5–5.7 MiB per megapixel on smooth photos, 15–18 on noise-textured ones (libwebp's
 * buffers grow with the output's entropy, which the client controls); lossy AVIF 20–27 with the
 * quality guard (28 on noise); lossless WebP 40 and lossless AVIF 60 on noise (2026-11-25). An
 * alpha channel the client filled with noise costs most: lossy WebP codes it losslessly (40 in
 * all), lossy AVIF codes a second image with the guard (53), lossless 45 and 77. AVIF's encoder
 * keeps several full-size planes.
 */
const BYTES_PER_OUTPUT_PIXEL: Record<OutputFormat, Record<QualityMode, { opaque: number; alpha: number }>> = {
  webp: { lossy: { opaque: 18, alpha: 42 }, lossless: { opaque: 40, alpha: 46 } },
  avif: { lossy: { opaque: 30, alpha: 54 }, lossless: { opaque: 62, alpha: 78 } },
};
/** The decoder's buffers while the image streams into the resize (JPEG shrinks on load; PNG rows stream). */
const STREAMED_BYTES_PER_INPUT_PIXEL = 3;
/** The same for a CMYK JPEG, whose conversion to sRGB holds more (measured up to 4.4 bytes per pixel beyond the encoder's share). */
const STREAMED_CMYK_BYTES_PER_INPUT_PIXEL = 5;

/** Turning or flipping the scaled image (its EXIF orientation) holds one more copy of it (measured 2.7 bytes per output pixel). */
const TURNED_BYTES_PER_OUTPUT_PIXEL = 3;

/**
 * What the header says of the input's cost besides its size: how many bytes per pixel the decoder
 * holds, whether the encoder has an alpha channel to code, and whether the scaled image is turned
 * or flipped by its EXIF orientation.
 */
export interface InputCost {
  bytesPerPixel: number;
  alpha: boolean;
  turned: boolean;
}

/**
 * The decoder's cost of an image from its header (sharp's metadata). A progressive JPEG keeps
 * every DCT coefficient (2 bytes per stored sample, chroma subsampled) before the first row
 * reaches the resize, whatever max_width asks for; so does an interlaced PNG, every pixel at its
 * bit depth. Measured (2026-11-25, two machines): 3.1 and 6.2 bytes per pixel for progressive
 * 4:2:0 and 4:4:4 at a small max_width, up to 3.3 more at full size; 3.5–9.6 for interlaced 8-bit
 * RGB to 16-bit RGBA; against 0.2–2.7 for the same streamed (more for a 16-bit PNG, below).
 */
export function inputCost(header: {
  isProgressive?: boolean;
  format?: string;
  channels?: number;
  depth?: string;
  chromaSubsampling?: string;
  hasAlpha?: boolean;
  orientation?: number;
}): InputCost {
  const alpha = header.hasAlpha === true;
  const turned = (header.orientation ?? 1) !== 1;
  const channels = header.channels ?? 4;
  const bytesPerSample = header.depth === "ushort" ? 2 : 1;
  if (header.format === "jpeg") {
    if (header.isProgressive)
      return { bytesPerPixel: 2 * storedSamples(header.chromaSubsampling, channels) + 4, alpha, turned };
    return {
      bytesPerPixel: channels >= 4 ? STREAMED_CMYK_BYTES_PER_INPUT_PIXEL : STREAMED_BYTES_PER_INPUT_PIXEL,
      alpha,
      turned,
    };
  }
  if (header.isProgressive) return { bytesPerPixel: channels * bytesPerSample + 2, alpha, turned };
  // A 16-bit PNG streams at up to 3.2 bytes per pixel, up to 5.3 when turned by its orientation.
  return { bytesPerPixel: STREAMED_BYTES_PER_INPUT_PIXEL + (bytesPerSample - 1) * (turned ? 3 : 1), alpha, turned };
}

// Samples a JPEG stores per pixel: luma, the two chroma planes at their subsampling (J:a:b), and a fourth (CMYK's K) when named.
function storedSamples(subsampling: string | undefined, channels: number): number {
  const parts = /^4:([124]):([0124])(:4)?$/.exec(subsampling ?? "");
  if (!parts) return channels;
  const chroma = (Number(parts[1]) / 4) * (parts[2] === "0" ? 0.5 : 1);
  return 1 + 2 * chroma + (parts[3] ? 1 : 0);
}

/** About how much memory converting an image of `upright` pixels to `size` in `format` takes at its peak. */
export function conversionMemoryBytes(
  upright: Size,
  size: Size,
  format: OutputFormat,
  quality: QualityMode,
  input: InputCost,
): number {
  return (
    size.width * size.height * outputBytesPerPixel(format, quality, input) +
    upright.width * upright.height * input.bytesPerPixel
  );
}

function outputBytesPerPixel(format: OutputFormat, quality: QualityMode, input: InputCost): number {
  const { opaque, alpha } = BYTES_PER_OUTPUT_PIXEL[format][quality];
  return (input.alpha ? alpha : opaque) + (input.turned ? TURNED_BYTES_PER_OUTPUT_PIXEL : 0);
}

/**
 * The largest output width (`max_width`) whose conversion fits in `budgetBytes`, or 0 when none
 * does: decoding the input alone takes more (no max_width makes the decoded image smaller).
 */
export function largestWidthWithin(
  upright: Size,
  format: OutputFormat,
  quality: QualityMode,
  input: InputCost,
  budgetBytes: number,
): number {
  const left = budgetBytes - upright.width * upright.height * input.bytesPerPixel;
  const perWidthSquared = (outputBytesPerPixel(format, quality, input) * upright.height) / upright.width;
  let width = Math.min(upright.width, Math.floor(Math.sqrt(Math.max(0, left) / perWidthSquared)));
  // The output's height is rounded (outputSize): step down until the estimate itself fits.
  while (
    width > 0 &&
    conversionMemoryBytes(upright, scaledToWidth(upright, width), format, quality, input) > budgetBytes
  )
    width--;
  return width;
}

/** `upright` scaled to `width`, its height rounded and at least 1 pixel (what max_width makes of it). */
export function scaledToWidth(upright: Size, width: number): Size {
  return { width, height: Math.max(1, Math.round((upright.height * width) / upright.width)) };
}
