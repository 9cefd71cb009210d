// SSIM as the bench scores images (bench/lib/ssim.ts uses ssim.js "weber"): luma of the pixels
// composited on white, 11×11 box windows at every position, k1 0.01, k2 0.03. Written here
// because runtime code cannot import the bench's devDependency; box sums come from integral
// images, so the cost is a few passes over the pixels whatever the window.
import type { RawImage } from "./sample.ts";

const WINDOW = 11;
const C1 = (0.01 * 255) ** 2;
const C2 = (0.03 * 255) ** 2;

/** Luma (Rec. 601 weights, as MATLAB's rgb2gray) of 3- or 4-channel pixels, alpha composited on white. */
export function lumaOnWhite(image: RawImage): Float64Array {
  const { data, channels } = image;
  const out = new Float64Array(image.width * image.height);
  for (let i = 0, p = 0; i < out.length; i++, p += channels) {
    const y = 0.29894 * data[p]! + 0.58704 * data[p + 1]! + 0.11402 * data[p + 2]!;
    if (channels === 4) {
      const a = data[p + 3]! / 255;
      out[i] = y * a + 255 * (1 - a);
    } else out[i] = y;
  }
  return out;
}

/** Mean SSIM of `test` against `reference` (same size, luma from lumaOnWhite). */
export function meanSsim(reference: Float64Array, test: Float64Array, width: number, height: number): number {
  if (reference.length !== width * height || test.length !== reference.length) throw new Error("SSIM of images of different sizes");
  const win = Math.min(WINDOW, width, height);
  const sx = integral(reference, null, width, height);
  const sy = integral(test, null, width, height);
  const sxx = integral(reference, reference, width, height);
  const syy = integral(test, test, width, height);
  const sxy = integral(reference, test, width, height);
  const n = win * win;
  const stride = width + 1;
  let total = 0;
  let count = 0;
  for (let y = 0; y + win <= height; y++) {
    for (let x = 0; x + win <= width; x++) {
      const a = y * stride + x;
      const b = a + win;
      const c = a + win * stride;
      const d = c + win;
      const mx = (sx[d]! - sx[b]! - sx[c]! + sx[a]!) / n;
      const my = (sy[d]! - sy[b]! - sy[c]! + sy[a]!) / n;
      const vx = (sxx[d]! - sxx[b]! - sxx[c]! + sxx[a]!) / n - mx * mx;
      const vy = (syy[d]! - syy[b]! - syy[c]! + syy[a]!) / n - my * my;
      const cxy = (sxy[d]! - sxy[b]! - sxy[c]! + sxy[a]!) / n - mx * my;
      total += ((2 * mx * my + C1) * (2 * cxy + C2)) / ((mx * mx + my * my + C1) * (vx + vy + C2));
      count++;
    }
  }
  return total / count;
}

/** Summed-area table of `a` (or of a·b) with a zero first row and column. */
function integral(a: Float64Array, b: Float64Array | null, width: number, height: number): Float64Array {
  const stride = width + 1;
  const out = new Float64Array(stride * (height + 1));
  for (let y = 0; y < height; y++) {
    let row = 0;
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      row += b ? a[i]! * b[i]! : a[i]!;
      out[(y + 1) * stride + x + 1] = out[y * stride + x + 1]! + row;
    }
  }
  return out;
}
