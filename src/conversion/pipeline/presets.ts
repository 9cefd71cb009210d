import type { AvifOptions, WebpOptions } from "sharp";

/** Output formats (spec 2.1). */
export type OutputFormat = "webp" | "avif";
/** Quality modes (spec 2.1). */
export type QualityMode = "lossy" | "lossless";

/**
 * Encoder settings per format and mode. The lossy numbers come from bench/avif-preset.ts (run by
 * `npm run bench`; tables in bench/RESULTS.md), on the bench's 16-image corpus, SSIM of decoded
 * pixels with alpha on white. WebP q80 effort 4 is the usual web default (~87 ms/MP). AVIF at
 * sharp's default effort 4 costs ~2 s/MP, far too slow for a synchronous request. Effort 0
 * dominates effort 1: at q55 the same bytes in 0.71× instead of 1.19× WebP's time, with SSIM equal
 * or better on 15 of 16 images. AVIF q55 effort 0: 0.71× WebP's time, 0.62× its bytes; SSIM at or
 * above WebP's on 10/16 images (every ordinary photo but one, 0.0004 below), below on translucent
 * PNGs (AVIF codes alpha lossy at this quality, lossy WebP keeps alpha lossless), a star-field
 * graphic and noisy high-bitrate JPEGs. Higher quality at effort 0 reaches WebP's mean SSIM only
 * at q70, with 1.10× WebP's bytes, and still leaves 4 images below. Chroma subsampling 4:2:0
 * (what lossy WebP always codes; sharp's AVIF default is 4:4:4) cut the bytes by 8% and the time
 * by 17% at the same SSIM. The quality guard (guard.ts) raises the quality per image where the
 * preset falls below WebP q80's SSIM, and keeps 4:4:4 for graphics.
 */
export const presets: Record<OutputFormat, Record<QualityMode, WebpOptions | AvifOptions>> = {
  webp: {
    lossy: { quality: 80, effort: 4 },
    // `exact` keeps the colour of fully transparent pixels, so decoded pixels equal the input's.
    lossless: { lossless: true, exact: true, effort: 4 },
  },
  avif: {
    lossy: { quality: 55, effort: 0, chromaSubsampling: "4:2:0" },
    lossless: { lossless: true, effort: 1 },
  },
};

/** The MIME type of each output format. */
export const mimeTypes: Record<OutputFormat, string> = { webp: "image/webp", avif: "image/avif" };

/** Each output format as people write it, for messages. */
export const formatNames: Record<OutputFormat, string> = { webp: "WebP", avif: "AVIF" };
