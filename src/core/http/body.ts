import { Buffer } from "node:buffer";
import { AppError } from "../errors.ts";

/** The reason a body is cancelled with when it arrives too slowly (the runtime edge need not wait for its rest). */
export const SLOW_BODY = "the request body arrived too slowly";

/** Bounds for reading one request body. */
export interface BodyLimits {
  maxBytes: number;
  timeoutMs: number;
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
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    reader.cancel(SLOW_BODY).catch(() => {});
  }, limits.timeoutMs);
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
    if (timedOut) throw slow(limits.timeoutMs);
    throw incomplete("the connection ended before the whole body arrived");
  } finally {
    clearTimeout(timer);
  }
  if (timedOut) throw slow(limits.timeoutMs);
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
    throw new AppError(415, "UNSUPPORTED_MEDIA_TYPE", `The body is sent with Content-Encoding: ${coding.slice(0, 40)}, which this server does not decode: send it uncompressed.`);
  }
  // Deno takes the chunked framing off a `gzip, chunked` body and hands over the gzip (Bun refuses it with a bare 400).
  const transfer = request.headers.get("transfer-encoding")?.toLowerCase().split(",").map((c) => c.trim()).filter((c) => c !== "chunked" && c !== "identity" && c !== "");
  if (transfer?.length) {
    throw new AppError(415, "UNSUPPORTED_MEDIA_TYPE", `The body is sent with Transfer-Encoding: ${transfer.join(", ").slice(0, 40)}, which this server does not decode: send it uncompressed.`);
  }
}

function slow(timeoutMs: number): AppError {
  return new AppError(408, "REQUEST_TIMEOUT", `The request body did not arrive within ${Math.round(timeoutMs / 1000)} s.`);
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
