import { AppError, errorResponse } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { RequestCounter } from "./counter.ts";
import { attachMeta } from "./meta.ts";

/** What every response carries, whatever produced it. */
const securityHeaders: Record<string, string> = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/**
 * Bun's HTTP parser refuses request headers over 16 KiB itself (a bare 431, before any code of ours
 * runs; the limit is the process-wide `--max-http-header-size` flag). Deno accepts several hundred
 * KB, so the same limit is applied here, with the JSON error, to behave alike on both runtimes.
 */
export const MAX_HEADER_BYTES = 16 * 1024;

/** Bytes of the request line and headers as sent (name, ": ", value, CRLF each). */
function headerBytes(request: Request): number {
  let total = request.method.length + request.url.length + 12;
  request.headers.forEach((value, name) => (total += name.length + value.length + 4));
  return total;
}

/**
 * Wraps `app.handle` for a runtime's server: attaches the request id and peer address, adds the
 * common headers and writes one structured log line per request (never headers or bodies).
 */
export function createFetchHandler(
  handle: (request: Request) => Promise<Response>,
  logger: Logger,
  options: { hsts: boolean; counter?: RequestCounter },
): (request: Request, peer: string | undefined) => Promise<Response> {
  return async (request, peer) => {
    const meta = attachMeta(request, peer);
    options.counter?.tick();
    const response =
      headerBytes(request) > MAX_HEADER_BYTES
        ? errorResponse(new AppError(431, "HEADERS_TOO_LARGE", `The request headers exceed ${MAX_HEADER_BYTES / 1024} KiB.`), { connection: "close" })
        : await handle(request);
    response.headers.set("x-request-id", meta.id);
    // A route may choose a stricter value (the staff pages send Referrer-Policy: same-origin).
    for (const [name, value] of Object.entries(securityHeaders)) if (!response.headers.has(name)) response.headers.set(name, value);
    if (options.hsts) response.headers.set("strict-transport-security", "max-age=31536000");
    const path = new URL(request.url).pathname;
    logger.info("request", {
      requestId: meta.id,
      method: request.method,
      path,
      status: response.status,
      ms: Math.round((performance.now() - meta.startedAt) * 10) / 10,
    });
    return response;
  };
}
