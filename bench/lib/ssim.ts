// SSIM as the AVIF figure needs it: decoded pixels, alpha composited on white, full resolution,
// ssim.js's "weber" algorithm (11×11 window over luma, integral images) without its default
// downsampling (which would compare ~250-pixel thumbnails and hide encoder artefacts).
import sharp from "sharp";
import { ssim } from "ssim.js";

/** Decoded RGBA pixels. */
export interface Pixels {
  data: Uint8ClampedArray;
  width: number;
  height: number;
}

/** Decodes any image to RGBA composited on white, oriented and in sRGB like the service's output. */
export async function decodeOnWhite(input: Buffer): Promise<Pixels> {
  const { data, info } = await sharp(input, { autoOrient: true, limitInputPixels: false })
    .toColourspace("srgb")
    .flatten({ background: "#ffffff" })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return {
    data: new Uint8ClampedArray(data.buffer, data.byteOffset, data.length),
    width: info.width,
    height: info.height,
  };
}

/** Mean SSIM of `test` against `reference` (same dimensions). */
export function meanSsim(reference: Pixels, test: Pixels): number {
  if (reference.width !== test.width || reference.height !== test.height)
    throw new Error("SSIM of images of different sizes");
  return ssim(reference as unknown as ImageData, test as unknown as ImageData, { ssim: "weber", downsample: false })
    .mssim;
}
