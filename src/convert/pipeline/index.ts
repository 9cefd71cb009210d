import sharp from "sharp";
import { withDeadline } from "./deadline.ts";
import { translateSharpError } from "./errors.ts";
import { inspect, outputSize } from "./inspect.ts";
import { mimeTypes, presets, type OutputFormat, type QualityMode } from "./presets.ts";
import { sniffFormat, type InputFormat } from "./sniff.ts";

/** What to produce. */
export interface ConvertOptions {
  format: OutputFormat;
  quality: QualityMode;
  /** Scale down to at most this width; never enlarges. */
  maxWidth?: number;
}

/** Safety limits of one conversion. */
export interface ConvertLimits {
  maxPixels: number;
  timeoutS: number;
}

/** A converted image and the facts the response reports. */
export interface ConvertResult {
  bytes: Uint8Array;
  mime: string;
  inputFormat: InputFormat;
  width: number;
  height: number;
}

// libvips' operation cache trades memory for speed on repeated identical work, which a
// conversion service never does; off, memory stays proportional to the images in flight.
sharp.cache(false);

/**
 * Converts JPEG/PNG bytes to WebP/AVIF: sniff → check the header → orient → to sRGB (honouring
 * an embedded ICC profile) → scale down → encode, dropping all other metadata. A pure function
 * of its arguments; errors are AppErrors with the codes of docs/api.md.
 */
export async function convertImage(input: Uint8Array, options: ConvertOptions, limits: ConvertLimits): Promise<ConvertResult> {
  const inputFormat = sniffFormat(input);
  const upright = await inspect(input, inputFormat, limits.maxPixels);
  const size = outputSize(upright, options.maxWidth, options.format);
  // failOn "error": a truncated or corrupt file is refused rather than half-decoded. libvips'
  // own timeout stops pixel work early (freeing the CPU); withDeadline also covers the AVIF
  // encoder, which libvips cannot interrupt.
  let pipeline = sharp(input, { limitInputPixels: limits.maxPixels, failOn: "error", autoOrient: true }).timeout({
    seconds: Math.max(1, Math.ceil(limits.timeoutS)),
  });
  if (size.width < upright.width) pipeline = pipeline.resize({ width: size.width });
  pipeline = pipeline.toColourspace("srgb");
  pipeline = options.format === "webp" ? pipeline.webp(presets.webp[options.quality]) : pipeline.avif(presets.avif[options.quality]);
  try {
    const { data, info } = await withDeadline(pipeline.toBuffer({ resolveWithObject: true }), limits.timeoutS);
    return { bytes: data, mime: mimeTypes[options.format], inputFormat, width: info.width, height: info.height };
  } catch (err) {
    throw translateSharpError(err as Error);
  }
}
