import { AppError } from "../../errors.ts";

/** 422 INVALID_IMAGE with the first line of the decoder's complaint. */
export function invalidImage(detail: string): AppError {
  // libvips messages can be long and multi-line; the first line is what helps a client.
  const first = detail.split("\n")[0]?.replace(/^Input (buffer|file) /, "").slice(0, 200);
  return new AppError(422, "INVALID_IMAGE", `The image is corrupt or truncated (${first}).`);
}

/**
 * Maps a libvips failure. The header already parsed, so a decode failure is the file's fault
 * (truncated data, bad Huffman tables, CRC errors…) and answers 422; only resource exhaustion is
 * ours (500).
 */
export function translateSharpError(err: Error): AppError {
  const message = err.message ?? "";
  if (err instanceof AppError) return err;
  if (/timeout/i.test(message)) return new AppError(504, "CONVERSION_TIMEOUT", "The conversion took longer than the time limit; try a smaller max_width or lossy quality.");
  if (/pixel limit/i.test(message)) return new AppError(422, "IMAGE_TOO_LARGE", "The image has more pixels than this server accepts.");
  if (/too large for the (webp|heif|avif)/i.test(message)) return new AppError(422, "IMAGE_TOO_LARGE", "The result is too large for the output format; send a smaller max_width.");
  if (/out of memory|cannot allocate|alloc/i.test(message)) return new AppError(500, "CONVERSION_FAILED", "The image could not be converted.");
  return invalidImage(message);
}
