import sharp, { type Metadata } from "sharp";
import { AppError } from "../../errors.ts";
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
 * Converts JPEG/PNG bytes to WebP/AVIF: sniff → check the header's pixel count → orient → to
 * sRGB (honouring an embedded ICC profile) → scale down → encode, dropping all other metadata.
 * A pure function of its arguments; errors are AppErrors with the codes of docs/api.md.
 */
export async function convertImage(input: Uint8Array, options: ConvertOptions, limits: ConvertLimits): Promise<ConvertResult> {
  const inputFormat = sniffFormat(input);
  const header = await readHeader(input);
  if (header.format !== inputFormat) throw invalidImage(`the ${inputFormat.toUpperCase()} data could not be read`);
  const pixels = (header.width ?? 0) * (header.height ?? 0);
  if (pixels > limits.maxPixels) {
    throw new AppError(
      422,
      "IMAGE_TOO_LARGE",
      `The image is ${header.width}×${header.height} (${(pixels / 1e6).toFixed(1)} megapixels); this server accepts at most ${(limits.maxPixels / 1e6).toFixed(1)} megapixels.`,
    );
  }
  // failOn "error": a truncated or corrupt file is refused rather than half-decoded.
  let pipeline = sharp(input, { limitInputPixels: limits.maxPixels, failOn: "error", autoOrient: true }).timeout({
    seconds: Math.max(1, Math.ceil(limits.timeoutS)),
  });
  if (options.maxWidth) pipeline = pipeline.resize({ width: options.maxWidth, withoutEnlargement: true });
  pipeline = pipeline.toColourspace("srgb");
  pipeline = options.format === "webp" ? pipeline.webp(presets.webp[options.quality]) : pipeline.avif(presets.avif[options.quality]);
  try {
    const { data, info } = await pipeline.toBuffer({ resolveWithObject: true });
    return { bytes: data, mime: mimeTypes[options.format], inputFormat, width: info.width, height: info.height };
  } catch (err) {
    throw translateSharpError(err as Error, limits.timeoutS);
  }
}

async function readHeader(input: Uint8Array): Promise<Metadata> {
  try {
    // metadata() parses headers only, so a decompression bomb is measured before any pixel is decoded.
    return await sharp(input, { limitInputPixels: false }).metadata();
  } catch (err) {
    throw invalidImage((err as Error).message);
  }
}

// The header already parsed, so a decode failure is the file's fault (truncated data, bad
// Huffman tables, CRC errors…) and answers 422; only resource exhaustion is ours (500).
function translateSharpError(err: Error, timeoutS: number): AppError {
  const message = err.message ?? "";
  if (/timeout/i.test(message)) {
    return new AppError(504, "CONVERSION_TIMEOUT", `The conversion took longer than the limit of ${timeoutS} s; try a smaller max_width or lossy quality.`);
  }
  if (/pixel limit/i.test(message)) return new AppError(422, "IMAGE_TOO_LARGE", "The image has more pixels than this server accepts.");
  if (/out of memory|cannot allocate|alloc/i.test(message)) return new AppError(500, "CONVERSION_FAILED", "The image could not be converted.");
  return invalidImage(message);
}

function invalidImage(detail: string): AppError {
  // libvips messages can be long and multi-line; the first line is what helps a client.
  const first = detail.split("\n")[0]?.replace(/^Input (buffer|file) /, "").slice(0, 200);
  return new AppError(422, "INVALID_IMAGE", `The image is corrupt or truncated (${first}).`);
}
