import { AppError } from "../../core/errors.ts";
import type { Size } from "./inspect.ts";
import { type InputCost, largestWidthWithin } from "./memory.ts";
import { formatNames, type OutputFormat, type QualityMode } from "./presets.ts";

/** 422 INVALID_IMAGE with the first line of the decoder's complaint. */
export function invalidImage(detail: string): AppError {
  // libvips messages can be long and multi-line; the first line is what helps a client.
  const first =
    detail
      .split("\n")[0]
      ?.replace(/^Input (buffer|file) /, "")
      .trim()
      .slice(0, 200) ?? "";
  // "Unknown error" (a PNG chunk's bad CRC) or "has corrupt header:" with nothing after tell a client nothing.
  const said =
    first === "" || /^\(?unknown error\)?$/i.test(first) || first.endsWith(":")
      ? "the decoder could not read it"
      : first;
  return new AppError(422, "INVALID_IMAGE", `The image is corrupt or truncated (${said}).`);
}

/** 422 IMAGE_TOO_LARGE for an image over the pixel limit, naming its size. */
export function tooManyPixels(width: number, height: number, maxPixels: number): AppError {
  return new AppError(
    422,
    "IMAGE_TOO_LARGE",
    `The image is ${width}×${height} (${pixelCount(width * height)}); this server accepts at most ${pixelCount(maxPixels)}.`,
  );
}

// Megapixels to one decimal, or the exact count below 0.1 of one (a small IMGPRESS_MAX_PIXELS read "0.0 megapixels").
function pixelCount(pixels: number): string {
  return pixels >= 100_000 ? `${(pixels / 1e6).toFixed(1)} megapixels` : `${pixels.toLocaleString("en-US")} pixels`;
}

/**
 * Maps a libvips failure. The header already parsed, so a decode failure is the file's fault
 * (truncated data, bad Huffman tables, CRC errors…) and answers 422; only resource exhaustion is
 * ours (500).
 */
export function translateSharpError(err: Error): AppError {
  const message = err.message ?? "";
  if (err instanceof AppError) return err;
  if (/timeout/i.test(message))
    return new AppError(
      504,
      "CONVERSION_TIMEOUT",
      "The conversion took longer than the time limit; try a smaller max_width or lossy quality.",
    );
  if (/pixel limit/i.test(message))
    return new AppError(422, "IMAGE_TOO_LARGE", "The image has more pixels than this server accepts.");
  if (/too large for the (webp|heif|avif)/i.test(message))
    return new AppError(
      422,
      "IMAGE_TOO_LARGE",
      "The result is too large for the output format; send a smaller max_width.",
    );
  if (/out of memory|cannot allocate|alloc/i.test(message))
    return new AppError(500, "CONVERSION_FAILED", "The image could not be converted.");
  return invalidImage(message);
}

/** 422 IMAGE_TOO_LARGE for a job whose memory estimate exceeds the whole budget, with what would fit (a max_width, lossy WebP) or that nothing can. */
export function needsTooMuchMemory(
  upright: Size,
  size: Size,
  options: { format: OutputFormat; quality: QualityMode },
  input: InputCost,
  memoryBytes: number,
  budgetBytes: number,
): AppError {
  const mib = (bytes: number) => Math.ceil(bytes / 2 ** 20);
  const needs = `Converting this ${upright.width}×${upright.height} image to ${options.quality} ${formatNames[options.format]} at ${size.width}×${size.height} needs about ${mib(memoryBytes)} MiB, more than this server allows one conversion (${mib(budgetBytes)} MiB)`;
  const width = largestWidthWithin(upright, options.format, options.quality, input, budgetBytes);
  // Lossy WebP needs the least per pixel (pipeline/memory.ts), so it is the other way out.
  const webpWidth =
    options.format === "webp" && options.quality === "lossy"
      ? 0
      : largestWidthWithin(upright, "webp", "lossy", input, budgetBytes);
  const otherWay =
    webpWidth > width
      ? ` or ask for lossy WebP${webpWidth < upright.width ? ` with max_width ${webpWidth} or less` : ", which needs the least"}`
      : "";
  // Decoding the upload alone would take more: no max_width helps.
  if (width === 0)
    return new AppError(
      422,
      "IMAGE_TOO_LARGE",
      `${needs}; decoding an image this large takes more than that at any max_width, so this server cannot convert it.`,
    );
  return new AppError(422, "IMAGE_TOO_LARGE", `${needs}; send max_width ${width} or less${otherWay}.`);
}
