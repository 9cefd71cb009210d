import { AppError } from "../../core/errors.ts";

/** The input formats the service accepts, decided from the bytes alone. */
export type InputFormat = "jpeg" | "png";

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

// Only to name what was sent in the 415 message; none of these is accepted.
const KNOWN: [string, number[], number?][] = [
  ["GIF", [0x47, 0x49, 0x46, 0x38]],
  ["WebP", [0x57, 0x45, 0x42, 0x50], 8],
  ["BMP", [0x42, 0x4d]],
  ["TIFF", [0x49, 0x49, 0x2a, 0x00]],
  ["TIFF", [0x4d, 0x4d, 0x00, 0x2a]],
  ["PDF", [0x25, 0x50, 0x44, 0x46]],
  ["AVIF/HEIF", [0x66, 0x74, 0x79, 0x70], 4],
];

/** Identifies JPEG (`FF D8 FF`) or PNG (8-byte signature) by magic bytes; anything else is 415. */
export function sniffFormat(bytes: Uint8Array): InputFormat {
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "jpeg";
  if (startsWith(bytes, PNG_SIGNATURE)) return "png";
  const known = KNOWN.find(([, magic, offset]) => startsWith(bytes, magic, offset));
  const what = known ? `${/^[AEIOU]/.test(known[0]) ? "an" : "a"} ${known[0]} file` : "not a JPEG or PNG file";
  throw new AppError(415, "UNSUPPORTED_MEDIA_TYPE", `The image is ${what}; only JPEG and PNG can be converted.`);
}

function startsWith(bytes: Uint8Array, magic: number[], offset = 0): boolean {
  return bytes.length >= offset + magic.length && magic.every((b, i) => bytes[offset + i] === b);
}
