import type { Upload } from "../../conversion/service.ts";
import { AppError } from "../../core/errors.ts";
import type { FormPart } from "./multipart.ts";

/** Largest accepted `image` (spec 8: 20 MB, taken as 20 MiB). */
export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;

const invalid = (message: string) => new AppError(400, "INVALID_PARAMETER", message);

/** Validates the form fields of spec 2.1 (field values are exact and case-sensitive). */
export function readUpload(parts: FormPart[]): Upload {
  const field = (name: string): FormPart | undefined => {
    const found = parts.filter((p) => p.name === name);
    if (found.length > 1) throw invalid(`${name} was sent more than once.`);
    return found[0];
  };
  const text = (name: string) => {
    const part = field(name);
    return part && new TextDecoder().decode(part.data);
  };

  const image = field("image");
  if (!image) {
    // Field names are case-sensitive: name the near miss (`Image`, `image[]`) a client sent instead.
    const near = parts.find((p) => p.name.toLowerCase().replace(/\[\]$/, "") === "image");
    throw new AppError(
      400,
      "MISSING_IMAGE",
      `The multipart field \`image\` is required${near ? `; got \`${near.name.slice(0, 40)}\` (field names are case-sensitive)` : ""}.`,
    );
  }
  if (image.data.length === 0) throw new AppError(400, "MISSING_IMAGE", "The `image` field is empty.");
  if (image.data.length > MAX_IMAGE_BYTES) throw fileTooLarge();

  const format = text("format") ?? "webp";
  if (format !== "webp" && format !== "avif") {
    throw new AppError(
      400,
      "UNSUPPORTED_FORMAT",
      `format must be "webp" or "avif" (lower case); got ${JSON.stringify(format.slice(0, 20))}.`,
    );
  }
  const quality = text("quality") ?? "lossy";
  if (quality !== "lossy" && quality !== "lossless")
    throw invalid(`quality must be "lossy" or "lossless"; got ${JSON.stringify(quality.slice(0, 20))}.`);
  const maxWidthText = text("max_width");
  let maxWidth: number | undefined;
  if (maxWidthText !== undefined) {
    if (!/^[1-9]\d{0,8}$/.test(maxWidthText))
      throw invalid(
        `max_width must be a positive whole number of pixels; got ${JSON.stringify(maxWidthText.slice(0, 20))}.`,
      );
    maxWidth = Number(maxWidthText);
  }
  return { image: image.data, stem: fileStem(image.filename), options: { format, quality, maxWidth } };
}

/**
 * 413 for an image over the limit, seen in its part; with `formOverheadBytes`, for a whole body
 * (by Content-Length or while streaming) over the limit plus the room for the other fields.
 */
export function fileTooLarge(formOverheadBytes?: number): AppError {
  const limit = `${MAX_IMAGE_BYTES / 1024 / 1024} MiB (${MAX_IMAGE_BYTES} bytes)`;
  // The whole body is cut off before its parts are known: it may be the other fields that pushed it over.
  const what =
    formOverheadBytes === undefined
      ? `The image is larger than ${limit}.`
      : `The upload is larger than an image of ${limit} with ${formOverheadBytes / 1024} KiB of form fields around it.`;
  return new AppError(413, "FILE_TOO_LARGE", what);
}

function fileStem(filename: string | undefined): string {
  const base = (filename ?? "").split(/[\\/]/).at(-1) ?? "";
  const stem = base.includes(".") ? base.slice(0, base.lastIndexOf(".")) : base;
  // Cut by code point: a cut inside a surrogate pair would leave a string no header can carry.
  return Array.from(stem.normalize("NFC")).slice(0, 120).join("") || "image";
}
