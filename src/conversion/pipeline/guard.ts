import type { AvifOptions } from "sharp";
import { type Decoder, type Encoder, type EncodeSettings, sharpDecoder, sharpEncoder } from "./encode.ts";
import { type OutputFormat, presets } from "./presets.ts";
import { flatShare, hasFewColours, hasTranslucency, type RawImage, takeSample } from "./sample.ts";
import { lumaOnWhite, meanSsim, ssimReference } from "./ssim.ts";

/** Which lossy outputs the guard checks (IMGPRESS_QUALITY_GUARD). */
export type GuardMode = "off" | "avif" | "all";

/**
 * Why the output has its quality: `preset` (the preset met the target), `alpha` / `graphic` /
 * `detail` (quality raised for a translucent image, a graphic, a detailed photo),
 * `smaller-lossless` (lossless was smaller than the lossy result), `budget` (the time bound
 * stopped the search: best candidate so far), `original-smaller` (the body is larger than the
 * upload; added by the pipeline).
 */
export type QualityReason =
  | "preset"
  | "requested"
  | "alpha"
  | "graphic"
  | "detail"
  | "smaller-lossless"
  | "budget"
  | "original-smaller";

/** What the guard chose and what it cost. */
export interface GuardReport {
  quality: number | "lossless";
  reasons: QualityReason[];
  /** Encoder runs beyond the one the preset alone needs (trials on the sample, the WebP reference). */
  extraEncodes: number;
  /** Settings of the output format tried, the preset included. */
  candidates: number;
  /** SSIM of WebP q80 effort 4 on the sample (absent when it was not encoded), and of the chosen candidate (1 for lossless). */
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
/**
 * ln(1 − SSIM) falls about this much per quality step of AVIF effort 0 around the preset
 * (0.017–0.06 on the bench's images: least for photos, most for graphics); the first step
 * away from the preset is sized on it, later ones on the line through the trials.
 */
const LOG_SLOPE = 0.035;
/** The first step up from the preset is at most this: later steps follow a measured line instead of a guess. */
const MAX_FIRST_STEP = 25;
/** Highest quality tried; 100 is near-lossless (alpha exact), sometimes smaller than 90 on graphics. */
const MAX_QUALITY = 100;
/** At most this many qualities above the preset are tried: each trial costs ~15–40 ms with its scoring, a third of a small image's encode. */
const MAX_RAISES = 4;
/** Refining stops when the next pass would be this close to the lowest one: a quality step changes the bytes by ~2–3%, not worth a trial. */
const CLOSE_ENOUGH = 3;
/**
 * A sample must come this much closer than the target to a perfect score (share of the target's
 * 1 − SSIM): a whole image scores within a few thousandths of its sample, on either side.
 */
const AIM_SHARE = 0.95;
/** Quality 100 takes AV1's near-lossless path: 1.8–5× the preset's time on the bench's images, whatever the sample says. */
const NEAR_LOSSLESS_COST = 2;
/** A full encode's time grows about as (bytes ÷ the preset's)^this (AVIF effort 0: 0.97–2.2× the time for 1.7–8× the bytes, exponents 0.25–0.53). */
const BYTES_EXPONENT = 0.4;
/**
 * A sample at least this flat and with fewer distinct colours per pixel than this (or fewer than
 * 1024 in all, see hasFewColours) is a graphic: lossless is tried too, colour kept at full
 * resolution. Flatness alone also catches photos with large smooth skies (0.5–0.7 on the bench's
 * Bridge and Infinite-Sea, at 0.06–0.07 colours per pixel).
 */
const GRAPHIC_FLAT_SHARE = 0.5;
const GRAPHIC_COLOUR_SHARE = 0.02;
/** Assumed cost of a trial relative to the preset's, before it is measured. */
const RAISE_COST = 1.15;
const TARGET_COST = 1.6;
const LOSSLESS_COST = 4;
/**
 * A full lossless encode costs about its sample trial's time ratio to the preset's (measured on
 * 1.6–36 MP graphics: AVIF 2.0–2.9 on the sample, 2.0–5.0 in full; WebP 0.4–0.8 and 0.3–0.6),
 * up to this much more.
 */
const LOSSLESS_MARGIN = 1.3;
/** The AVIF preset without chroma subsampling. */
const FULL_COLOUR_AVIF: AvifOptions = { ...presets.avif.lossy, chromaSubsampling: "4:4:4" };
/** The reference every lossy output must match: the usual web default. */
const REFERENCE: EncodeSettings = { format: "webp", options: presets.webp.lossy };

interface Trial {
  settings: EncodeSettings;
  bytes: Uint8Array;
  encodeMs: number;
  score: number;
}

/** The conversion's clock (deps.now) and the decode's cost. */
export interface GuardContext {
  startedAt: number;
  decodeMs: number;
  /** The conversion time limit. */
  endAt: number;
}

/**
 * Encodes `image` as lossy `format`, at the preset unless a trial on a sample shows it scores
 * below WebP q80's SSIM; then at the smallest quality that reaches it (or lossless when that is
 * smaller). The whole conversion stays within BUDGET_FACTOR × what
 * decode + preset encode cost (the encode estimated from the sample) and before `context.endAt`;
 * when the bound stops the search, the best candidate so far is returned.
 */
export async function guardedEncode(
  image: RawImage,
  format: OutputFormat,
  context: GuardContext,
  deps: GuardDeps = realGuardDeps,
): Promise<{ bytes: Uint8Array; report: GuardReport }> {
  const sample = takeSample(image);
  const graphic = flatShare(sample) >= GRAPHIC_FLAT_SHARE && hasFewColours(sample, GRAPHIC_COLOUR_SHARE);
  // The AVIF preset halves the colour resolution (4:2:0, as lossy WebP always does, alpha or not),
  // which photos do not show; a graphic's hard colour edges do, so graphics keep 4:4:4.
  const presetOptions = format === "avif" && graphic ? FULL_COLOUR_AVIF : presets[format].lossy;
  // The reference's own preset meets the target by definition; only a graphic may do better lossless.
  if (format === REFERENCE.format && !graphic) {
    const bytes = await deps.encode(image, { format, options: presetOptions });
    return {
      bytes,
      report: {
        quality: quality({ settings: { format, options: presetOptions } }),
        reasons: ["preset"],
        extraEncodes: 0,
        candidates: 1,
      },
    };
  }
  const search = await GuardSearch.start({ image, sample, format, graphic, presetOptions }, context, deps);
  await search.measureTarget();
  await search.raiseQuality();
  await search.lastResortLossless();
  return search.finish();
}

/** What a search is about: the image, its sample, the format and whether the sample looks like a graphic. */
interface SearchSubject {
  image: RawImage;
  sample: RawImage;
  format: OutputFormat;
  graphic: boolean;
  presetOptions: EncodeSettings["options"];
}

/**
 * One quality search, in phases: the preset's trial (which sizes the time budget), a graphic's
 * lossless trial, the target (the reference's score), the raises, lossless as a last resort, the
 * final encode. Trials run on the sample; full encodes are estimated from them.
 */
class GuardSearch {
  private readonly whole: boolean;
  private readonly scale: number;
  private readonly isReference: boolean;
  private encodes = 0;
  private scoreMs = 0;
  private end = 0;
  private presetMs = 0;
  private preset!: Trial;
  /** The lossless candidate once tried; its trial's time is guessed, its full encode then estimated from the trial like any other. */
  private exact: Trial | undefined;
  /** The lossy candidates, the preset first. */
  private readonly mine: Trial[] = [];
  private skipped = false;
  private measured: boolean;
  private target = 0;
  private aim = 0;
  private budgetHit = false;
  private hi: Trial | undefined;

  private constructor(
    private readonly subject: SearchSubject,
    private readonly reference: ReturnType<typeof ssimReference>,
    private readonly deps: GuardDeps,
  ) {
    const { image, sample, format } = subject;
    this.whole = sample === image;
    this.scale = this.whole ? 1 : (image.width * image.height) / (sample.width * sample.height);
    // WebP's preset is the reference; for AVIF the target is unknown until the reference is encoded.
    this.isReference = format === REFERENCE.format;
    this.measured = this.isReference;
  }

  /** Tries the preset on the sample, sets the time budget from it, and lets a graphic try lossless first. */
  static async start(subject: SearchSubject, context: GuardContext, deps: GuardDeps): Promise<GuardSearch> {
    // Built only once a trial will be scored (the reference format's shortcut scores nothing).
    const reference = ssimReference(lumaOnWhite(subject.sample), subject.sample.width, subject.sample.height);
    const search = new GuardSearch(subject, reference, deps);
    search.preset = await search.trial({ format: subject.format, options: subject.presetOptions });
    search.mine.push(search.preset);
    search.presetMs = search.preset.encodeMs * search.scale;
    const budgetMs = context.decodeMs + search.presetMs;
    search.end = Math.min(
      context.endAt,
      context.startedAt + Math.max(BUDGET_FACTOR * budgetMs, budgetMs + BUDGET_FLOOR_MS),
    );
    search.target = search.preset.score;
    // A graphic tries lossless first: it is often the smallest candidate, and on flat content often
    // faster than lossy, so neither the reference nor raises may spend the time it needs.
    search.skipped = subject.graphic && !(await search.tryLossless(search.preset));
    return search;
  }

  /** For AVIF, the target is the reference's score on the sample (unless lossless already won or the budget forbids). */
  async measureTarget(): Promise<void> {
    if (!this.isReference && !this.losslessWins()) {
      if (this.fits(this.preset.encodeMs * TARGET_COST, this.finalMs(this.preset))) {
        this.target = (await this.trial(REFERENCE)).score;
        this.measured = true;
      } else this.budgetHit = true;
    }
    this.aim = this.whole || this.isReference ? this.target : 1 - AIM_SHARE * (1 - this.target);
  }

  /** Raises the quality until the aim is met: lo is the highest known miss, hi the lowest known pass. */
  async raiseQuality(): Promise<void> {
    const { preset, aim } = this;
    let lo = preset;
    this.hi = this.budgetHit || preset.score >= aim ? preset : undefined;
    while (this.hi !== preset && !this.losslessWins() && this.mine.length <= MAX_RAISES) {
      const q = nextQuality(preset, lo, this.hi, aim);
      if (q === undefined) break;
      if (!this.fits(preset.encodeMs * RAISE_COST, this.finalMs(this.pick()))) {
        this.budgetHit = true;
        break;
      }
      const t = await this.trial({
        format: this.subject.format,
        options: { ...this.subject.presetOptions, quality: q },
      });
      this.mine.push(t);
      if (t.score < aim) lo = t;
      else this.hi = t;
    }
  }

  /** Lossless for any image where no lossy quality reached the target (translucent images: AVIF codes alpha lossy at the colour quality). */
  async lastResortLossless(): Promise<void> {
    if (!this.subject.graphic && this.hi === undefined && !this.budgetHit)
      this.skipped = !(await this.tryLossless(this.pick()));
  }

  /** Encodes the chosen candidate in full (unless the sample was the image) and says why it was chosen. */
  async finish(): Promise<{ bytes: Uint8Array; report: GuardReport }> {
    const { preset, aim, target } = this;
    const chosen = this.pick();
    const lossless = chosen === this.exact;
    if (this.passes().some((t) => !this.affordable(t) && t.bytes.length < chosen.bytes.length)) this.budgetHit = true;
    const bytes = this.whole ? chosen.bytes : await this.deps.encode(this.subject.image, chosen.settings);
    if (!this.whole) this.encodes++;
    const reasons: QualityReason[] = [];
    // Lossless is "smaller" when a lossy candidate that passed, or the preset, is at least as large.
    if (lossless && this.mine.some((t) => (t === preset || t.score >= aim) && t.bytes.length >= chosen.bytes.length))
      reasons.push("smaller-lossless");
    else if (chosen === preset) reasons.push("preset");
    else reasons.push(hasTranslucency(this.subject.sample) ? "alpha" : this.subject.graphic ? "graphic" : "detail");
    // Also when the time bound kept lossless from being tried.
    if (chosen.score < target || this.skipped || (this.budgetHit && chosen === preset && preset.score < aim))
      reasons.push("budget");
    const report = {
      quality: lossless ? ("lossless" as const) : quality(chosen),
      reasons,
      extraEncodes: this.encodes - 1,
      candidates: this.tried().length,
      target: this.measured ? target : undefined,
      score: chosen.score,
    };
    return { bytes, report };
  }

  /** Encodes the sample with `settings` and scores it against the reference. */
  private async trial(settings: EncodeSettings): Promise<Trial> {
    const { deps, subject } = this;
    const t0 = deps.now();
    const bytes = await deps.encode(subject.sample, settings);
    const t1 = deps.now();
    // Lossless scores 1 by definition: no decode needed.
    const score = settings.options.lossless
      ? 1
      : meanSsim(
          this.reference,
          lumaOnWhite(await deps.decode(bytes, subject.sample.channels)),
          subject.sample.width,
          subject.sample.height,
        );
    this.encodes++;
    this.scoreMs = Math.max(this.scoreMs, deps.now() - t1);
    return { settings, bytes, encodeMs: t1 - t0, score };
  }

  /**
   * A full encode costs the preset's time × the geometric mean of its time ratio on the sample
   * (noisy: a sample encode takes milliseconds) and (its bytes ÷ the preset's)^BYTES_EXPONENT
   * (entropy coding grows with the output, which tiny sample encodes hide behind fixed costs).
   * Lossless is estimated on its time ratio alone, with a margin: smaller output does not make it faster.
   */
  private finalMs(t: Trial): number {
    if (this.whole) return 0;
    const { preset, presetMs } = this;
    const timeRatio = preset.encodeMs > 0 ? t.encodeMs / preset.encodeMs : 1;
    if (t.settings.options.lossless) return presetMs * timeRatio * LOSSLESS_MARGIN;
    const ratio = Math.sqrt(timeRatio * (t.bytes.length / preset.bytes.length) ** BYTES_EXPONENT);
    return presetMs * Math.max(t.settings.options.quality === MAX_QUALITY ? NEAR_LOSSLESS_COST : 1, ratio);
  }

  private affordable(t: Trial): boolean {
    return this.deps.now() + this.finalMs(t) <= this.end;
  }

  /** A trial is started only if, after it, the final encode of the candidate it may replace still fits. */
  private fits(trialMs: number, finalOf: number): boolean {
    return this.deps.now() + trialMs + this.scoreMs + finalOf <= this.end;
  }

  private async tryLossless(current: Trial): Promise<boolean> {
    if (!this.fits(this.preset.encodeMs * LOSSLESS_COST, this.finalMs(current))) return false;
    this.exact = await this.trial({ format: this.subject.format, options: presets[this.subject.format].lossless });
    return true;
  }

  /** Raising the quality only grows the output: an affordable lossless no larger than the preset beats every lossy candidate, whatever the target. */
  private losslessWins(): boolean {
    return (
      this.exact !== undefined && this.affordable(this.exact) && this.exact.bytes.length <= this.preset.bytes.length
    );
  }

  private tried(): Trial[] {
    return this.exact ? [...this.mine, this.exact] : this.mine;
  }

  private passes(): Trial[] {
    return this.tried().filter((t) => t.score >= this.aim);
  }

  /** What would be encoded if the search stopped now: the smallest affordable pass, else the best affordable score. */
  private pick(): Trial {
    const ok = this.tried().filter((t) => t === this.preset || this.affordable(t));
    const pass = ok.filter((t) => t.score >= this.aim);
    return pass.length
      ? pass.reduce((a, b) => (b.bytes.length < a.bytes.length ? b : a))
      : ok.reduce((a, b) => (b.score > a.score ? b : a));
  }
}

/**
 * The next quality to try, inside the bracket of the highest miss and the lowest pass: where the
 * line of ln(1 − SSIM) against quality reaches the aim (rounded up), through the bracket's ends,
 * or the miss and the preset; from the preset alone, on the typical LOG_SLOPE and at most
 * MAX_FIRST_STEP up. Undefined when the bracket is closed or the gain would be too small.
 */
function nextQuality(preset: Trial, lo: Trial, hi: Trial | undefined, aim: number): number | undefined {
  const qLo = quality(lo);
  const qHi = hi ? quality(hi) : MAX_QUALITY + 1;
  if (qHi - qLo <= 1) return undefined;
  const other = hi ?? (lo === preset ? undefined : preset);
  const loss = (t: Trial) => Math.log(Math.max(1e-6, 1 - t.score));
  // Quality must buy some SSIM: a flat or rising line (noise, or alpha that barely improves) is read as a shallow fall.
  const slope = other ? Math.min(-LOG_SLOPE / 4, (loss(other) - loss(lo)) / (quality(other) - qLo)) : -LOG_SLOPE;
  const q = qLo + Math.ceil((Math.log(1 - aim) - loss(lo)) / slope);
  if (qHi - q < CLOSE_ENOUGH && hi) return undefined;
  // Without a pass yet, at least 2 steps: neighbouring qualities often map to the same quantizer.
  return Math.max(qLo + (hi ? 1 : 2), Math.min(qHi - 1, other ? q : Math.min(q, qLo + MAX_FIRST_STEP)));
}

function quality(t: Pick<Trial, "settings">): number {
  return (t.settings.options as { quality: number }).quality;
}
