// The service's conversion, called directly: the in-process reference every ratio is measured against.
import sharp from "sharp";
import { presets } from "../../src/convert/pipeline/presets.ts";

// The service's settings (src/convert/pipeline/index.ts): no libvips operation cache; the thread
// count is left as sharp chooses it from the environment (1 on glibc unless MALLOC_ARENA_MAX is set).
sharp.cache(false);

export type Format = "webp" | "avif";

/** Orient → sRGB → encode, as src/convert/pipeline/index.ts does (minus its header pre-check and time limit). */
export function convert(input: Buffer, format: Format, options?: object): Promise<Buffer> {
  const p = sharp(input, { limitInputPixels: 100_000_000, failOn: "error", autoOrient: true }).toColourspace("srgb");
  return format === "webp" ? p.webp(options ?? presets.webp.lossy).toBuffer() : p.avif(options ?? presets.avif.lossy).toBuffer();
}

export { presets, sharp };
