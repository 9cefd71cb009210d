import { describe, expect, test } from "bun:test";
import { fileTypeFromBuffer } from "file-type";
import sharp from "sharp";
import * as img from "./images.ts";

const meta = (b: Buffer) => sharp(b).metadata();

/** Bytes in JPEG COM segments before the scan, i.e. padding rather than pixels. */
function comBytes(jpg: Buffer): number {
  let total = 0;
  for (let off = 2; jpg[off + 1] !== 0xda; off += 2 + jpg.readUInt16BE(off + 2)) {
    if (jpg[off + 1] === 0xfe) total += 2 + jpg.readUInt16BE(off + 2);
  }
  return total;
}

describe("realistic inputs", () => {
  test("photo is a noisy JPEG of the requested size", async () => {
    const b = await img.photo(320, 240);
    const m = await meta(b);
    expect([m.format, m.width, m.height, m.channels, m.space]).toEqual(["jpeg", 320, 240, 3, "srgb"]);
    const stats = await sharp(b).stats();
    for (const ch of stats.channels) expect(ch.stdev).toBeGreaterThan(20);
    expect(stats.entropy).toBeGreaterThan(6);
    expect(b.length).toBeGreaterThan(320 * 240 * 0.15); // noise: flat/gradient images compress ~3x smaller
    const [px, blurred] = await Promise.all([sharp(b).raw().toBuffer(), sharp(b).blur(1.5).raw().toBuffer()]);
    expect(px.reduce((sum, v, i) => sum + Math.abs(v - blurred[i]!), 0) / px.length).toBeGreaterThan(3);
    expect(await img.photo(320, 240)).toEqual(b); // deterministic (cached copy)
  });

  test("pngWithAlpha has transparent, semi-transparent and opaque pixels", async () => {
    const b = await img.pngWithAlpha(90, 60);
    const m = await meta(b);
    expect([m.format, m.width, m.height, m.channels, m.hasAlpha]).toEqual(["png", 90, 60, 4, true]);
    const d = await img.decode(b);
    expect(img.pixelAt(d, 5, 30)[3]).toBe(0);
    expect(img.pixelAt(d, 45, 30)[3]).toBeGreaterThan(0);
    expect(img.pixelAt(d, 45, 30)[3]).toBeLessThan(255);
    expect(img.pixelAt(d, 85, 30)[3]).toBe(255);
  });

  test.each([1, 2, 3, 4, 5, 6, 7, 8])("orientedJpeg(%i) tag, stored pixels and auto-oriented marker", async (n) => {
    const b = await img.orientedJpeg(n);
    const m = await meta(b);
    expect([m.format, m.width, m.height, m.orientation]).toEqual(["jpeg", 60, 40, n]);
    expect(img.markerCorner(await img.decode(b))).toBe("top-left"); // stored, un-rotated
    const upright = await img.decode(await sharp(b).autoOrient().png().toBuffer());
    expect({ width: upright.width, height: upright.height }).toEqual(img.expectedOrientedSize(n));
    expect(img.markerCorner(upright)).toBe(img.expectedMarkerCorner(n));
  });

  test("orientedJpeg rejects out-of-range orientations", () => {
    expect(() => img.orientedJpeg(0)).toThrow(RangeError);
    expect(() => img.orientedJpeg(9)).toThrow(RangeError);
  });

  test("markerCorner returns null when no corner matches", async () => {
    expect(img.markerCorner(await img.decode(await img.photo(40, 40)))).toBeNull();
  });

  test("cmykJpeg is CMYK with an embedded CMYK profile", async () => {
    const m = await meta(await img.cmykJpeg(64, 48));
    expect([m.format, m.space, m.channels, m.hasProfile, m.width, m.height]).toEqual(["jpeg", "cmyk", 4, true, 64, 48]);
    expect(m.icc?.subarray(16, 20).toString("latin1")).toBe("CMYK"); // ICC header: data colour space
  });

  test("greyJpeg is single-channel", async () => {
    const m = await meta(await img.greyJpeg(50, 30));
    expect([m.format, m.space, m.channels, m.width, m.height]).toEqual(["jpeg", "b-w", 1, 50, 30]);
  });

  test("sixteenBitPng is ushort and reduces to SIXTEEN_BIT_EXPECTED", async () => {
    const b = await img.sixteenBitPng();
    const m = await meta(b);
    expect([m.format, m.depth, m.space, m.bitsPerSample, m.channels]).toEqual(["png", "ushort", "rgb16", 16, 3]);
    const low = await sharp(b).toColourspace("rgb16").raw({ depth: "ushort" }).toBuffer();
    expect([...new Uint16Array(low.buffer, low.byteOffset, 3)]).toEqual([0x8080, 0x0080, 0x4080]); // low byte matters
    for (const reduced of [b, await sharp(b).webp({ lossless: true }).toBuffer()]) {
      const d = await img.decode(reduced);
      for (const [corner, rgb] of Object.entries(img.SIXTEEN_BIT_EXPECTED)) {
        expect(img.cornerPixel(d, corner as img.Corner, 0.25).slice(0, 3)).toEqual([...rgb]);
      }
    }
  });

  test("palettePng is indexed", async () => {
    const m = await meta(await img.palettePng());
    expect([m.format, m.isPalette]).toEqual(["png", true]);
    expect(m.bitsPerSample).toBeLessThanOrEqual(8);
  });

  test("interlacedPng and progressiveJpeg are progressive; photo is not", async () => {
    expect(await meta(await img.interlacedPng()).then((m) => [m.format, m.isProgressive])).toEqual(["png", true]);
    expect(await meta(await img.progressiveJpeg()).then((m) => [m.format, m.isProgressive])).toEqual(["jpeg", true]);
    expect((await meta(await img.photo(64, 48))).isProgressive).toBe(false);
  });

  test("one-pixel images", async () => {
    for (const [b, format] of [
      [await img.onePixelPng(), "png"],
      [await img.onePixelJpeg(), "jpeg"],
    ] as const) {
      const d = await img.decode(b);
      expect([d.format, d.width, d.height]).toEqual([format, 1, 1]);
      expect(img.colourDistance(img.pixelAt(d, 0, 0), img.ONE_PIXEL)).toBeLessThanOrEqual(3);
    }
  });

  test("jpegWithP3Profile carries a P3 profile whose colour differs from the naive reading", async () => {
    const p3 = await img.jpegWithP3Profile();
    const m = await meta(p3.bytes);
    expect([m.format, m.hasProfile]).toEqual(["jpeg", true]);
    expect(m.icc?.includes(Buffer.from("\0s\0P\x003\0C", "latin1"))).toBe(true); // UTF-16BE "sP3C" description
    expect(img.colourDistance(img.pixelAt(await img.decode(p3.bytes), 16, 16), p3.srgb)).toBeLessThanOrEqual(3);
    expect(img.colourDistance(p3.naive, p3.srgb)).toBeGreaterThan(15);
  });

  test.each([
    ["png", img.pngWithMetadata],
    ["jpeg", img.jpegWithMetadata],
  ] as const)("%s with metadata carries the marker in EXIF and XMP", async (format, make) => {
    const b = await make();
    const m = await meta(b);
    expect(m.format).toBe(format);
    expect(m.exif?.toString("latin1")).toContain(img.METADATA_MARKER);
    expect(m.xmpAsString).toContain(img.METADATA_MARKER);
    if (format === "png") expect(m.comments).toContainEqual({ keyword: "Comment", text: img.METADATA_MARKER });
    else expect(m.hasProfile).toBe(true);
    const stripped = await sharp(b).webp().toBuffer(); // sharp strips by default: the marker must vanish
    expect(stripped.includes(img.METADATA_MARKER)).toBe(false);
  });
});

describe("hostile inputs", () => {
  test("truncated keeps the requested prefix and breaks decoding", async () => {
    const b = await img.photo(200, 150);
    const t = img.truncated(b, 0.5);
    expect(t.length).toBe(Math.floor(b.length / 2));
    expect(t.equals(b.subarray(0, t.length))).toBe(true);
    expect((await meta(t)).width).toBe(200); // header still readable
    await expect(sharp(t, { failOn: "truncated" }).raw().toBuffer()).rejects.toThrow();
  });

  test("pngBomb is tiny but declares a huge raster", async () => {
    const b = img.pngBomb();
    expect(b.length).toBeLessThan(40_000);
    const m = await sharp(b, { limitInputPixels: false }).metadata();
    expect([m.format, m.width, m.height, m.channels, m.bitsPerSample]).toEqual(["png", 16000, 16000, 1, 1]);
    await expect(sharp(b, { limitInputPixels: 10_000_000 }).raw().toBuffer()).rejects.toThrow(/pixel limit/i);
  });

  test("pngBomb's hand-built deflate stream decodes fully (multi-block)", async () => {
    const { data, info } = await sharp(img.pngBomb(3000, 3000), { failOn: "warning" })
      .raw()
      .toBuffer({ resolveWithObject: true });
    expect([info.width, info.height]).toEqual([3000, 3000]);
    expect(data.every((v) => v === 0)).toBe(true);
  });

  test("jpegHeaderOnly declares 30000x30000 with no scan data", async () => {
    const b = await img.jpegHeaderOnly();
    expect(b.length).toBeLessThan(1000);
    const m = await sharp(b, { limitInputPixels: false }).metadata();
    expect([m.format, m.width, m.height]).toEqual(["jpeg", 30000, 30000]);
    await expect(sharp(b).raw().toBuffer()).rejects.toThrow(/pixel limit/i);
  });

  test("foreign but valid formats are what they claim", async () => {
    expect((await meta(await img.gifBytes())).format).toBe("gif");
    expect((await meta(await img.webpBytes())).format).toBe("webp");
    expect((await meta(await img.tiffBytes())).format).toBe("tiff");
    expect((await meta(img.svgBytes())).format).toBe("svg");
    expect((await fileTypeFromBuffer(img.bmpBytes()))?.mime).toBe("image/bmp");
    expect(img.bmpBytes(5, 3).length).toBe(54 + 16 * 3); // rows padded to 4 bytes
  });

  test.each([
    ["text", img.textBytes()],
    ["bmp", img.bmpBytes()],
    ["png signature + garbage", img.pngSignatureGarbage()],
    ["jpeg signature + garbage", img.jpegSignatureGarbage()],
    ["empty", img.emptyBytes()],
  ])("sharp cannot decode %s", async (_, b) => {
    await expect((async () => sharp(b).raw().toBuffer())()).rejects.toThrow();
  });

  test("signature-garbage inputs sniff as their claimed type", async () => {
    expect((await fileTypeFromBuffer(img.pngSignatureGarbage()))?.mime).toBe("image/png");
    expect((await fileTypeFromBuffer(img.jpegSignatureGarbage()))?.mime).toBe("image/jpeg");
    expect(img.emptyBytes().length).toBe(0);
  });

  test("oversizedBytes is exactly n bytes and sniffs as JPEG", async () => {
    const b = img.oversizedBytes(21 * 1024 * 1024);
    expect(b.length).toBe(21 * 1024 * 1024);
    expect((await fileTypeFromBuffer(b))?.mime).toBe("image/jpeg");
  });

  test("largeJpeg is a decodable JPEG just under the target", async () => {
    const target = Math.floor(19.5 * 1024 * 1024);
    const b = await img.largeJpeg(target);
    expect(b.length).toBeLessThanOrEqual(target);
    expect(b.length).toBeGreaterThan(target - 4);
    const m = await meta(b);
    expect([m.format, m.width]).toEqual(["jpeg", 4096]);
    expect(m.height).toBeGreaterThan(1000);
    expect(comBytes(b)).toBeLessThan(target * 0.05); // mostly real pixels, not padding
    const small = await img.largeJpeg(300_000);
    expect(small.length).toBeLessThanOrEqual(300_000);
    expect(small.length).toBeGreaterThan(300_000 - 4);
    await sharp(small, { failOn: "warning" }).raw().toBuffer(); // COM padding keeps it a clean JPEG
  });
});

describe("decode", () => {
  test("normalises grey, CMYK and alpha inputs to 8-bit RGBA", async () => {
    for (const b of [await img.greyJpeg(20, 10), await img.cmykJpeg(20, 10), await img.pngWithAlpha(20, 10)]) {
      const d = await img.decode(b);
      expect(d.data.length).toBe(d.width * d.height * 4);
    }
    const g = await img.decode(await img.greyJpeg(20, 10));
    expect([g.channels, g.hasAlpha]).toEqual([1, false]);
    const [r, gr, bl, a] = img.pixelAt(g, 10, 5);
    expect([r, a]).toEqual([gr, 255]);
    expect(bl).toBe(r);
  });
});
