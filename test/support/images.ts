import { constants, crc32, deflateRawSync } from "node:zlib";
import sharp from "sharp";

/** 8-bit sRGB triple; tests compare with colourDistance because outputs are lossy. */
export type RGB = readonly [number, number, number];
/** Named corners, so orientation tests read as intent rather than coordinates. */
export type Corner = "top-left" | "top-right" | "bottom-right" | "bottom-left";
/** What decode() returns: source facts from metadata, pixels normalised for comparison. */
export interface Decoded {
  format: string;
  width: number;
  height: number;
  channels: number;
  hasAlpha: boolean;
  orientation: number | undefined;
  data: Buffer;
}

const cache = new Map<string, Promise<Buffer>>();

/** Memoised per key and copied on the way out so one test mutating a buffer can't poison another. */
async function memo(key: string, make: () => Promise<Buffer>): Promise<Buffer> {
  let hit = cache.get(key);
  if (!hit) cache.set(key, (hit = make()));
  return Buffer.from(await hit);
}

/** mulberry32: a seeded PRNG so every run produces byte-identical images. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const clamp = (v: number) => (v < 0 ? 0 : v > 255 ? 255 : Math.round(v));

function raw(data: Buffer | Uint16Array, width: number, height: number, channels: 1 | 2 | 3 | 4) {
  return sharp(data, { raw: { width, height, channels } });
}

/** Gradients + soft blobs + noise: gives lossy encoders real entropy, unlike flat test colours. */
function photoPixels(w: number, h: number, seed = 7): Buffer {
  const r = rng(seed);
  const blobs = Array.from({ length: 6 }, () => ({
    x: r() * w,
    y: r() * h,
    rad2: ((0.1 + 0.25 * r()) * Math.min(w, h)) ** 2,
    c: [r() * 255, r() * 255, r() * 255],
  }));
  const px = Buffer.alloc(w * h * 3);
  for (let y = 0, i = 0; y < h; y++) {
    for (let x = 0; x < w; x++, i += 3) {
      const rgb = [(255 * x) / w, (255 * y) / h, 128 + 100 * Math.sin((x + 2 * y) / (w / 8 + 1))];
      for (const b of blobs) {
        if ((x - b.x) ** 2 + (y - b.y) ** 2 < b.rad2)
          for (let k = 0; k < 3; k++) rgb[k] = 0.4 * rgb[k]! + 0.6 * b.c[k]!;
      }
      const n = (r() - 0.5) * 30;
      px[i] = clamp(rgb[0]! + n);
      px[i + 1] = clamp(rgb[1]! + n);
      px[i + 2] = clamp(rgb[2]! + n);
    }
  }
  return px;
}

function solid(w: number, h: number, paint: (x: number, y: number) => RGB): Buffer {
  const px = Buffer.alloc(w * h * 3);
  for (let y = 0, i = 0; y < h; y++) for (let x = 0; x < w; x++, i += 3) px.set(paint(x, y), i);
  return px;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), 8 + data.length);
  return out;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Photo-like JPEG so WebP/AVIF encoders do real work and sizes/quality are meaningful. */
export function photo(width: number, height: number): Promise<Buffer> {
  return memo(`photo:${width}x${height}`, () =>
    raw(photoPixels(width, height), width, height, 3).jpeg({ quality: 85 }).toBuffer(),
  );
}

/** RGBA PNG: left third alpha 0, middle third alpha 64..191, right third opaque — catches alpha being dropped or flattened. */
export function pngWithAlpha(width: number, height: number): Promise<Buffer> {
  return memo(`alpha:${width}x${height}`, () => {
    const rgb = photoPixels(width, height, 11);
    const px = Buffer.alloc(width * height * 4);
    for (let y = 0, i = 0; y < height; y++) {
      for (let x = 0; x < width; x++, i++) {
        rgb.copy(px, i * 4, i * 3, i * 3 + 3);
        px[i * 4 + 3] = x < width / 3 ? 0 : x < (2 * width) / 3 ? 64 + Math.round((127 * y) / height) : 255;
      }
    }
    return raw(px, width, height, 4).png().toBuffer();
  });
}

/** Colour of the one stored corner block in orientedJpeg; everything else is ORIENTATION_BACKGROUND. */
export const ORIENTATION_MARKER: RGB = [220, 30, 30];
/** Background of orientedJpeg, far from the marker so lossy outputs can't blur one into the other. */
export const ORIENTATION_BACKGROUND: RGB = [40, 80, 200];

/** 60x40 stored pixels, marker in the stored top-left third, EXIF Orientation = n: proves auto-orient by pixels, not tags. */
export function orientedJpeg(orientation: number): Promise<Buffer> {
  if (!Number.isInteger(orientation) || orientation < 1 || orientation > 8)
    throw new RangeError("orientation must be 1..8");
  return memo(`oriented:${orientation}`, () => {
    const px = solid(60, 40, (x, y) => (x < 20 && y < 14 ? ORIENTATION_MARKER : ORIENTATION_BACKGROUND));
    return raw(px, 60, 40, 3)
      .withMetadata({ orientation })
      .jpeg({ quality: 95, chromaSubsampling: "4:4:4" })
      .toBuffer();
  });
}

/** Displayed size after auto-orient: 5..8 swap axes. */
export function expectedOrientedSize(orientation: number): { width: number; height: number } {
  return orientation >= 5 ? { width: 40, height: 60 } : { width: 60, height: 40 };
}

/** Where the stored top-left marker must land once the EXIF transform is applied. */
export function expectedMarkerCorner(orientation: number): Corner {
  const corners: Corner[] = [
    "top-left",
    "top-right",
    "bottom-right",
    "bottom-left",
    "top-left",
    "top-right",
    "bottom-right",
    "bottom-left",
  ];
  const c = corners[orientation - 1];
  if (!c) throw new RangeError("orientation must be 1..8");
  return c;
}

/** The single corner (sampled 15% in, so resizes and lossy edges don't matter) showing the marker, or null. */
export function markerCorner(img: Decoded): Corner | null {
  const hits = (["top-left", "top-right", "bottom-right", "bottom-left"] as const).filter(
    (c) => colourDistance(cornerPixel(img, c), ORIENTATION_MARKER) < 60,
  );
  return hits.length === 1 ? hits[0]! : null;
}

/** CMYK JPEG with an embedded CMYK ICC profile, as print-oriented tools export. */
export function cmykJpeg(width: number, height: number): Promise<Buffer> {
  return memo(`cmyk:${width}x${height}`, () =>
    raw(photoPixels(width, height, 3), width, height, 3)
      .withIccProfile("cmyk")
      .jpeg({ quality: 90 })
      .toBuffer(),
  );
}

/** Single-channel JPEG, to catch code that assumes 3 channels. */
export function greyJpeg(width: number, height: number): Promise<Buffer> {
  return memo(`grey:${width}x${height}`, () => {
    const r = rng(5);
    const px = Buffer.alloc(width * height);
    for (let i = 0; i < px.length; i++) px[i] = clamp((255 * (i % width)) / width + (r() - 0.5) * 40);
    return raw(px, width, height, 1).toColourspace("b-w").jpeg({ quality: 90 }).toBuffer();
  });
}

/**
 * Quadrant colours of sixteenBitPng in 8 bits. Stored as v*256+0x80 with v <= 128, so shift, round
 * and floor reductions all give exactly v, while a bug reading the low byte gives 128 grey.
 */
export const SIXTEEN_BIT_EXPECTED: Readonly<Record<Corner, RGB>> = {
  "top-left": [128, 0, 64],
  "top-right": [0, 128, 96],
  "bottom-right": [16, 112, 0],
  "bottom-left": [96, 32, 128],
};

/** 16-bit (ushort) RGB PNG in four flat quadrants; see SIXTEEN_BIT_EXPECTED. */
export function sixteenBitPng(width = 64, height = 64): Promise<Buffer> {
  return memo(`png16:${width}x${height}`, () => {
    const px = new Uint16Array(width * height * 3);
    for (let y = 0, i = 0; y < height; y++) {
      for (let x = 0; x < width; x++, i += 3) {
        const corner = `${y < height / 2 ? "top" : "bottom"}-${x < width / 2 ? "left" : "right"}` as Corner;
        for (const [k, v] of SIXTEEN_BIT_EXPECTED[corner].entries()) px[i + k] = v * 256 + 0x80;
      }
    }
    return raw(px, width, height, 3).toColourspace("rgb16").png().toBuffer();
  });
}

/** Indexed-colour PNG (PLTE), the other common PNG layout besides truecolour. */
export function palettePng(width = 64, height = 64): Promise<Buffer> {
  return memo(`palette:${width}x${height}`, () => {
    const colours: RGB[] = [
      [255, 0, 0],
      [0, 160, 0],
      [0, 0, 255],
      [250, 200, 0],
      [30, 30, 30],
      [240, 240, 240],
    ];
    const px = solid(width, height, (x, y) => colours[(Math.floor(x / 8) + Math.floor(y / 8)) % colours.length]!);
    return raw(px, width, height, 3).png({ palette: true, colours: 16 }).toBuffer();
  });
}

/** Adam7-interlaced PNG: decoders take a separate multi-pass path for it. */
export function interlacedPng(width = 64, height = 48): Promise<Buffer> {
  return memo(`adam7:${width}x${height}`, () =>
    raw(photoPixels(width, height), width, height, 3).png({ progressive: true }).toBuffer(),
  );
}

/** Progressive JPEG: multi-scan decoding, common from web tools and phones. */
export function progressiveJpeg(width = 64, height = 48): Promise<Buffer> {
  return memo(`progjpeg:${width}x${height}`, () =>
    raw(photoPixels(width, height), width, height, 3).jpeg({ progressive: true }).toBuffer(),
  );
}

/** The 1x1 colour used by onePixelPng/onePixelJpeg. */
export const ONE_PIXEL: RGB = [200, 100, 50];

/** Smallest legal PNG: edge case for resize maths and encoders' minimum sizes. */
export function onePixelPng(): Promise<Buffer> {
  return memo("1px:png", () => raw(Buffer.from(ONE_PIXEL), 1, 1, 3).png().toBuffer());
}

/** Smallest legal JPEG. */
export function onePixelJpeg(): Promise<Buffer> {
  return memo("1px:jpeg", () => raw(Buffer.from(ONE_PIXEL), 1, 1, 3).jpeg({ quality: 95 }).toBuffer());
}

/** Colour of jpegWithP3Profile as seen through its profile; `naive` is what ignoring the profile gives. */
export interface P3Jpeg {
  bytes: Buffer;
  srgb: RGB;
  naive: RGB;
}

/** 32x32 flat JPEG tagged Display P3: a correct pipeline outputs `srgb`, one that ignores ICC outputs `naive`. */
export async function jpegWithP3Profile(): Promise<P3Jpeg> {
  const srgb: RGB = [230, 30, 30];
  const bytes = await memo("p3", () =>
    raw(
      solid(32, 32, () => srgb),
      32,
      32,
      3,
    )
      .withIccProfile("p3")
      .jpeg({ quality: 95 })
      .toBuffer(),
  );
  const stored = await sharp(bytes, { ignoreIcc: true }).raw().toBuffer();
  return { bytes, srgb, naive: [stored[0]!, stored[1]!, stored[2]!] };
}

/**
 * The same colour as a half-transparent 16-bit RGBA PNG tagged Display P3, as
 * photo editors export: sharp processes 16-bit images in P3, so only an explicit sRGB transform
 * converts it.
 */
export async function png16WithP3Profile(): Promise<P3Jpeg> {
  const srgb: RGB = [230, 30, 30];
  const bytes = await memo("p3:png16", () =>
    raw(
      solid(32, 32, () => srgb),
      32,
      32,
      3,
    )
      .withIccProfile("p3")
      .toColourspace("rgb16")
      .ensureAlpha(0.5)
      .png()
      .toBuffer(),
  );
  const stored = await sharp(bytes, { ignoreIcc: true }).raw({ depth: "uchar" }).toBuffer();
  return { bytes, srgb, naive: [stored[0]!, stored[1]!, stored[2]!] };
}

/** Appears in the EXIF, XMP and text/comment metadata of the *WithMetadata images, to grep outputs for leaks. */
export const METADATA_MARKER = "imgpress-private-marker-7f3a";
const XMP = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/" dc:creator="${METADATA_MARKER}"/></rdf:RDF></x:xmpmeta>`;

function withPrivateMetadata(width: number, height: number) {
  return raw(photoPixels(width, height), width, height, 3)
    .withExif({ IFD0: { Artist: METADATA_MARKER, Copyright: METADATA_MARKER } })
    .withXmp(XMP);
}

/** PNG with EXIF (eXIf), XMP (iTXt) and a tEXt comment, all carrying METADATA_MARKER, to test stripping. */
export function pngWithMetadata(width = 32, height = 32): Promise<Buffer> {
  return memo(`metapng:${width}x${height}`, async () => {
    const png = await withPrivateMetadata(width, height).png().toBuffer();
    const text = pngChunk("tEXt", Buffer.from(`Comment\0${METADATA_MARKER}`, "latin1"));
    const idat = png.indexOf("IDAT", 8, "latin1") - 4; // readers only report text chunks that precede IDAT
    return Buffer.concat([png.subarray(0, idat), text, png.subarray(idat)]);
  });
}

/** JPEG with EXIF (APP1), XMP and an ICC profile, all but the ICC carrying METADATA_MARKER. */
export function jpegWithMetadata(width = 32, height = 32): Promise<Buffer> {
  return memo(`metajpeg:${width}x${height}`, () =>
    withPrivateMetadata(width, height).withIccProfile("srgb").jpeg().toBuffer(),
  );
}

/** First `fraction` of the bytes: a cut-off upload whose header still parses. */
export function truncated(bytes: Buffer, fraction: number): Buffer {
  return Buffer.from(bytes.subarray(0, Math.floor(bytes.length * fraction)));
}

/**
 * Valid 1-bit greyscale PNG of all-black rows declaring width x height (16000x16000 is ~31 KB, 256 MB
 * decoded; note that is under sharp's default limitInputPixels). Built from one repeated
 * full-flushed deflate block, so the raster is never allocated.
 */
export function pngBomb(width = 16000, height = 16000): Buffer {
  const rowBytes = 1 + Math.ceil(width / 8);
  const rowsPerBlock = Math.max(1, Math.floor(2 ** 20 / rowBytes));
  const block = (rows: number) =>
    deflateRawSync(Buffer.alloc(rows * rowBytes), { level: 9, finishFlush: constants.Z_FULL_FLUSH });
  const full = block(rowsPerBlock);
  const parts: Buffer[] = [Buffer.from([0x78, 0xda])];
  for (let y = rowsPerBlock; y <= height; y += rowsPerBlock) parts.push(full);
  if (height % rowsPerBlock) parts.push(block(height % rowsPerBlock));
  const adler = Buffer.alloc(4); // Adler-32 of n zero bytes is (n mod 65521) << 16 | 1
  adler.writeUInt32BE((((rowBytes * height) % 65521) * 65536 + 1) >>> 0);
  parts.push(Buffer.from([0x03, 0x00]), adler); // empty final block, then checksum
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([1, 0, 0, 0, 0], 8); // 1-bit, greyscale, deflate, no filter, no interlace
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", Buffer.concat(parts)),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

/** A PNG of signature, IHDR (8-bit RGB) declaring width x height, and IEND: no pixel data at all. */
export function pngHeaderOnly(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([PNG_SIGNATURE, pngChunk("IHDR", ihdr), pngChunk("IEND", Buffer.alloc(0))]);
}

/** A few hundred bytes of JPEG whose SOF declares width x height and whose scan data is missing entirely. */
export function jpegHeaderOnly(width = 30000, height = 30000): Promise<Buffer> {
  return memo(`jpeghdr:${width}x${height}`, async () => {
    const jpg = await raw(
      solid(16, 16, () => ONE_PIXEL),
      16,
      16,
      3,
    )
      .jpeg()
      .toBuffer();
    for (let off = 2; off + 4 <= jpg.length; off += 2 + jpg.readUInt16BE(off + 2)) {
      const marker = jpg[off + 1]!;
      if (marker >= 0xc0 && marker <= 0xc2) {
        jpg.writeUInt16BE(height, off + 5);
        jpg.writeUInt16BE(width, off + 7);
      } else if (marker === 0xda) {
        return Buffer.concat([jpg.subarray(0, off + 2 + jpg.readUInt16BE(off + 2)), Buffer.from([0xff, 0xd9])]);
      }
    }
    throw new Error("no SOS marker in sharp's JPEG");
  });
}

/** Valid GIF: a real image in a format the service should refuse. */
export function gifBytes(): Promise<Buffer> {
  return memo("gif", () => raw(photoPixels(16, 16), 16, 16, 3).gif().toBuffer());
}

/** Valid WebP input: already the output format, still not an accepted input. */
export function webpBytes(): Promise<Buffer> {
  return memo("webp", () => raw(photoPixels(16, 16), 16, 16, 3).webp().toBuffer());
}

/** Valid TIFF, which sharp decodes happily but the service should not accept. */
export function tiffBytes(): Promise<Buffer> {
  return memo("tiff", () => raw(photoPixels(16, 16), 16, 16, 3).tiff().toBuffer());
}

/** SVG, which sharp would rasterise (librsvg) if the service forgot to check the format. */
export function svgBytes(): Buffer {
  return Buffer.from(
    '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><rect width="64" height="64" fill="red"/></svg>',
  );
}

/** Plain text, for uploads with a spoofed image Content-Type. */
export function textBytes(): Buffer {
  return Buffer.from("this is not an image\n");
}

/** Valid 24-bit BMP, hand-built because sharp (no ImageMagick) can neither write nor read BMP. */
export function bmpBytes(width = 8, height = 8): Buffer {
  const stride = Math.ceil((width * 3) / 4) * 4;
  const out = Buffer.alloc(54 + stride * height);
  out.write("BM", 0, "latin1");
  out.writeUInt32LE(out.length, 2);
  out.writeUInt32LE(54, 10);
  out.writeUInt32LE(40, 14);
  out.writeInt32LE(width, 18);
  out.writeInt32LE(height, 22);
  out.writeUInt16LE(1, 26);
  out.writeUInt16LE(24, 28);
  out.writeUInt32LE(stride * height, 34);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) out.set([50, 100, 200], 54 + y * stride + x * 3); // BGR
  return out;
}

/** Deterministic garbage for the bodies of the fake-signature inputs. */
function garbage(n: number, seed: number): Buffer {
  const r = rng(seed);
  return Buffer.from(Array.from({ length: n }, () => Math.floor(r() * 256)));
}

/** PNG signature + valid 64x64 IHDR + an IDAT of garbage: sniffers (file-type wants IHDR then IDAT) accept it, decoding fails. */
export function pngSignatureGarbage(): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(64, 0);
  ihdr.writeUInt32BE(64, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", garbage(1024, 1)),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

/** JPEG SOI + marker prefix then garbage: passes magic-byte sniffing, fails decoding. */
export function jpegSignatureGarbage(): Buffer {
  return Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), garbage(1024, 2)]);
}

/** Zero-length body: sharp throws synchronously on it, unlike other bad input. */
export function emptyBytes(): Buffer {
  return Buffer.alloc(0);
}

/** n bytes that sniff as JPEG (FF D8 FF E0) but are zeros after: only a size limit should reject them. */
export function oversizedBytes(n: number): Buffer {
  const out = Buffer.alloc(n);
  out.set([0xff, 0xd8, 0xff, 0xe0].slice(0, n));
  return out;
}

/**
 * Real JPEG (noise at quality 100, ~2.9 bytes/pixel) padded with COM segments to within 3 bytes
 * under targetBytes, e.g. just below an upload limit. Cached; ~0.5 s for 19.5 MiB.
 */
export function largeJpeg(targetBytes: number): Promise<Buffer> {
  return memo(`large:${targetBytes}`, async () => {
    const width = 4096;
    let height = Math.max(8, Math.floor((targetBytes * 0.97) / 2.9 / width));
    for (;;) {
      const r = rng(height);
      const px = Buffer.alloc(width * height * 3);
      const words = new Uint32Array(px.buffer, px.byteOffset, px.length >> 2);
      for (let i = 0; i < words.length; i++) words[i] = r() * 4294967296;
      const jpg = await raw(px, width, height, 3).jpeg({ quality: 100, chromaSubsampling: "4:4:4" }).toBuffer();
      if (jpg.length > targetBytes) {
        if (height <= 8) throw new RangeError(`targetBytes ${targetBytes} is below the smallest noisy JPEG`);
        height = Math.max(8, Math.floor(height * (targetBytes / jpg.length) * 0.97));
        continue;
      }
      return Buffer.concat([jpg.subarray(0, 2), ...comSegments(targetBytes - jpg.length), jpg.subarray(2)]);
    }
  });
}

/** COM segments totalling exactly `gap` bytes, or as close as possible (a segment is 4..65537 bytes). */
function comSegments(gap: number): Buffer[] {
  const segs: Buffer[] = [];
  while (gap >= 4) {
    let size = Math.min(gap, 65537);
    if (gap - size > 0 && gap - size < 4) size -= 4;
    const seg = Buffer.alloc(size);
    seg.writeUInt16BE(0xfffe, 0);
    seg.writeUInt16BE(size - 2, 2);
    segs.push(seg);
    gap -= size;
  }
  return segs;
}

/** Stored pixels as 8-bit sRGB RGBA (ICC applied, EXIF orientation NOT applied) so tests assert on what a viewer would get. */
export async function decode(bytes: Buffer | Uint8Array): Promise<Decoded> {
  const meta = await sharp(bytes).metadata();
  const { data, info } = await sharp(bytes)
    .toColourspace("srgb")
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 4) throw new Error(`expected RGBA from decode, got ${info.channels} channels`);
  return {
    format: meta.format,
    width: info.width,
    height: info.height,
    channels: meta.channels,
    hasAlpha: meta.hasAlpha,
    orientation: meta.orientation,
    data,
  };
}

/** RGBA at (x, y), bounds unchecked: tests pick coordinates from the known size. */
export function pixelAt(img: Decoded, x: number, y: number): [number, number, number, number] {
  const i = (y * img.width + x) * 4;
  return [img.data[i]!, img.data[i + 1]!, img.data[i + 2]!, img.data[i + 3]!];
}

/** RGBA a fraction `inset` in from a corner, robust to resizing and lossy edge artefacts. */
export function cornerPixel(img: Decoded, corner: Corner, inset = 0.15): [number, number, number, number] {
  const x = Math.floor(corner.endsWith("left") ? img.width * inset : img.width * (1 - inset));
  const y = Math.floor(corner.startsWith("top") ? img.height * inset : img.height * (1 - inset));
  return pixelAt(img, Math.min(x, img.width - 1), Math.min(y, img.height - 1));
}

/** Max per-channel RGB difference, the tolerance unit for lossy comparisons. */
export function colourDistance(a: readonly number[], b: readonly number[]): number {
  return Math.max(Math.abs(a[0]! - b[0]!), Math.abs(a[1]! - b[1]!), Math.abs(a[2]! - b[2]!));
}
