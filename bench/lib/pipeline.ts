// The service's conversion called directly: the in-process reference every ratio is measured against.
import sharp from "sharp";
import type { GuardMode } from "../../src/conversion/pipeline/guard.ts";
import { convertImage } from "../../src/conversion/pipeline/index.ts";
import { presets } from "../../src/conversion/pipeline/presets.ts";
import { loadConfig } from "../../src/core/config.ts";

/** An output format of the service. */
export type Format = "webp" | "avif";

// A default server's limits and quality guard, so the reference does exactly the work `imgpress
// serve` does (with the guard's default, `avif`, every lossy AVIF goes through the guard there).
const { maxPixels, convertTimeoutS, qualityGuard } = loadConfig({});

/**
 * Lossy conversion by the project's own `convertImage` (sniff, header check, orient, sRGB, encode),
 * through the quality guard as a default server runs it; `guard: "off"` gives the bare preset.
 */
export async function convert(input: Uint8Array, format: Format, guard: GuardMode = qualityGuard): Promise<Buffer> {
  const { bytes } = await convertImage(
    input,
    { format, quality: "lossy" },
    { maxPixels, timeoutS: convertTimeoutS, qualityGuard: guard },
  );
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * The same chain with other encoder options, for the AVIF preset sweep only (convertImage takes
 * presets, not options). test/bench/pipeline.test.ts fails when it stops matching convertImage.
 */
export function encodeWith(input: Uint8Array, format: Format, options: object): Promise<Buffer> {
  const p = sharp(input, { limitInputPixels: maxPixels, failOn: "error", autoOrient: true }).toColourspace("srgb");
  return format === "webp" ? p.webp(options).toBuffer() : p.avif(options).toBuffer();
}

export { presets, sharp };
