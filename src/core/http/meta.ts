import { Buffer } from "node:buffer";
import { randomBytes } from "../crypto.ts";
import { type AppError, errorResponse } from "../errors.ts";

/** Per-request facts the runtime knows and the app needs: an id for logs, the peer address, the start time. */
export interface RequestMeta {
  id: string;
  /** Address of the TCP peer, as the runtime's server reports it. */
  peer: string | undefined;
  startedAt: number;
  /** The matched route template, once routing has happened (for metrics labels). */
  route?: string;
  /** The `code` of the error answer (set by answerError, for metrics). */
  errorCode?: string;
  /** The id of the key the request named, once found (active or revoked): refusals are counted against it. */
  keyId?: string;
  /** Whether the path may reach an /internal/ route (see reachesInternal); worked out once. */
  internal?: boolean;
  /** The client's address (see clientAddress), worked out once by the app's `clientAddressing`. */
  client?: string;
}

const metas = new WeakMap<Request, RequestMeta>();

/** Attaches runtime facts to a request before it enters the app (called by the runtime entry). */
export function attachMeta(request: Request, peer: string | undefined): RequestMeta {
  const meta = { id: `req_${Buffer.from(randomBytes(6)).toString("hex")}`, peer, startedAt: performance.now() };
  metas.set(request, meta);
  return meta;
}

/** The request's facts; requests built by hand (e.g. in tests) get an id and no peer. */
export function requestMeta(request: Request): RequestMeta {
  return metas.get(request) ?? attachMeta(request, undefined);
}

/**
 * The JSON error answer to `request`, with its id; records the code for the metrics. Every error
 * answer goes through here (the error mapper, the guards, the refusals before the app).
 */
export function answerError(request: Request, error: AppError, headers: Record<string, string> = {}): Response {
  return errorResponse(error, { ...headers, "x-request-id": noteErrorCode(request, error.code).id });
}

/** Records the `code` of a refusal answered some other way (a form page showing the reason), for the metrics. */
export function noteErrorCode(request: Request, code: string): RequestMeta {
  const meta = requestMeta(request);
  meta.errorCode = code;
  return meta;
}

/** Records the key a request named (see RequestMeta.keyId). */
export function noteKey(request: Request, keyId: string): void {
  requestMeta(request).keyId = keyId;
}

/**
 * The client's address: the TCP peer, or behind a proxy the right-most X-Forwarded-For entry,
 * the one the operator's own proxy appended (entries further left are client-controlled, even
 * when they name another trusted proxy: a client inside a trusted range could write them).
 * Behind a proxy without that header the client is "unknown", never the proxy's own (often
 * loopback, hence allowlisted) address.
 */
export function clientAddress(request: Request, behindProxy: boolean): string {
  if (behindProxy) {
    const forwarded = request.headers.get("x-forwarded-for")?.split(",").at(-1)?.trim();
    return forwarded ? normalizeIp(forwarded) : "unknown";
  }
  return normalizeIp(requestMeta(request).peer ?? "unknown");
}

/**
 * Whether the TCP peer is one of the operator's proxies, whose X-Forwarded-* headers may be
 * believed. A request with no peer (built in process, e.g. by a test) has no network to come from.
 */
export function fromTrustedProxy(request: Request, proxies: { has(ip: string): boolean }): boolean {
  const peer = requestMeta(request).peer;
  return peer === undefined || proxies.has(normalizeIp(peer));
}

// IPv4 peers on a dual-stack socket appear as ::ffff:a.b.c.d.
function normalizeIp(ip: string): string {
  return ip.startsWith("::ffff:") && ip.includes(".") ? ip.slice(7) : ip;
}
