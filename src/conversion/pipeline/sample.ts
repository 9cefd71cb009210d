// The guard judges encoder settings on a sample of the image rather than the whole: tiles cut at
// full resolution (a downscaled copy would hide exactly the artefacts the guard looks for, as the
// bench found for ssim.js's default downsampling), spread evenly and packed into one mosaic.

/** Decoded 8-bit pixels, 3 (RGB) or 4 (RGBA) channels, row-major. */
export interface RawImage {
  data: Uint8Array;
  width: number;
  height: number;
  channels: number;
}

/**
 * Tile side: AV1's 64-pixel superblock (a multiple of WebP's 16-pixel macroblock), so tile edges
 * fall on block edges; small tiles cover more of the image for the same pixel count.
 */
const TILE = 64;
/** The sample is about this share of the image's pixels… */
const SAMPLE_SHARE = 1 / 64;
/** …but at least this many tiles (a score from fewer is noise) and at most this many (~1 MP). */
const MIN_TILES = 16;
const MAX_TILES = 256;

/** Largest side of a sample: the WebP reference it is encoded to holds at most 16383 pixels per side (AVIF 16384). */
const MAX_SAMPLE_SIDE = 16383;

/**
 * A sample of `image` for trial encodes; the image itself when it is barely larger than the
 * minimum, cut to MAX_SAMPLE_SIDE when it is a longer strip.
 */
export function takeSample(image: RawImage): RawImage {
  const pixels = image.width * image.height;
  const tiles = Math.min(MAX_TILES, Math.max(MIN_TILES, Math.round((pixels * SAMPLE_SHARE) / (TILE * TILE))));
  if (pixels <= 2 * tiles * TILE * TILE || image.width < TILE || image.height < TILE) return withinSide(image);
  const cols = Math.max(1, Math.min(tiles, Math.round(Math.sqrt((tiles * image.width) / image.height))));
  const rows = Math.ceil(tiles / cols);
  const { channels } = image;
  const out = new Uint8Array(cols * TILE * rows * TILE * channels);
  const rowBytes = TILE * channels;
  for (let r = 0; r < rows; r++) {
    const top = Math.round(((r + 0.5) * image.height) / rows - TILE / 2);
    const y0 = Math.max(0, Math.min(image.height - TILE, top));
    for (let c = 0; c < cols; c++) {
      const left = Math.round(((c + 0.5) * image.width) / cols - TILE / 2);
      const x0 = Math.max(0, Math.min(image.width - TILE, left));
      for (let y = 0; y < TILE; y++) {
        const from = ((y0 + y) * image.width + x0) * channels;
        out.set(image.data.subarray(from, from + rowBytes), ((r * TILE + y) * cols * TILE + c * TILE) * channels);
      }
    }
  }
  return { data: out, width: cols * TILE, height: rows * TILE, channels };
}

// The top-left part of `image` within MAX_SAMPLE_SIDE (a strip, so the part is small), or the image itself.
function withinSide(image: RawImage): RawImage {
  const width = Math.min(image.width, MAX_SAMPLE_SIDE);
  const height = Math.min(image.height, MAX_SAMPLE_SIDE);
  if (width === image.width && height === image.height) return image;
  const { channels } = image;
  const out = new Uint8Array(width * height * channels);
  for (let y = 0; y < height; y++)
    out.set(
      image.data.subarray(y * image.width * channels, (y * image.width + width) * channels),
      y * width * channels,
    );
  return { data: out, width, height, channels };
}

/** True when some pixel is not fully opaque. */
export function hasTranslucency(image: RawImage): boolean {
  if (image.channels !== 4) return false;
  for (let p = 3; p < image.data.length; p += 4) if (image.data[p]! < 255) return true;
  return false;
}

/**
 * Share of pixels equal to their left neighbour: high for flat graphics, screenshots and
 * illustrations (where lossless may beat lossy), near zero for photos and noise.
 */
export function flatShare(image: RawImage): number {
  const { data, channels, width } = image;
  let same = 0;
  for (let p = channels; p < data.length; p += channels) {
    if ((p / channels) % width === 0) continue;
    let equal = true;
    for (let k = 0; k < channels && equal; k++) equal = data[p + k] === data[p - channels + k];
    if (equal) same++;
  }
  return same / (image.width * image.height);
}

/** One bit per 24-bit colour (2 MiB), allocated on first use and cleared after each count. */
let colourBits: Uint32Array | undefined;
/** Below this many distinct colours an image counts as having few, whatever its size (a small anti-aliased icon has hundreds). */
const FEW_COLOURS_FLOOR = 1024;

/**
 * Whether `image` has fewer distinct colours (alpha ignored) than `share` of its pixels, or than
 * FEW_COLOURS_FLOOR: graphics with flat fills have well under 1 per 100 pixels, photos above 5,
 * even those whose smooth skies make many pixels equal to their neighbour. Stops at the bound.
 */
export function hasFewColours(image: RawImage, share: number): boolean {
  const { data, channels } = image;
  const bits = (colourBits ??= new Uint32Array(1 << 19));
  const limit = Math.max(FEW_COLOURS_FLOOR, share * image.width * image.height);
  const touched: number[] = [];
  let distinct = 0;
  for (let p = 0; p < data.length && distinct < limit; p += channels) {
    const colour = (data[p]! << 16) | (data[p + 1]! << 8) | data[p + 2]!;
    const word = colour >>> 5;
    const bit = 1 << (colour & 31);
    if ((bits[word]! & bit) !== 0) continue;
    if (bits[word] === 0) touched.push(word);
    bits[word]! |= bit;
    distinct++;
  }
  for (const word of touched) bits[word] = 0;
  return distinct < limit;
}
