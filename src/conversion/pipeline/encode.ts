import sharp, { type AvifOptions, type Sharp, type WebpOptions } from "sharp";
import type { OutputFormat } from "./presets.ts";
import type { RawImage } from "./sample.ts";

/** One encoder setting the guard may try: a format and its sharp options. */
export interface EncodeSettings {
  format: OutputFormat;
  options: WebpOptions | AvifOptions;
}

/** Encodes raw pixels; injectable so a test can slow it down or count its calls. */
export type Encoder = (image: RawImage, settings: EncodeSettings) => Promise<Uint8Array>;
/** Decodes an encoded image to raw pixels with the same channel count as the source. */
export type Decoder = (bytes: Uint8Array, channels: number) => Promise<RawImage>;

/** Raw 8-bit pixels of `pipeline`'s output (whatever orientation, scaling and colour space it already applies). */
export async function decodeRaw(pipeline: Sharp): Promise<RawImage> {
  const { data, info } = await pipeline.raw({ depth: "uchar" }).toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
}

/** The real encoder: sharp over raw pixels (no metadata is written). */
export const sharpEncoder: Encoder = (image, settings) => {
  const input = sharp(image.data, {
    raw: { width: image.width, height: image.height, channels: image.channels as 3 | 4 },
  });
  return settings.format === "webp"
    ? input.webp(settings.options as WebpOptions).toBuffer()
    : input.avif(settings.options as AvifOptions).toBuffer();
};

/** The real decoder: sharp, alpha kept or added so the channel count matches the source. */
export const sharpDecoder: Decoder = async (bytes, channels) => {
  const base = sharp(bytes).toColourspace("srgb");
  const pipeline = channels === 4 ? base.ensureAlpha() : base.removeAlpha();
  return decodeRaw(pipeline);
};
