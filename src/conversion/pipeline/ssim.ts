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

/** A reference's luma with its box sums, computed once for every candidate scored against it. */
export interface SsimReference {
  luma: Float64Array;
  width: number;
  height: number;
  sx: Float64Array;
  sxx: Float64Array;
}

/** Prepares `luma` (from lumaOnWhite) to score candidates against. */
export function ssimReference(luma: Float64Array, width: number, height: number): SsimReference {
  if (luma.length !== width * height) throw new Error("SSIM reference of the wrong size");
  const [sx, sxx] = integrals(luma, null, width, height);
  return { luma, width, height, sx: sx!, sxx: sxx! };
}

/** Mean SSIM of `test` against `reference` (same size, luma from lumaOnWhite). */
export function meanSsim(
  reference: Float64Array | SsimReference,
  test: Float64Array,
  width: number,
  height: number,
): number {
  const ref = reference instanceof Float64Array ? ssimReference(reference, width, height) : reference;
  if (ref.width !== width || ref.height !== height || test.length !== ref.luma.length)
    throw new Error("SSIM of images of different sizes");
  const { sx, sxx } = ref;
  const [sy, syy, sxy] = integrals(test, ref.luma, width, height);
  const win = Math.min(WINDOW, width, height);
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
      const my = (sy![d]! - sy![b]! - sy![c]! + sy![a]!) / n;
      const vx = (sxx[d]! - sxx[b]! - sxx[c]! + sxx[a]!) / n - mx * mx;
      const vy = (syy![d]! - syy![b]! - syy![c]! + syy![a]!) / n - my * my;
      const cxy = (sxy![d]! - sxy![b]! - sxy![c]! + sxy![a]!) / n - mx * my;
      total += ((2 * mx * my + C1) * (2 * cxy + C2)) / ((mx * mx + my * my + C1) * (vx + vy + C2));
      count++;
    }
  }
  return total / count;
}

/**
 * Summed-area tables (zero first row and column), in one pass: of `a` and a², and of a·b when
 * `b` is given.
 */
function integrals(a: Float64Array, b: Float64Array | null, width: number, height: number): Float64Array[] {
  const stride = width + 1;
  const size = stride * (height + 1);
  const s = new Float64Array(size);
  const ss = new Float64Array(size);
  const sp = b ? new Float64Array(size) : null;
  for (let y = 0; y < height; y++) {
    let row = 0;
    let rowSq = 0;
    let rowProduct = 0;
    const above = y * stride + 1;
    const at = above + stride;
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      const v = a[i]!;
      row += v;
      rowSq += v * v;
      s[at + x] = s[above + x]! + row;
      ss[at + x] = ss[above + x]! + rowSq;
      if (sp) {
        rowProduct += v * b![i]!;
        sp[at + x] = sp[above + x]! + rowProduct;
      }
    }
  }
  return sp ? [s, ss, sp] : [s, ss];
}
