/**
 * The quality guard (src/conversion/pipeline/guard.ts) on small crafted images: the output reaches
 * WebP q80's SSIM and is the smallest candidate that does; an injected slow encoder and clock
 * show the time bound; bad inputs keep their codes; lossless is untouched; the headers reach the
 * client through the real app.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import sharp from "sharp";
import { type EncodeSettings, sharpDecoder, sharpEncoder } from "../../../src/conversion/pipeline/encode.ts";
import { type GuardDeps, guardedEncode, realGuardDeps } from "../../../src/conversion/pipeline/guard.ts";
import { convertImage } from "../../../src/conversion/pipeline/index.ts";
import { flatShare, hasFewColours, type RawImage } from "../../../src/conversion/pipeline/sample.ts";
import { lumaOnWhite, meanSsim } from "../../../src/conversion/pipeline/ssim.ts";
import { convertForm, type Keys, postBearer, rgba } from "../../support/convert-helpers.ts";
import { createHarness, expectError, type Harness } from "../../support/harness.ts";
import * as img from "../../support/images.ts";

function craft(width: number, height: number, channels: 3 | 4, pixel: (x: number, y: number) => number[]): RawImage {
  const data = new Uint8Array(width * height * channels);
  for (let y = 0, p = 0; y < height; y++)
    for (let x = 0; x < width; x++, p += channels) data.set(pixel(x, y).slice(0, channels), p);
  return { data, width, height, channels };
}

/** Colour ramps under an alpha ramp with fine stripes: AVIF codes that alpha lossy. */
const translucentGradient = (w: number, h: number) =>
  craft(w, h, 4, (x, y) => [
    (255 * x) / w,
    (255 * y) / h,
    128 + 60 * Math.sin(x / 3),
    40 + ((200 * y) / h) * (x % 8 < 4 ? 1 : 0.6),
  ]);
/** A few flat colours with hard edges and one-pixel lines, like a logo or a chart. */
const flatGraphic = (w: number, h: number) =>
  craft(w, h, 3, (x, y) =>
    x % 32 === 0 || y % 24 === 0
      ? [20, 20, 20]
      : ((x >> 5) + (y >> 4)) % 3 === 0
        ? [230, 60, 40]
        : ((x >> 6) ^ (y >> 5)) & 1
          ? [250, 250, 250]
          : [40, 90, 200],
  );
/** Gradient plus strong grain, like a high-ISO photo. */
function noisyPhoto(w: number, h: number): RawImage {
  const r = img.rng(5);
  return craft(w, h, 3, (x, y) => {
    const g = 60 * (r() - 0.5);
    return [120 + (100 * x) / w + g, 80 + (120 * y) / h + g, 140 + 50 * Math.sin((x + y) / 20) + g];
  });
}

const crafted = [
  { name: "translucent gradient", image: translucentGradient(256, 192) },
  { name: "flat graphic", image: flatGraphic(256, 192) },
  { name: "noisy photo", image: noisyPhoto(256, 192) },
];

const score = async (source: RawImage, bytes: Uint8Array) =>
  meanSsim(lumaOnWhite(source), lumaOnWhite(await sharpDecoder(bytes, source.channels)), source.width, source.height);

/** The real encoder, recording what it was asked; a clock that only moves when told. */
function recording(costMs: (image: RawImage, settings: EncodeSettings) => number = () => 0, decodeMs = 0) {
  let now = 0;
  const calls: { image: RawImage; settings: EncodeSettings; bytes: Uint8Array }[] = [];
  const deps: GuardDeps = {
    now: () => now,
    encode: async (image, settings) => {
      now += costMs(image, settings);
      const bytes = await sharpEncoder(image, settings);
      calls.push({ image, settings, bytes });
      return bytes;
    },
    decode: async (bytes, channels) => {
      now += decodeMs;
      return realGuardDeps.decode(bytes, channels);
    },
  };
  return { deps, calls, advance: (ms: number) => (now += ms), elapsed: () => now };
}

const context = { startedAt: 0, decodeMs: 0, endAt: Number.POSITIVE_INFINITY };

describe("the decision", () => {
  // Time frozen: the budget never binds, so the search runs to its end.
  test.each(crafted)("$name: meets WebP q80's SSIM with the smallest candidate tried", async ({ image }) => {
    const { deps, calls } = recording();
    const { bytes, report } = await guardedEncode(image, "avif", context, deps);
    const candidates = calls.filter((c) => c.settings.format === "avif");
    expect(candidates.length).toBe(report.candidates);
    const reference = calls.find((c) => c.settings.format === "webp");
    expect(report.reasons).not.toContain("budget");
    if (!reference) {
      // Lossless no larger than the preset beats every lossy candidate whatever the target: none is measured.
      expect(report).toMatchObject({ quality: "lossless", reasons: ["smaller-lossless"], target: undefined });
      expect(await score(image, bytes)).toBe(1);
      expect(bytes.length).toBeLessThanOrEqual(candidates[0]!.bytes.length);
      return;
    }
    const target = await score(image, reference.bytes);
    expect(report.target).toBeCloseTo(target, 6);
    const chosen = await score(image, bytes);
    if (report.quality === "lossless") expect(chosen).toBe(1);
    else expect(chosen).toBeGreaterThanOrEqual(target);
    const passing = [];
    for (const c of candidates)
      if (c.settings.options.lossless || (await score(image, c.bytes)) >= target) passing.push(c.bytes.length);
    expect(bytes.length).toBe(Math.min(...passing));
  });

  test("the preset is kept when it already reaches the target, and a miss is raised", async () => {
    const outcomes = [];
    for (const { image } of crafted)
      outcomes.push((await guardedEncode(image, "avif", context, recording().deps)).report);
    // The crafted set covers both branches: at least one raise above the preset's 55.
    expect(outcomes.some((r) => r.quality === "lossless" || r.quality > 55)).toBe(true);
    for (const r of outcomes)
      expect(r.reasons[0]).toMatch(r.quality === 55 ? /^preset$/ : /^(alpha|graphic|detail|smaller-lossless)$/);
  });

  test("a translucent image has its quality raised, and says alpha", async () => {
    const { report } = await guardedEncode(crafted[0]!.image, "avif", context, recording().deps);
    // The preset's lossy alpha misses the target on this image, every time (the encoder is deterministic).
    expect(report.quality).not.toBe(55);
    expect(report.reasons[0]).toBe("alpha");
    expect(report.extraEncodes).toBe(report.candidates); // the WebP reference plus every trial above the preset
  });

  test("a photo is coded at 4:2:0 like WebP, translucent or not; a graphic keeps full-resolution colour", async () => {
    const chroma = async (image: RawImage) => {
      const { deps, calls } = recording();
      await guardedEncode(image, "avif", context, deps);
      return new Set(
        calls
          .filter((c) => c.settings.format === "avif" && !c.settings.options.lossless)
          .map((c) => (c.settings.options as { chromaSubsampling?: string }).chromaSubsampling),
      );
    };
    expect([...(await chroma(crafted[2]!.image))]).toEqual(["4:2:0"]);
    expect([...(await chroma(crafted[1]!.image))]).toEqual(["4:4:4"]);
    expect([...(await chroma(crafted[0]!.image))]).toEqual(["4:2:0"]);
    // A smooth photo: pixels in equal pairs (as flat as the threshold) but thousands of colours.
    const sky = craft(256, 192, 3, (x, y) => {
      const g = ((x >> 1) * 7 + y * 13) % 97;
      return [60 + g, 110 + (g >> 1), 200 - (y >> 2)];
    });
    expect(flatShare(sky)).toBeGreaterThanOrEqual(0.5);
    expect(hasFewColours(sky, 0.05)).toBe(false);
    expect([...(await chroma(sky))]).toEqual(["4:2:0"]);
    // A small anti-aliased graphic (text on a flat fill): hundreds of colours, still a graphic.
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="72"><rect width="120" height="72" fill="#f4f4f4"/><text x="6" y="30" font-size="22" font-family="sans-serif" fill="#c01010">Sale</text><text x="6" y="62" font-size="20" font-family="sans-serif" fill="#1030a0">-40%</text></svg>`;
    const { data, info } = await sharp(Buffer.from(svg)).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const icon: RawImage = { data, width: info.width, height: info.height, channels: info.channels };
    expect(hasFewColours(icon, 0.02)).toBe(true);
    expect(hasFewColours(icon, 0)).toBe(true); // under the 1024 floor by itself
    expect([...(await chroma(icon))]).toEqual(["4:4:4"]);
  });

  test("WebP's own preset is the target: no reference encode, the preset is kept", async () => {
    const { deps, calls } = recording();
    const { report } = await guardedEncode(crafted[2]!.image, "webp", context, deps);
    expect(
      calls.filter((c) => JSON.stringify(c.settings.options) === JSON.stringify({ quality: 80, effort: 4 })),
    ).toHaveLength(1);
    expect(report.quality).toBe(80);
  });

  test("a WebP graphic goes lossless: smaller than q80, and pixel-exact", async () => {
    const image = crafted[1]!.image;
    const fixed = await sharpEncoder(image, { format: "webp", options: { quality: 80, effort: 4 } });
    const { bytes, report } = await guardedEncode(image, "webp", context, recording().deps);
    // Flat colours and hard edges: lossless WebP beats q80 on this image, every time.
    expect(report.quality).toBe("lossless");
    expect(report.reasons[0]).toBe("smaller-lossless");
    expect(bytes.length).toBeLessThan(fixed.length);
    expect(Buffer.compare(Buffer.from((await sharpDecoder(bytes, 3)).data), Buffer.from(image.data))).toBe(0);
  });

  test("the target comes before the upload's size: a raise larger than the upload is kept, and said", async () => {
    // Sparse stars on a smooth gradient: a small PNG, which AVIF at the preset smooths away.
    const r = img.rng(9);
    const stars = new Set(Array.from({ length: 300 }, () => Math.floor(r() * 256 * 192)));
    const image = craft(256, 192, 3, (x, y) =>
      stars.has(y * 256 + x) ? [230, 230, 250] : [8, 10 + y / 10, 30 + x / 9],
    );
    const input = await sharp(image.data, { raw: { width: 256, height: 192, channels: 3 } })
      .png({ compressionLevel: 9 })
      .toBuffer();
    const { deps, calls } = recording();
    const result = await convertImage(
      input,
      { format: "avif", quality: "lossy" },
      { maxPixels: 1e8, timeoutS: 60, qualityGuard: "avif" },
      deps,
    );
    expect(result.quality === "lossless" || result.quality > 55).toBe(true);
    expect(result.bytes.length).toBeGreaterThan(input.length);
    expect(result.qualityReasons).toContain("original-smaller");
    // Exact when lossless won (then no reference is needed), else at least the reference's score.
    const reference = calls.find((c) => c.settings.format === "webp");
    expect(await score(image, result.bytes)).toBeGreaterThanOrEqual(
      reference ? await score(image, reference.bytes) : 1,
    );
  });
});

describe("graphics larger than their sample", () => {
  // Red dashes on white, like a banner or a chart: lossless codes it far smaller than any lossy setting.
  const dashes = (w: number, h: number) =>
    craft(w, h, 3, (x, y) => ((Math.floor(x / 7) + Math.floor(y / 9)) % 5 === 0 ? [200, 0, 0] : [255, 255, 255]));
  // Encoders cost 1 ms per 1000 pixels, lossless half that (on flat content it is the faster one).
  const cost = (image: RawImage, settings: EncodeSettings) =>
    ((settings.options.lossless ? 0.5 : 1) * image.width * image.height) / 1000;

  test.each(["avif", "webp"] as const)(
    "%s: lossless is tried before any raise and chosen when smaller, within the bound",
    async (format) => {
      const image = dashes(1200, 800);
      const { deps, calls, elapsed } = recording(cost);
      const { bytes, report } = await guardedEncode(image, format, context, deps);
      const trials = calls.filter((c) => c.image !== image && c.settings.format === format);
      // The preset, then lossless: no lossy raise spent the time lossless needs.
      expect(trials.map((c) => c.settings.options.lossless === true)).toEqual([false, true]);
      expect(report.quality).toBe("lossless");
      expect(report.reasons).toEqual(["smaller-lossless"]);
      expect(bytes.length).toBeLessThan(
        (
          await sharpEncoder(image, {
            format,
            options: format === "webp" ? { quality: 80, effort: 4 } : { quality: 55, effort: 0 },
          })
        ).length,
      );
      expect(elapsed()).toBeLessThanOrEqual(1.5 * ((1200 * 800) / 1000));
    },
  );

  test("a lossless AVIF whose trial shows it 2× slower than the preset is not chosen, however small: its full encode would break the bound", async () => {
    const image = dashes(1200, 800);
    const { deps, calls, elapsed } = recording((i, s) => (s.options.lossless ? 4 : 1) * cost(i, s));
    const { report } = await guardedEncode(image, "avif", context, deps);
    expect(calls.some((c) => c.image !== image && c.settings.options.lossless)).toBe(true); // tried on the sample
    expect(report.quality).not.toBe("lossless");
    expect(calls.at(-1)!.settings.options.lossless).toBeUndefined();
    expect(elapsed()).toBeLessThanOrEqual(1.5 * ((1200 * 800) / 1000));
  });

  test("when lossless does not fit the bound, the reason says budget", async () => {
    const image = dashes(1200, 800);
    // Decoding a trial to score it costs a tenth of the preset's encode: the reference fits, lossless after it does not.
    const { deps, calls } = recording((i, s) => (s.options.lossless ? 40 : 1) * cost(i, s), (1200 * 800) / 1000 / 10);
    const { report } = await guardedEncode(image, "avif", context, deps);
    expect(calls.some((c) => c.settings.options.lossless)).toBe(false);
    expect(report.reasons).toContain("budget");
  });
});

describe("the time bound", () => {
  // A large image is judged on a sample; the injected encoder costs 1 ms per 1000 pixels.
  const large = noisyPhoto(1536, 1024);
  const slow = (image: RawImage) => (image.width * image.height) / 1000;
  const presetMs = (1536 * 1024) / 1000;

  test("with a slow encoder the whole guard stays within 1.5× the preset's encode time", async () => {
    const { deps, calls, elapsed } = recording(slow);
    const { report } = await guardedEncode(large, "avif", context, deps);
    expect(calls.some((c) => c.image !== large)).toBe(true); // trials ran on the sample
    expect(calls.filter((c) => c.image === large)).toHaveLength(1); // one full encode
    expect(elapsed()).toBeLessThanOrEqual(1.5 * presetMs);
    expect(report.extraEncodes).toBe(calls.length - 1);
  });

  test("the search steps up at most 25 qualities at first and tries at most 4 raises", async () => {
    const { deps, calls } = recording();
    const { report } = await guardedEncode(large, "avif", context, deps);
    const raises = calls
      .filter((c) => c.image !== large && c.settings.format === "avif")
      .map((c) => c.settings.options.quality ?? 0)
      .slice(1);
    expect(raises.length).toBeGreaterThanOrEqual(1); // the noisy photo misses at the preset
    expect(raises.length).toBeLessThanOrEqual(4);
    expect(raises[0]).toBeLessThanOrEqual(80);
    expect(report.candidates).toBe(1 + raises.length);
  });

  test("a passing raise whose full encode would not fit does not end the search: a cheaper pass below it is chosen", async () => {
    // AVIF from quality 80 up costs 3× (near-lossless paths are that slow): the first raise passes but cannot be afforded.
    const costly = (settings: EncodeSettings) => settings.format === "avif" && (settings.options.quality ?? 0) >= 80;
    const { deps, calls, elapsed } = recording((image, settings) => (costly(settings) ? 3 : 1) * slow(image));
    const { report } = await guardedEncode(large, "avif", context, deps);
    const tried = calls
      .filter((c) => c.image !== large && c.settings.format === "avif")
      .map((c) => c.settings.options.quality);
    expect(tried[1]).toBe(80);
    expect(report.quality).toBeGreaterThan(55);
    expect(report.quality).toBeLessThan(80);
    expect(report.score!).toBeGreaterThanOrEqual(report.target!);
    expect(report.reasons).toEqual(["detail"]);
    expect(elapsed()).toBeLessThanOrEqual(1.5 * presetMs);
  });

  test("when even the trials do not fit, the preset is returned and the reason says budget", async () => {
    // Decoding a trial to score it costs a third of the preset's encode: after the preset's own
    // trial, the WebP reference no longer fits.
    const { deps, calls, elapsed } = recording(slow, presetMs / 3);
    const { bytes, report } = await guardedEncode(large, "avif", context, deps);
    expect(report.quality).toBe(55);
    expect(report.reasons).toContain("budget");
    expect(calls.at(-1)!.image).toBe(large);
    expect(bytes.length).toBeGreaterThan(0);
    expect(calls).toHaveLength(2); // the preset's trial and the final encode
    expect(elapsed()).toBeLessThanOrEqual(1.5 * presetMs);
  });

  test("a strip longer than WebP's 16383 pixels is judged on a part that the WebP reference can hold", async () => {
    const strip = noisyPhoto(16384, 8);
    const { deps, calls } = recording();
    const { bytes, report } = await guardedEncode(strip, "avif", context, deps);
    const reference = calls.find((c) => c.settings.format === "webp");
    expect(reference?.image.width).toBe(16383);
    expect(calls.at(-1)!.image).toBe(strip);
    expect((await sharp(bytes).metadata()).width).toBe(16384);
    expect(report.candidates).toBeGreaterThanOrEqual(1);
  });

  test("the conversion time limit caps the budget", async () => {
    const { deps, calls } = recording(slow);
    const { report } = await guardedEncode(large, "avif", { ...context, endAt: presetMs * 1.05 }, deps);
    expect(calls.filter((c) => c.image !== large)).toHaveLength(1); // only the preset trial
    expect(report.quality).toBe(55);
  });
});

describe("through convertImage", () => {
  const limits = { maxPixels: 100_000_000, timeoutS: 60, qualityGuard: "all" as const };

  test("bad inputs keep their error codes with the guard on", async () => {
    const png = await img.pngWithAlpha(64, 48);
    const cases: [Uint8Array, number, string][] = [
      [img.truncated(png, 0.5), 422, "INVALID_IMAGE"],
      [await img.gifBytes(), 415, "UNSUPPORTED_MEDIA_TYPE"],
      [img.pngBomb(), 422, "IMAGE_TOO_LARGE"],
      [img.pngSignatureGarbage(), 422, "INVALID_IMAGE"],
    ];
    for (const [input, status, code] of cases) {
      const err = await convertImage(input, { format: "avif", quality: "lossy" }, limits).catch((e) => e);
      expect({ status: err.status, code: err.code }).toEqual({ status, code });
    }
  });

  test.each(["webp", "avif"] as const)("%s lossless is untouched: exact pixels, no guard encode", async (format) => {
    const input = await img.pngWithAlpha(96, 64);
    const result = await convertImage(input, { format, quality: "lossless" }, limits);
    expect(result.quality).toBe("lossless");
    expect(result.guardEncodes).toBe(0);
    expect(result.qualityReasons[0]).toBe("requested");
    const out = await rgba(result.bytes);
    const want = await sharp(input).ensureAlpha().raw().toBuffer();
    // `exact` keeps colour under alpha 0 in WebP; AVIF lossless compares on visible pixels too.
    if (format === "webp") expect(Buffer.compare(out.data, want)).toBe(0);
    else
      for (let p = 0; p < want.length; p += 4)
        if (want[p + 3]! > 0) expect(out.data.subarray(p, p + 4)).toEqual(want.subarray(p, p + 4));
  });

  test("guard off: the preset, no extra encode", async () => {
    const result = await convertImage(
      await img.photo(128, 96),
      { format: "avif", quality: "lossy" },
      { ...limits, qualityGuard: "off" },
    );
    expect({ quality: result.quality, reasons: result.qualityReasons, encodes: result.guardEncodes }).toEqual({
      quality: 55,
      reasons: ["preset"],
      encodes: 0,
    });
  });
});

describe("response headers", () => {
  let h: Harness;
  let keys: Keys;
  beforeAll(async () => {
    h = await createHarness();
    keys = await h.issueKey("guard@example.com");
  });
  afterAll(() => h.close());

  test("X-Quality and X-Quality-Reason are sent, exposed, and counted in the conversion event", async () => {
    const events: { guardEncodes: number }[] = [];
    h.services.convert.observe((e) => events.push(e));
    const res = await postBearer(
      h,
      keys,
      await convertForm(await img.pngWithAlpha(160, 120), { format: "avif" }, "logo.png", "image/png"),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("x-quality")).toMatch(/^(\d+|lossless)$/);
    expect(res.headers.get("x-quality-reason")).toMatch(
      /^(preset|alpha|graphic|detail|smaller-lossless)(, (budget|original-smaller))*$/,
    );
    const exposed = (res.headers.get("access-control-expose-headers") ?? "")
      .split(",")
      .map((s) => s.trim().toLowerCase());
    expect(exposed).toEqual(expect.arrayContaining(["x-quality", "x-quality-reason"]));
    expect(events.at(-1)!.guardEncodes).toBeGreaterThanOrEqual(1); // at least the WebP reference

    const lossless = await postBearer(
      h,
      keys,
      await convertForm(await img.photo(64, 48), { format: "webp", quality: "lossless" }),
    );
    expect(lossless.headers.get("x-quality")).toBe("lossless");
    expect(lossless.headers.get("x-quality-reason")).toStartWith("requested");
    expect(events.at(-1)!.guardEncodes).toBe(0);
  });

  test("a bad upload keeps its code with the guard on", async () => {
    const res = await postBearer(
      h,
      keys,
      await convertForm(img.truncated(await img.pngWithAlpha(64, 48), 0.5), { format: "avif" }, "x.png", "image/png"),
    );
    expectError({ status: res.status, headers: res.headers, body: res.body, text: "" }, 422, "INVALID_IMAGE");
  });
});
