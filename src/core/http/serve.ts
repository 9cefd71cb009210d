import { AppError, internalError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { redactPath } from "../redact.ts";
import type { RequestCounter } from "./counter.ts";
import { answerError, attachMeta, type RequestMeta } from "./meta.ts";

/** What every response carries, whatever produced it. */
const securityHeaders: Record<string, string> = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/** Told of every answered request (the metrics); must not throw or block. */
export type ResponseObserver = (request: Request, response: Response, meta: RequestMeta) => void;

/** One observer telling each of `observers` in turn (the metrics, the refused-request counts). */
export function observeAll(...observers: ResponseObserver[]): ResponseObserver {
  return (request, response, meta) => {
    for (const observe of observers) observe(request, response, meta);
  };
}

/**
 * Bun's HTTP parser refuses request headers over 16 KiB itself (a bare 431, before any code of ours
 * runs; the limit is the process-wide `--max-http-header-size` flag). Deno accepts several hundred
 * KB, so the same limit is applied here, with the JSON error, to behave alike on both runtimes.
 */
export const MAX_HEADER_BYTES = 16 * 1024;

/** Bytes of the request line and headers as sent (name, ": ", value, CRLF each). */
function headerBytes(request: Request): number {
  let total = request.method.length + request.url.length + 12;
  request.headers.forEach((value, name) => {
    total += name.length + value.length + 4;
  });
  return total;
}

/**
 * Wraps `app.handle` for a runtime's server: attaches the request id and peer address, refuses
 * what the app must never see (a malformed Host, oversized headers), turns an error escaping the
 * app into the JSON 500, adds the common headers, writes one structured log line per request
 * (never headers or bodies) and tells the observer.
 */
export function createFetchHandler(
  handle: (request: Request) => Promise<Response>,
  logger: Logger,
  options: { hsts: boolean; counter?: RequestCounter; observe?: ResponseObserver; draining?: () => boolean },
): (request: Request, peer: string | undefined) => Promise<Response> {
  return async (received, peer) => {
    const url = URL.parse(received.url);
    const request = withRoutableUrl(received, url);
    const meta = attachMeta(request, peer);
    options.counter?.tick();
    const response = withoutBodyForHead(
      request,
      refusal(request, url) ?? (await handleSafely(handle, request, meta, logger)),
    );
    response.headers.set("x-request-id", meta.id);
    // Deno's Response.json omits the charset Bun's writes: every JSON answer is spelt one way.
    if (response.headers.get("content-type") === "application/json")
      response.headers.set("content-type", "application/json;charset=utf-8");
    // A route may set its own value first (the staff pages send Referrer-Policy: same-origin; see staff/auth.ts).
    for (const [name, value] of Object.entries(securityHeaders))
      if (!response.headers.has(name)) response.headers.set(name, value);
    if (options.hsts) response.headers.set("strict-transport-security", "max-age=31536000");
    // Once a stop began, a kept-alive connection is not used again: closed when idle as the listener
    // closes, it would reset a request the client wrote on it at that moment (unanswered, never run).
    if (options.draining?.() || leftBodyUnread(request, response)) response.headers.set("connection", "close");
    const path = redactPath(url ? url.pathname : request.url.split("?")[0]!.slice(0, 200));
    // The error code lets an operator match a client's report ("INVALID_SIGNATURE at 10:02") to its line.
    const code = meta.errorCode ? { code: meta.errorCode } : {};
    logger.info("request", {
      requestId: meta.id,
      method: request.method,
      path,
      status: response.status,
      ...code,
      ms: Math.round((performance.now() - meta.startedAt) * 10) / 10,
    });
    options.observe?.(request, response, meta);
    return response;
  };
}

/**
 * The answer to a request the app must not see, if it is one. Bun hands over a relative URL
 * when the Host header is missing or not a host name (`a b`, `x?`), Deno a URL built from it
 * (`a@b` reads as user `a`, host `b`); the app reads paths from absolute URLs.
 */
function refusal(request: Request, url: URL | null): Response | undefined {
  if (!url || !validHost(request.headers.get("host"))) {
    return answerError(
      request,
      new AppError(400, "INVALID_HOST", "The Host header is missing or is not a valid host name."),
      { connection: "close" },
    );
  }
  if (headerBytes(request) > MAX_HEADER_BYTES) {
    return answerError(
      request,
      new AppError(431, "HEADERS_TOO_LARGE", `The request headers exceed ${MAX_HEADER_BYTES / 1024} KiB.`),
      { connection: "close" },
    );
  }
  return undefined;
}

/**
 * Whether an error answers a request whose body may not have been read whole (refused before it
 * was read, cut at its time limit or size): the connection is closed after it, since the rest of
 * that body would be read as the next request, and a client trickling it would hold the socket.
 */
function leftBodyUnread(request: Request, response: Response): boolean {
  if (response.status < 400) return false;
  const length = request.headers.get("content-length");
  return request.headers.has("transfer-encoding") || (length !== null && length.trim() !== "0");
}

/**
 * A HEAD answer without the body the app gave it (an error's JSON): Bun drops it, while Deno over
 * HTTP/2 sends the stream's end after the headers and then resets the stream (curl: PROTOCOL_ERROR).
 */
function withoutBodyForHead(request: Request, response: Response): Response {
  if (request.method !== "HEAD" || response.body === null) return response;
  response.body.cancel().catch(() => {});
  return new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** The app's answer; an error escaping the app becomes the JSON 500 (the runtime's own error page shows source code). */
async function handleSafely(
  handle: (request: Request) => Promise<Response>,
  request: Request,
  meta: RequestMeta,
  logger: Logger,
): Promise<Response> {
  try {
    return await handle(request);
  } catch (err) {
    logger.error("request failed outside the app", { requestId: meta.id, error: (err as Error).message });
    return answerError(request, internalError(meta.id));
  }
}

/** RFC 3986's host (a name of unreserved, %-encoded and sub-delimiter characters, or an IP literal) and optional port. */
const HOST_HEADER = /^(?:\[[0-9a-f:.]+\]|[a-z0-9\-._~%!$&'()*+,;=]+)(?::\d{0,5})?$/i;

/** True unless a Host header was sent and is not a host (HTTP/2 sends none: its `:authority` made the URL). */
function validHost(host: string | null): boolean {
  return host === null || HOST_HEADER.test(host);
}

/**
 * The request with a URL the router reads as the guards do. Deno hands over the target as the
 * client sent it (`/internal/x/../..`), which Elysia routes as written while every URL parser, the
 * /internal/ guard's included, resolves it (`/`); Bun resolves it before: the URL is normalised
 * the same way here. And Elysia finds the path by searching for the first "/" from index 11 of the
 * URL (just past "https://" plus a three-character host), so with a one- or two-character Host
 * header (`https://x/health`) it misses the path's slash and answers 404 on every route. Such a URL
 * is rewritten with the host `localhost`; the app routes by path only, and the Host header itself
 * is left as the client sent it.
 */
export function withRoutableUrl(request: Request, parsed = URL.parse(request.url)): Request {
  if (!request.url.includes("://")) return request;
  // A fragment is the client's own (browsers never send one): not part of the path under either runtime.
  if (parsed) parsed.hash = "";
  const url = parsed?.href ?? request.url;
  const pathStart = url.indexOf("/", url.indexOf("://") + 3);
  if (pathStart !== -1 && pathStart < 11)
    return new Request(`${url.slice(0, url.indexOf("://") + 3)}localhost${url.slice(pathStart)}`, request);
  return url === request.url ? request : new Request(url, request);
}
