import sharp, { type Metadata } from "sharp";
import { AppError } from "../../errors.ts";
import { invalidImage } from "./errors.ts";
import type { OutputFormat } from "./presets.ts";
import type { InputFormat } from "./sniff.ts";

/** Largest side each encoder can write (libwebp: 16383; AVIF as written by libheif: 16384). */
const MAX_SIDE: Record<OutputFormat, number> = { webp: 16383, avif: 16384 };

/** Dimensions as displayed, i.e. after EXIF orientation. */
export interface Size {
  width: number;
  height: number;
}

/**
 * Reads the header only (no pixel is decoded, so a decompression bomb costs nothing), checks it
 * is the sniffed format and within the pixel limit, and returns the upright dimensions.
 */
export async function inspect(input: Uint8Array, expected: InputFormat, maxPixels: number): Promise<Size> {
  let header: Metadata;
  try {
    header = await sharp(input, { limitInputPixels: false }).metadata();
  } catch (err) {
    throw invalidImage((err as Error).message);
  }
  if (header.format !== expected || !header.width || !header.height) throw invalidImage(`the ${expected.toUpperCase()} header could not be read`);
  const pixels = header.width * header.height;
  if (pixels > maxPixels) {
    throw new AppError(
      422,
      "IMAGE_TOO_LARGE",
      `The image is ${header.width}×${header.height} (${(pixels / 1e6).toFixed(1)} megapixels); this server accepts at most ${(maxPixels / 1e6).toFixed(1)} megapixels.`,
    );
  }
  const turned = (header.orientation ?? 1) >= 5;
  return turned ? { width: header.height, height: header.width } : { width: header.width, height: header.height };
}

/** The output size for `maxWidth` (scale down only), refused early when the encoder could not hold it. */
export function outputSize(upright: Size, maxWidth: number | undefined, format: OutputFormat): Size {
  const size =
    maxWidth && maxWidth < upright.width
      ? { width: maxWidth, height: Math.max(1, Math.round((upright.height * maxWidth) / upright.width)) }
      : upright;
  if (Math.max(size.width, size.height) > MAX_SIDE[format]) {
    throw new AppError(
      422,
      "IMAGE_TOO_LARGE",
      `${format.toUpperCase()} holds at most ${MAX_SIDE[format]} pixels per side and the result would be ${size.width}×${size.height}; send a smaller max_width.`,
    );
  }
  return size;
}
