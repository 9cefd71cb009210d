import type { ConversionGate } from "./gate.ts";
import type { Upload } from "./form.ts";
import { convertImage, type ConvertLimits } from "./pipeline/index.ts";

/** A finished conversion with what the response reports. */
export interface Converted {
  bytes: Uint8Array;
  mime: string;
  extension: string;
  stem: string;
  originalSize: number;
}

/** Runs validated uploads through the pipeline inside the gate's slots. */
export class ConvertService {
  constructor(
    readonly gate: ConversionGate,
    private readonly limits: ConvertLimits,
  ) {}

  /** Converts one upload; lossless jobs count as heavy so they cannot take every slot. */
  async convert(upload: Upload): Promise<Converted> {
    const result = await this.gate.run(upload.options.quality === "lossless", () => convertImage(upload.image, upload.options, this.limits));
    return { bytes: result.bytes, mime: result.mime, extension: upload.options.format, stem: upload.stem, originalSize: upload.image.length };
  }
}

/** `(1 - optimized/original) × 100` with two decimals; negative when the output is larger. */
export function savingsPercent(original: number, optimized: number): string {
  const text = ((1 - optimized / original) * 100).toFixed(2);
  return text === "-0.00" ? "0.00" : text;
}
