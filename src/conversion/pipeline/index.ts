import sharp, { type Sharp } from "sharp";
import { withDeadline } from "./deadline.ts";
import { decodeRaw } from "./encode.ts";
import { needsTooMuchMemory, translateSharpError } from "./errors.ts";
import { type GuardDeps, type GuardMode, guardedEncode, type QualityReason, realGuardDeps } from "./guard.ts";
import { inspect, outputSize, type Size } from "./inspect.ts";
import { conversionMemoryBytes } from "./memory.ts";
import { mimeTypes, type OutputFormat, presets, type QualityMode } from "./presets.ts";
import { type InputFormat, sniffFormat } from "./sniff.ts";

/** What to produce. */
export interface ConvertOptions {
  format: OutputFormat;
  quality: QualityMode;
  /** Scale down to at most this width; never enlarges. */
  maxWidth?: number;
}

/** Safety limits and server-wide choices of one conversion. */
export interface ConvertLimits {
  maxPixels: number;
  timeoutS: number;
  /** Which lossy outputs the quality guard checks; `off` when absent. */
  qualityGuard?: GuardMode;
  /** Largest memory estimate (conversionMemoryBytes) a conversion may have; no limit when absent. */
  memoryBudgetBytes?: number;
}

/** A converted image and the facts the response reports. */
export interface ConvertResult {
  bytes: Uint8Array;
  mime: string;
  inputFormat: InputFormat;
  width: number;
  height: number;
  /** The encoder quality used, or `lossless`. */
  quality: number | "lossless";
  /** Why (see QualityReason); `original-smaller` when the body is larger than the upload. */
  qualityReasons: QualityReason[];
  /** Encoder runs the quality guard added (0 without it). */
  guardEncodes: number;
  /** Output-format settings the guard tried (1 without it). */
  candidates: number;
}

// libvips' operation cache trades memory for speed on repeated identical work, which a
// conversion service never does; off, memory stays proportional to the images in flight.
sharp.cache(false);

/** What the header says, read before any pixel is decoded. */
export interface Inspected {
  inputFormat: InputFormat;
  /** The image's size after orientation: the pixels the decoder will produce. */
  upright: Size;
  /** The output's size. */
  size: Size;
  /** About how much memory the conversion will take at its peak (conversionMemoryBytes). */
  memoryBytes: number;
  /** See Header.profiled16Bit. */
  profiled16Bit: boolean;
}

/**
 * Sniffs the type and reads the header: refuses what cannot be converted (415, 422 with the
 * image's dimensions, 422 when it would need more memory than the budget) before any pixel is
 * decoded, and tells the caller how large the job is.
 */
export async function inspectUpload(
  input: Uint8Array,
  options: ConvertOptions,
  limits: ConvertLimits,
): Promise<Inspected> {
  const inputFormat = sniffFormat(input);
  const { upright, cost, profiled16Bit } = await inspect(input, inputFormat, limits.maxPixels);
  const size = outputSize(upright, options.maxWidth, options.format);
  const memoryBytes = conversionMemoryBytes(upright, size, options.format, options.quality, cost);
  if (limits.memoryBudgetBytes !== undefined && memoryBytes > limits.memoryBudgetBytes) {
    throw needsTooMuchMemory(upright, size, options, cost, memoryBytes, limits.memoryBudgetBytes);
  }
  return { inputFormat, upright, size, memoryBytes, profiled16Bit };
}

/** The longest timeout sharp accepts for libvips' own stop (it throws beyond it). */
const LIBVIPS_TIMEOUT_MAX_S = 3600;

/**
 * Converts JPEG/PNG bytes to WebP/AVIF: sniff → check the header → orient → to sRGB (honouring
 * an embedded ICC profile) → scale down → encode (through the quality guard for the lossy
 * formats it covers), dropping all other metadata. A pure function of its arguments; errors are
 * AppErrors with the codes of docs/api.md. `guardDeps` replaces the guard's encoder, decoder and clock.
 */
export async function convertImage(
  input: Uint8Array,
  options: ConvertOptions,
  limits: ConvertLimits,
  guardDeps: GuardDeps = realGuardDeps,
): Promise<ConvertResult> {
  return convertInspected(input, await inspectUpload(input, options, limits), options, limits, guardDeps);
}

/** `convertImage` after `inspectUpload`: the caller may have used the header in between (the gate sizes the job by it). */
export async function convertInspected(
  input: Uint8Array,
  inspected: Inspected,
  options: ConvertOptions,
  limits: ConvertLimits,
  guardDeps: GuardDeps = realGuardDeps,
): Promise<ConvertResult> {
  const { inputFormat, upright, size } = inspected;
  // failOn "error": a truncated or corrupt file is refused rather than half-decoded. libvips'
  // own timeout stops pixel work early (freeing the CPU); withDeadline also covers the AVIF
  // encoder, which libvips cannot interrupt. sharp takes whole seconds up to an hour: a longer
  // limit is withDeadline's alone.
  let pipeline = sharp(input, { limitInputPixels: limits.maxPixels, failOn: "error", autoOrient: true }).timeout({
    seconds: Math.min(LIBVIPS_TIMEOUT_MAX_S, Math.max(1, Math.ceil(limits.timeoutS))),
  });
  if (size.width < upright.width) pipeline = pipeline.resize({ width: size.width });
  // sharp processes a 16-bit image in P3 and transforms its embedded profile into that, not sRGB,
  // unless sRGB is named as the output profile (not attached: the output carries no metadata).
  if (inspected.profiled16Bit) pipeline = pipeline.withIccProfile("srgb", { attach: false });
  pipeline = pipeline.toColourspace("srgb");
  const guarded =
    options.quality === "lossy" && (limits.qualityGuard === "all" || limits.qualityGuard === options.format);
  try {
    const work = guarded
      ? guardedWork(pipeline, options.format, limits.timeoutS, guardDeps)
      : presetWork(pipeline, options);
    const done = await withDeadline(work, limits.timeoutS);
    if (done.bytes.length > input.length) done.qualityReasons.push("original-smaller");
    return { ...done, mime: mimeTypes[options.format], inputFormat };
  } catch (err) {
    throw translateSharpError(err as Error);
  }
}

type Work = Omit<ConvertResult, "mime" | "inputFormat">;

/** The preset alone, streamed from the decoder into the encoder. */
async function presetWork(pipeline: Sharp, options: ConvertOptions): Promise<Work> {
  const preset = presets[options.format][options.quality];
  const encoder = options.format === "webp" ? pipeline.webp(preset) : pipeline.avif(preset);
  const { data, info } = await encoder.toBuffer({ resolveWithObject: true });
  const quality = options.quality === "lossless" ? "lossless" : (preset.quality ?? 0);
  const reasons: QualityReason[] = [options.quality === "lossless" ? "requested" : "preset"];
  return {
    bytes: data,
    width: info.width,
    height: info.height,
    quality,
    qualityReasons: reasons,
    guardEncodes: 0,
    candidates: 1,
  };
}

/** Decodes once to raw pixels, then lets the guard choose the encoder settings. */
async function guardedWork(pipeline: Sharp, format: OutputFormat, timeoutS: number, deps: GuardDeps): Promise<Work> {
  const startedAt = deps.now();
  const image = await decodeRaw(pipeline);
  const context = { startedAt, decodeMs: deps.now() - startedAt, endAt: startedAt + timeoutS * 1000 };
  const { bytes, report } = await guardedEncode(image, format, context, deps);
  return {
    bytes,
    width: image.width,
    height: image.height,
    quality: report.quality,
    qualityReasons: report.reasons,
    guardEncodes: report.extraEncodes,
    candidates: report.candidates,
  };
}
