import { Elysia } from "elysia";
import {
  type Converted,
  type ConvertService,
  type Delivery,
  requesterOf,
  savingsPercent,
} from "../../conversion/service.ts";
import { readBody } from "../../core/http/body.ts";
import { clientContext } from "../../core/http/client.ts";
import { CONVERT_PATH } from "../../core/http/paths.ts";
import { handedOverBody } from "../../core/http/send.ts";
import { clientGroup, rateLimitSubject } from "../../core/ipallow.ts";
import type { ApiAuth } from "../requestauth/index.ts";
import { convertDocs } from "./docs.ts";
import { fileTooLarge, MAX_IMAGE_BYTES, readUpload } from "./form.ts";
import { parseMultipart } from "./multipart.ts";

/** Room for the multipart framing and the small fields around a maximum-size image. */
const FORM_OVERHEAD_BYTES = 64 * 1024;

/** How uploads are received: their time limit, their slowest rate, and who sends them. */
export interface UploadRules {
  timeoutMs: number;
  /** IMGPRESS_UPLOAD_MIN_RATE_KIB in bytes a second (0: none). */
  minBytesPerS: number;
  /** IMGPRESS_CLIENT_IPV6_PREFIX: how wide an IPv6 client is for the shares (`clientGroup`). */
  ipv6PrefixBits: number;
}

/** POST CONVERT_PATH (spec 4.1): authenticate → reserve upload budget → read once → verify → validate → admit → convert. */
export function convertRoutes(convert: ConvertService, keyAuth: ApiAuth, rules: UploadRules) {
  const maxBytes = MAX_IMAGE_BYTES + FORM_OVERHEAD_BYTES;
  const bodyLimits = {
    maxBytes,
    timeoutMs: rules.timeoutMs,
    minBytesPerS: rules.minBytesPerS,
    tooLarge: () => fileTooLarge(FORM_OVERHEAD_BYTES),
  };
  return new Elysia({ name: "convert" })
    .use(keyAuth)
    .use(clientContext)
    .post(
      CONVERT_PATH,
      async ({ request, credential, clientIp }) => {
        const requester = requesterOf(
          credential.key.id,
          clientGroup(clientIp, rules.ipv6PrefixBits),
          rateLimitSubject(clientIp),
        );
        // A body without a length (chunked) may grow to the limit: it reserves that much.
        const declared = Number(request.headers.get("content-length") ?? Number.NaN);
        const reserve = Number.isInteger(declared) && declared >= 0 ? Math.min(declared, maxBytes) : maxBytes;
        const result = await convert.handle(
          requester,
          reserve,
          async () => {
            const body = await readBody(request, bodyLimits);
            await credential.verifyBody(body);
            return readUpload(parseMultipart(body, request.headers.get("content-type")));
          },
          request.signal,
        );
        return imageResponse(result, rules.timeoutMs);
      },
      // parse "none": the body is read once, by the route, so the signature covers the exact bytes.
      { apiKey: true, parse: "none", detail: convertDocs as never },
    );
}

// encodeURIComponent leaves '()* alone, which RFC 8187 does not allow in an ext-value.
function rfc8187(text: string): string {
  return encodeURIComponent(text).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * A result up to this size is handed to the runtime whole (the socket's buffers take it at once);
 * a larger one is sent as the client takes it, holding its place in the gate until then, so unread
 * results are bounded by the queue like uploads are, and one not taken within
 * IMGPRESS_UPLOAD_TIMEOUT_S closes its connection.
 */
export const HOLD_ABOVE_BYTES = 1024 * 1024;

function imageResponse(result: Delivery, sendTimeoutMs: number): Response {
  let headers: Record<string, string>;
  try {
    headers = imageHeaders(result);
  } catch (err) {
    // The place in the gate is this response's to give back: a failure here must not keep it for good.
    result.release();
    throw err;
  }
  if (result.bytes.length <= HOLD_ABOVE_BYTES) {
    result.release();
    return new Response(result.bytes as Uint8Array<ArrayBuffer>, { headers });
  }
  const body = handedOverBody(result.bytes, result.release, sendTimeoutMs);
  return new Response(body, { headers: { ...headers, "content-length": String(result.bytes.length) } });
}

function imageHeaders(result: Converted): Record<string, string> {
  const ascii = result.stem.replace(/[^A-Za-z0-9._ -]/g, "_");
  return {
    "content-type": result.mime,
    "content-disposition": `inline; filename="${ascii}.${result.extension}"; filename*=UTF-8''${rfc8187(result.stem)}.${result.extension}`,
    "x-original-size": String(result.originalSize),
    "x-optimized-size": String(result.bytes.length),
    "x-savings-percent": savingsPercent(result.originalSize, result.bytes.length),
    "x-quality": String(result.quality),
    "x-quality-reason": result.qualityReasons.join(", "),
    "access-control-expose-headers":
      "X-Original-Size, X-Optimized-Size, X-Savings-Percent, X-Quality, X-Quality-Reason",
    "cache-control": "no-store",
  };
}
