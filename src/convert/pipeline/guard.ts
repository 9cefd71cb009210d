import { sharpDecoder, sharpEncoder, type Decoder, type EncodeSettings, type Encoder } from "./encode.ts";
import { presets, type OutputFormat } from "./presets.ts";
import { flatShare, hasTranslucency, takeSample, type RawImage } from "./sample.ts";
import { lumaOnWhite, meanSsim } from "./ssim.ts";

/** Which lossy outputs the guard checks (IMGPRESS_QUALITY_GUARD). */
export type GuardMode = "off" | "avif" | "all";

/**
 * Why the output has its quality: `preset` (the preset met the target), `alpha` / `graphic` /
 * `detail` (quality raised for a translucent image, a graphic, a detailed photo),
 * `smaller-lossless` (lossless was smaller than the lossy result), `budget` (the time bound
 * stopped the search: best candidate so far), `original-smaller` (the body is larger than the
 * upload; added by the pipeline).
 */
export type QualityReason = "preset" | "requested" | "alpha" | "graphic" | "detail" | "smaller-lossless" | "budget" | "original-smaller";

/** What the guard chose and what it cost. */
export interface GuardReport {
  quality: number | "lossless";
  reasons: QualityReason[];
  /** Encoder runs beyond the one the preset alone needs (trials on the sample, the WebP reference). */
  extraEncodes: number;
  /** Settings of the output format tried, the preset included. */
  candidates: number;
  /** SSIM of WebP q80 effort 4 on the sample, and of the chosen candidate (1 for lossless); absent when nothing was tried. */
  target?: number;
  score?: number;
}

/** The encoder, decoder and clock (milliseconds); injectable for tests. */
export interface GuardDeps {
  encode: Encoder;
  decode: Decoder;
  now: () => number;
}

/** The real encoder and decoder and `performance.now`. */
export const realGuardDeps: GuardDeps = { encode: sharpEncoder, decode: sharpDecoder, now: () => performance.now() };

/** The conversion may take this multiple of decode + preset encode (the encode estimated from the sample)… */
const BUDGET_FACTOR = 1.5;
/** …or the preset's time plus this, whichever is more: tiny images cost milliseconds either way. */
const BUDGET_FLOOR_MS = 100;
/** SSIM gained per quality step, typical for AVIF effort 0 around q55–70 on the bench corpus. */
const SLOPE = 0.0008;
/** Highest lossy quality tried; above it only lossless is left. */
const MAX_QUALITY = 95;
/** A sample at least this flat is a graphic: lossless is tried too. */
const GRAPHIC_FLAT_SHARE = 0.5;
/** Assumed cost of a trial relative to the preset's, before it is measured. */
const RAISE_COST = 1.15;
const TARGET_COST = 1.6;
const LOSSLESS_COST = 4;
/** The reference every lossy output must match: the usual web default. */
const REFERENCE: EncodeSettings = { format: "webp", options: presets.webp.lossy };

interface Trial {
  settings: EncodeSettings;
  bytes: Uint8Array;
  encodeMs: number;
  score: number;
}

/** The conversion's clock (deps.now), the decode's cost and the upload's size. */
export interface GuardContext {
  startedAt: number;
  decodeMs: number;
  /** The conversion time limit. */
  endAt: number;
  originalBytes: number;
}

/**
 * Encodes `image` as lossy `format`, at the preset unless a trial on a sample shows it scores
 * below WebP q80's SSIM; then at the smallest quality that reaches it (or lossless when that is
 * smaller). The whole conversion stays within BUDGET_FACTOR × what decode + preset encode cost
 * (the encode estimated from the sample) and before `context.endAt`.
 */
export async function guardedEncode(image: RawImage, format: OutputFormat, context: GuardContext, deps: GuardDeps = realGuardDeps): Promise<{ bytes: Uint8Array; report: GuardReport }> {
  const sample = takeSample(image);
  const whole = sample === image;
  const scale = whole ? 1 : (image.width * image.height) / (sample.width * sample.height);
  const reference = lumaOnWhite(sample);
  let encodes = 0;
  let scoreMs = 0;
  const trial = async (settings: EncodeSettings): Promise<Trial> => {
    const t0 = deps.now();
    const bytes = await deps.encode(sample, settings);
    const t1 = deps.now();
    const decoded = await deps.decode(bytes, sample.channels);
    const score = settings.options.lossless ? 1 : meanSsim(reference, lumaOnWhite(decoded), sample.width, sample.height);
    encodes++;
    scoreMs = Math.max(scoreMs, deps.now() - t1);
    return { settings, bytes, encodeMs: t1 - t0, score };
  };

  const presetOptions = presets[format].lossy;
  const graphic = flatShare(sample) >= GRAPHIC_FLAT_SHARE;
  const isReference = format === REFERENCE.format && JSON.stringify(presetOptions) === JSON.stringify(REFERENCE.options);
  // The reference's own preset meets the target by definition; only a graphic may do better lossless.
  if (isReference && !graphic) {
    const bytes = await deps.encode(image, { format, options: presetOptions });
    return { bytes, report: { quality: quality({ settings: { format, options: presetOptions } }), reasons: ["preset"], extraEncodes: 0, candidates: 1 } };
  }
  const preset = await trial({ format, options: presetOptions });
  const presetMs = preset.encodeMs * scale;
  const budgetMs = context.decodeMs + presetMs;
  const end = Math.min(context.endAt, context.startedAt + Math.max(BUDGET_FACTOR * budgetMs, budgetMs + BUDGET_FLOOR_MS));
  // A full encode costs the preset's time × the larger of its time ratio on the sample and
  // √(its bytes ÷ the preset's): entropy coding grows with the output (measured 1.04–1.9× the
  // time for 1.3–3.4× the bytes), and tiny sample encodes hide it behind fixed costs.
  const finalMs = (t: Trial) => (whole ? 0 : presetMs * Math.max(1, t.encodeMs / preset.encodeMs, Math.sqrt(t.bytes.length / preset.bytes.length)));
  const affordable = (t: Trial) => deps.now() + finalMs(t) <= end;
  // A trial is started only if the final encode of a candidate like it still fits afterwards.
  const fits = (trialMs: number, finalFactor: number) => deps.now() + trialMs + scoreMs + (whole ? 0 : presetMs * finalFactor) <= end;
  const fullBytes = (t: Trial) => t.bytes.length * scale;

  let target = preset.score;
  let budgetHit = false;
  if (!isReference) {
    if (fits(preset.encodeMs * TARGET_COST, 1)) target = (await trial(REFERENCE)).score;
    else budgetHit = true;
  }

  // Raise the quality until the target is met: lo is the highest known miss, hi the lowest known pass.
  const mine: Trial[] = [preset];
  let lo = preset;
  let hi: Trial | undefined = budgetHit || preset.score >= target ? preset : undefined;
  let tooLarge = false;
  while (hi !== preset) {
    const q = nextQuality(preset, lo, hi, target);
    if (q === undefined) break;
    // Reserve the final encode of the costliest candidate so far: one of them may be returned.
    const reserve = Math.max(RAISE_COST, ...mine.map((t) => (presetMs > 0 ? finalMs(t) / presetMs : 1)));
    if (!fits(preset.encodeMs * RAISE_COST, reserve)) {
      budgetHit = true;
      break;
    }
    const t = await trial({ format, options: { ...presetOptions, quality: q } });
    mine.push(t);
    // Larger than the upload already: no higher quality can serve the user better.
    tooLarge = fullBytes(t) > context.originalBytes;
    if (tooLarge) break;
    if (t.score < target) lo = t;
    else if (!hi || t.bytes.length < hi.bytes.length) hi = t;
    else break; // a higher pass is no smaller: stop refining
  }

  // Bound hit or ceiling reached: the best score so far that fits in time and in the upload's size.
  const usable = (t: Trial) => affordable(t) && (t === preset || fullBytes(t) <= context.originalBytes);
  let chosen = hi && affordable(hi) ? hi : mine.reduce((a, b) => (b.score > a.score && usable(b) ? b : a), preset);
  if (hi && !affordable(hi)) budgetHit = true;
  // Lossless: for graphics, where it may be smaller than lossy; for any image the highest lossy
  // quality left below the target (translucent images: AVIF codes alpha lossy at the colour quality).
  const ceiling = hi === undefined && !budgetHit;
  let lossless = false;
  if ((graphic || ceiling) && fits(preset.encodeMs * LOSSLESS_COST, LOSSLESS_COST)) {
    const t = await trial({ format, options: presets[format].lossless });
    mine.push(t);
    const better = chosen.score < target ? fullBytes(t) <= context.originalBytes : t.bytes.length < chosen.bytes.length;
    if (better && affordable(t)) {
      chosen = t;
      lossless = true;
    }
  }
  if (!affordable(chosen)) chosen = preset;

  const bytes = whole ? chosen.bytes : await deps.encode(image, chosen.settings);
  if (!whole) encodes++;
  const reasons: QualityReason[] = [];
  if (lossless && hi !== undefined) reasons.push("smaller-lossless");
  else if (chosen === preset) reasons.push("preset");
  else reasons.push(hasTranslucency(sample) ? "alpha" : graphic ? "graphic" : "detail");
  if (chosen.score < target) reasons.push(tooLarge ? "original-smaller" : "budget");
  else if (budgetHit && chosen === preset) reasons.push("budget");
  return { bytes, report: { quality: lossless ? "lossless" : quality(chosen), reasons, extraEncodes: encodes - 1, candidates: mine.length, target, score: chosen.score } };
}

/**
 * The next quality to try: on the SSIM-vs-quality line through the two nearest known points
 * (rounded up), inside the bracket of the highest miss and the lowest pass; from the preset alone,
 * on a typical slope of AVIF/WebP SSIM near the presets (SLOPE per quality step). Undefined when
 * the bracket is closed.
 */
function nextQuality(preset: Trial, lo: Trial, hi: Trial | undefined, target: number): number | undefined {
  const qLo = quality(lo);
  const qHi = hi ? quality(hi) : MAX_QUALITY + 1;
  if (qHi - qLo <= 1) return undefined;
  const other = hi ?? (lo === preset ? undefined : preset);
  let slope = SLOPE;
  if (other && other.score !== lo.score) slope = Math.max(SLOPE / 4, (other.score - lo.score) / (quality(other) - qLo));
  const q = qLo + Math.ceil((target - lo.score) / slope);
  return Math.max(qLo + (hi ? 1 : 2), Math.min(qHi - 1, q));
}

function quality(t: Pick<Trial, "settings">): number {
  return (t.settings.options as { quality: number }).quality;
}
