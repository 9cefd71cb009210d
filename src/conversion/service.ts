import { AppError } from "../core/errors.ts";
import { ADDRESS_OWNER, type ConversionGate } from "./gate.ts";
import type { QualityReason } from "./pipeline/guard.ts";
import { type ConvertLimits, type ConvertOptions, convertInspected, inspectUpload } from "./pipeline/index.ts";
import type { OutputFormat, QualityMode } from "./pipeline/presets.ts";

/** A validated conversion request. */
export interface Upload {
  image: Uint8Array;
  /** The client's file name without its extension, safe for a header; "image" when absent. */
  stem: string;
  options: ConvertOptions;
}

/** A finished conversion with what the response reports. */
export interface Converted {
  bytes: Uint8Array;
  mime: string;
  extension: string;
  stem: string;
  originalSize: number;
  /** Encoder quality used, or `lossless` (X-Quality). */
  quality: number | "lossless";
  /** Why that quality (X-Quality-Reason); see QualityReason. */
  qualityReasons: QualityReason[];
  /** Extra encoder runs the quality guard made (trials, reference, final). */
  guardEncodes: number;
}

/**
 * A finished conversion whose place in the gate (its share of the queue and of its key's) is still
 * held: `release` gives it back once the response has been taken by the client (or abandoned), so
 * results nobody reads count against the same bounds as uploads and conversions.
 */
export interface Delivery extends Converted {
  release(): void;
}

/** Who a conversion is for: its key (usage, metrics), its client (the upload budget) and the owners the gate admits it as (`requesterOf`). */
export interface Requester {
  keyId: string;
  client: string;
  owners: readonly string[];
  /** The client's address as staff see it (IPv4 as is, IPv6 as its /64); '' when unknown. */
  address: string;
}

/**
 * The owners a request is admitted as once its body has arrived, each holding at most the
 * per-key share of the gate's places: its key, and its client (`clientGroup`: one IPv4 address or
 * IPv6 prefix), so one client with many keys cannot take every place either. While its body
 * arrives, a request counts against its client's share of the upload budget only: a signed
 * request's signature cannot be checked before, so someone who has seen only its api_key must not
 * be able to hold that key's places (docs/api.md, limits).
 */
export function requesterOf(keyId: string, clientGroup: string, address = ""): Requester {
  return { keyId, client: clientGroup, owners: [`key:${keyId}`, `${ADDRESS_OWNER}${clientGroup}`], address };
}

/**
 * What observers (usage buckets, metrics, logs) learn of one authenticated conversion attempt.
 * Authentication failures (401) are not conversion attempts and are not reported here.
 */
export interface ConversionEvent {
  keyId: string;
  /** null when the request failed before its form was read (e.g. 503 SERVER_BUSY, 413). */
  format: OutputFormat | null;
  quality: QualityMode | null;
  /** `ok`, or the error code the client received. */
  outcome: string;
  bytesIn: number;
  bytesOut: number;
  /** Time spent waiting for a conversion slot; null when the attempt never reached the gate (its form or header was refused first). */
  queueWaitMs: number | null;
  /** Time in the pipeline (header read, decode, resize, encode), the wait for a slot excluded. */
  convertMs: number;
  /** Encoder runs the quality guard added beyond the one encode of the preset (0: guard off or not needed). */
  guardEncodes: number;
  /** Unix milliseconds when the attempt ended. */
  at: number;
  /** The client's address (Requester.address): personal data, for the key's "last address" only, never logged; absent in events made up by tests and the bench. */
  address?: string;
}

/** Called once per conversion attempt, after the answer is known; must not throw or block. */
export type ConversionObserver = (event: ConversionEvent) => void;

/**
 * Lossy conversions of images up to this many pixels (2048 × 2048: every size WordPress writes,
 * the typical plugin upload) take half a conversion slot: measured on the bench's thumbnail
 * workload, two per core keep the cores busy where one per core left them waiting on the
 * JavaScript thread, while their memory (≤ 16 MB of decoded pixels each) stays far below a
 * full-size photo's.
 */
const LIGHT_PIXELS = 2048 * 2048;

/** Runs validated uploads through the pipeline inside the gate's slots and tells the observers. */
export class ConvertService {
  private readonly observers: ConversionObserver[] = [];

  constructor(
    readonly gate: ConversionGate,
    private readonly limits: ConvertLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Registers an observer of every conversion attempt. */
  observe(observer: ConversionObserver): void {
    this.observers.push(observer);
  }

  /**
   * Reserves `uploadBytes` of the upload budget for `client`, lets `receive` read, verify and
   * validate its upload, then admits it as `owners`, converts it, and reports the attempt (success
   * or error code) to the observers. `signal` is the request's: a job still waiting for a slot when
   * it aborts (the client left) is dropped. A result keeps its place in the gate until the caller
   * calls its `release`; a failure gives it back at once. The reservation ends with the conversion.
   */
  async handle(
    { keyId, client, owners, address }: Requester,
    uploadBytes: number,
    receive: () => Promise<Upload>,
    signal?: AbortSignal,
  ): Promise<Delivery> {
    const event: ConversionEvent = {
      keyId,
      format: null,
      quality: null,
      outcome: "ok",
      bytesIn: 0,
      bytesOut: 0,
      queueWaitMs: null,
      convertMs: 0,
      guardEncodes: 0,
      at: 0,
      address,
    };
    let report = true;
    let unreserve = () => {};
    try {
      unreserve = this.gate.reserveUpload(client, uploadBytes);
      const upload = await receive();
      const leave = this.gate.admit(...owners);
      let delivered = false;
      try {
        Object.assign(event, {
          format: upload.options.format,
          quality: upload.options.quality,
          bytesIn: upload.image.length,
        });
        const result = await this.convert(upload, event, signal);
        event.bytesOut = result.bytes.length;
        event.guardEncodes = result.guardEncodes;
        delivered = true;
        return { ...result, release: leave };
      } finally {
        if (!delivered) leave();
      }
    } catch (err) {
      event.outcome = err instanceof AppError ? err.code : "INTERNAL_ERROR";
      // A signature refused once the body arrived (wrong, replayed): its sender may not hold the key it named, so it is not counted as that key's.
      if (err instanceof AppError && err.status === 401) report = false;
      throw err;
    } finally {
      unreserve();
      event.at = this.now();
      if (report) for (const observer of this.observers) observer(event);
    }
  }

  /**
   * Converts one upload. The header is read first, outside the gate: a refused image takes no
   * slot, and the job's weight comes from its size (lossless jobs are heavy so they cannot take
   * every slot; lossy ones of at most LIGHT_PIXELS are light).
   */
  async convert(
    upload: Upload,
    timing?: Pick<ConversionEvent, "queueWaitMs" | "convertMs">,
    signal?: AbortSignal,
  ): Promise<Converted> {
    const inspectedAt = performance.now();
    let queuedAt: number | undefined;
    let startedAt: number | undefined;
    try {
      const inspected = await inspectUpload(upload.image, upload.options, this.limits);
      const { width, height } = inspected.upright;
      const weight =
        upload.options.quality === "lossless" ? "heavy" : width * height <= LIGHT_PIXELS ? "light" : "normal";
      queuedAt = performance.now();
      const result = await this.gate.run(
        weight,
        () => {
          startedAt = performance.now();
          return convertInspected(upload.image, inspected, upload.options, this.limits);
        },
        { memoryBytes: inspected.memoryBytes, signal },
      );
      const { bytes, mime, quality, qualityReasons, guardEncodes } = result;
      return {
        bytes,
        mime,
        extension: upload.options.format,
        stem: upload.stem,
        originalSize: upload.image.length,
        quality,
        qualityReasons,
        guardEncodes,
      };
    } finally {
      if (timing) {
        const endedAt = performance.now();
        // The header read counts as conversion time (it is the pipeline's first step); only a job that reached the gate waited.
        const headerMs = (queuedAt ?? endedAt) - inspectedAt;
        timing.queueWaitMs = queuedAt === undefined ? null : (startedAt ?? endedAt) - queuedAt;
        timing.convertMs = headerMs + endedAt - (startedAt ?? endedAt);
      }
    }
  }
}

/** `(1 - optimized/original) × 100` with two decimals; negative when the output is larger. */
export function savingsPercent(original: number, optimized: number): string {
  const text = ((1 - optimized / original) * 100).toFixed(2);
  return text === "-0.00" ? "0.00" : text;
}
