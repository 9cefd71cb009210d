import { Buffer } from "node:buffer";
import { AppError } from "../errors.ts";

/** The reason a body is cancelled with when it arrives too slowly (the runtime edge need not wait for its rest). */
export const SLOW_BODY = "the request body arrived too slowly";

/** Bounds for reading one request body. */
export interface BodyLimits {
  maxBytes: number;
  timeoutMs: number;
  /**
   * Slowest acceptable body, after MIN_RATE_GRACE_MS (as Apache's mod_reqtimeout MinRate): from
   * then on the body must have averaged this many bytes a second since the grace ended, or it gets
   * 408 at once rather than at `timeoutMs`. 0 or absent: no minimum.
   */
  minBytesPerS?: number;
  /** The error for a body over `maxBytes` (its code differs per route). */
  tooLarge: () => AppError;
}

/**
 * Reads a request body into one buffer without ever holding more than `maxBytes` (plus one chunk):
 * a declared Content-Length over the limit is refused before reading, a streamed body is cut off
 * as soon as it passes the limit, and a client that sends too slowly gets 408.
 */
export async function readBody(request: Request, limits: BodyLimits): Promise<Uint8Array> {
  refuseEncoded(request);
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (declared > limits.maxBytes) throw limits.tooLarge();
  if (!request.body) return new Uint8Array(0);

  const reader = request.body.getReader();
  // With a trustworthy length we fill one exact buffer: no second copy of a 20 MB upload.
  const exact = Number.isInteger(declared) && declared >= 0 ? new Uint8Array(declared) : null;
  const chunks: Uint8Array[] = [];
  let received = 0;
  let timedOut: AppError | undefined;
  const giveUp = (why: AppError) => {
    timedOut ??= why;
    reader.cancel(SLOW_BODY).catch(() => {});
  };
  const timer = setTimeout(() => giveUp(slow(limits.timeoutMs)), limits.timeoutMs);
  const rateCheck = watchRate(limits.minBytesPerS ?? 0, () => received, giveUp);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (received + value.length > limits.maxBytes) throw limits.tooLarge();
      if (exact) {
        if (received + value.length > exact.length) throw incomplete("the body is longer than its Content-Length");
        exact.set(value, received);
      } else chunks.push(value);
      received += value.length;
    }
  } catch (err) {
    reader.cancel().catch(() => {});
    if (err instanceof AppError) throw err;
    if (timedOut) throw timedOut;
    throw incomplete("the connection ended before the whole body arrived");
  } finally {
    clearTimeout(timer);
    clearInterval(rateCheck);
  }
  if (timedOut) throw timedOut;
  if (exact) {
    if (received !== exact.length) throw incomplete("the body is shorter than its Content-Length");
    return exact;
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received);
}

// A compressed body would be read as the bytes it is on the wire (a multipart "without its
// boundary", JSON "not valid"): said as what it is. Images are compressed already.
function refuseEncoded(request: Request): void {
  const coding = request.headers.get("content-encoding")?.trim().toLowerCase();
  if (coding && coding !== "identity") {
    throw new AppError(
      415,
      "UNSUPPORTED_MEDIA_TYPE",
      `The body is sent with Content-Encoding: ${coding.slice(0, 40)}, which this server does not decode: send it uncompressed.`,
    );
  }
  // Deno takes the chunked framing off a `gzip, chunked` body and hands over the gzip (Bun refuses it with a bare 400).
  const transfer = request.headers
    .get("transfer-encoding")
    ?.toLowerCase()
    .split(",")
    .map((c) => c.trim())
    .filter((c) => c !== "chunked" && c !== "identity" && c !== "");
  if (transfer?.length) {
    throw new AppError(
      415,
      "UNSUPPORTED_MEDIA_TYPE",
      `The body is sent with Transfer-Encoding: ${transfer.join(", ").slice(0, 40)}, which this server does not decode: send it uncompressed.`,
    );
  }
}

/** How long a body may take to get going before its minimum rate is enforced (a TLS warm-up, a client reading the file). */
export const MIN_RATE_GRACE_MS = 5_000;

/** Gives up (`giveUp`) once `received()` falls behind `bytesPerS` counted from the end of the grace; checked each second. */
function watchRate(
  bytesPerS: number,
  received: () => number,
  giveUp: (why: AppError) => void,
): ReturnType<typeof setInterval> | undefined {
  if (bytesPerS <= 0) return undefined;
  const startedAt = performance.now();
  const check = setInterval(() => {
    const pastGrace = performance.now() - startedAt - MIN_RATE_GRACE_MS;
    if (pastGrace > 0 && received() < (bytesPerS * pastGrace) / 1000) {
      giveUp(
        new AppError(
          408,
          "REQUEST_TIMEOUT",
          `The request body arrived slower than ${Math.round(bytesPerS / 1024)} KiB/s.`,
        ),
      );
    }
  }, 1000);
  // A pending check must not keep a stopping process alive.
  (check as { unref?: () => void }).unref?.();
  return check;
}

function slow(timeoutMs: number): AppError {
  return new AppError(
    408,
    "REQUEST_TIMEOUT",
    `The request body did not arrive within ${Math.round(timeoutMs / 1000)} s.`,
  );
}

function incomplete(why: string): AppError {
  return new AppError(400, "INCOMPLETE_BODY", `The request body is incomplete: ${why}.`);
}

/** What a small typed body (a staff form, a JSON request) must be. */
export interface SmallBodyRule {
  /** The one media type accepted (parameters such as charset are ignored). */
  type: string;
  /** The 415 message when the Content-Type is anything else. */
  wrongType: string;
  maxBytes: number;
  /** How the 413 names the body ("form", "JSON body"). */
  name: string;
}

/** Reads a body of exactly one media type and at most `rule.maxBytes`, within 10 s: 415, 413, 408 otherwise. */
export async function readSmallBody(request: Request, rule: SmallBodyRule): Promise<Uint8Array> {
  const type = request.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
  if (type !== rule.type) throw new AppError(415, "UNSUPPORTED_MEDIA_TYPE", rule.wrongType);
  return readBody(request, {
    maxBytes: rule.maxBytes,
    timeoutMs: 10_000,
    tooLarge: () => new AppError(413, "PAYLOAD_TOO_LARGE", `The ${rule.name} is larger than ${rule.maxBytes} bytes.`),
  });
}
