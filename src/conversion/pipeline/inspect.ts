import sharp, { type Metadata } from "sharp";
import { AppError } from "../../core/errors.ts";
import { invalidImage, tooManyPixels } from "./errors.ts";
import { type InputCost, inputCost, scaledToWidth } from "./memory.ts";
import { formatNames, type OutputFormat } from "./presets.ts";
import type { InputFormat } from "./sniff.ts";

/** Largest side each encoder can write (libwebp: 16383; AVIF as written by libheif: 16384). */
const MAX_SIDE: Record<OutputFormat, number> = { webp: 16383, avif: 16384 };

/** Dimensions as displayed, i.e. after EXIF orientation. */
export interface Size {
  width: number;
  height: number;
}

/** What the header tells: the upright dimensions and what decoding and encoding the image costs besides them. */
export interface Header {
  upright: Size;
  cost: InputCost;
  /** 16 bits per sample with an embedded ICC profile: sRGB must be asked for by name (see convertInspected). */
  profiled16Bit: boolean;
}

/**
 * Reads the header only (no pixel is decoded, so a decompression bomb costs nothing), checks it
 * is the sniffed format and within the pixel limit, and returns the upright dimensions.
 */
export async function inspect(input: Uint8Array, expected: InputFormat, maxPixels: number): Promise<Header> {
  let header: Metadata;
  try {
    header = await sharp(input, { limitInputPixels: false }).metadata();
  } catch (err) {
    throw (expected === "png" ? pngHeaderRefusal(input, maxPixels) : null) ?? invalidImage((err as Error).message);
  }
  if (header.format !== expected || !header.width || !header.height)
    throw invalidImage(`the ${expected.toUpperCase()} header could not be read`);
  if (header.width * header.height > maxPixels) throw tooManyPixels(header.width, header.height, maxPixels);
  const turned = (header.orientation ?? 1) >= 5;
  const upright = turned
    ? { width: header.height, height: header.width }
    : { width: header.width, height: header.height };
  return { upright, cost: inputCost(header), profiled16Bit: header.depth === "ushort" && header.hasProfile === true };
}

/** The output size for `maxWidth` (scale down only), refused early when the encoder could not hold it. */
export function outputSize(upright: Size, maxWidth: number | undefined, format: OutputFormat): Size {
  const size = maxWidth && maxWidth < upright.width ? scaledToWidth(upright, maxWidth) : upright;
  if (Math.max(size.width, size.height) > MAX_SIDE[format]) {
    const within = widthWithinSide(upright, MAX_SIDE[format]);
    throw new AppError(
      422,
      "IMAGE_TOO_LARGE",
      `${formatNames[format]} holds at most ${MAX_SIDE[format]} pixels per side and the result would be ${size.width}×${size.height}; ${within > 0 ? `send max_width ${within} or less` : "no max_width brings this image within it"}.`,
    );
  }
  return size;
}

// The largest width whose output keeps both sides within `side` (the height scales with it,
// rounded, at least 1 pixel), or 0 when none does (a sliver taller than `side` at 1 pixel wide).
function widthWithinSide(upright: Size, side: number): number {
  let width = Math.min(side, Math.floor(((side + 0.5) * upright.width) / upright.height));
  while (width > 0 && scaledToWidth(upright, width).height > side) width--;
  return width;
}

/** Largest side libspng (sharp's PNG decoder) reads; its header read fails above it, saying only "corrupt header". */
const PNG_MAX_SIDE = 1_000_000;

/**
 * Why a PNG whose header libvips refused is refused, read from its IHDR chunk (signature, length,
 * "IHDR", width, height: big-endian at bytes 16 and 20): a size of 0, more pixels than the limit,
 * or a side the decoder does not read. Null when the IHDR says none of these (the file is corrupt).
 */
function pngHeaderRefusal(input: Uint8Array, maxPixels: number): AppError | null {
  if (input.length < 24 || new TextDecoder().decode(input.subarray(12, 16)) !== "IHDR") return null;
  const view = new DataView(input.buffer, input.byteOffset, 24);
  const width = view.getUint32(16);
  const height = view.getUint32(20);
  if (width === 0 || height === 0) return invalidImage(`its PNG header gives a size of ${width}×${height}`);
  if (width * height > maxPixels) return tooManyPixels(width, height, maxPixels);
  if (Math.max(width, height) > PNG_MAX_SIDE) {
    return new AppError(
      422,
      "IMAGE_TOO_LARGE",
      `The image is ${width}×${height}; the PNG decoder reads at most ${PNG_MAX_SIDE} pixels per side.`,
    );
  }
  return null;
}
