import type { AvifOptions, WebpOptions } from "sharp";

/** Output formats (spec 2.1). */
export type OutputFormat = "webp" | "avif";
/** Quality modes (spec 2.1). */
export type QualityMode = "lossy" | "lossless";

/**
 * Encoder settings per format and mode. The lossy numbers come from bench/avif-preset.ts
 * (see bench/RESULTS.md): WebP q80 effort 4 is the usual web default; AVIF at sharp's default
 * effort 4 costs ~2 s per megapixel, far too slow for a synchronous request, while effort 1 at
 * q55 matches WebP q80's SSIM with fewer bytes at a comparable time.
 */
export const presets: Record<OutputFormat, Record<QualityMode, WebpOptions | AvifOptions>> = {
  webp: {
    lossy: { quality: 80, effort: 4 },
    // `exact` keeps the colour of fully transparent pixels, so decoded pixels equal the input's.
    lossless: { lossless: true, exact: true, effort: 4 },
  },
  avif: {
    lossy: { quality: 55, effort: 1 },
    lossless: { lossless: true, effort: 1 },
  },
};

/** The MIME type of each output format. */
export const mimeTypes: Record<OutputFormat, string> = { webp: "image/webp", avif: "image/avif" };
