import { Elysia } from "elysia";
import { AppError, notFound } from "../errors.ts";
import type { IpAllowlist } from "../ipallow.ts";
import type { Logger } from "../log.ts";
import { clientOf } from "./client.ts";
import { answerError, fromTrustedProxy, requestMeta } from "./meta.ts";
import { INTERNAL_PREFIX } from "./paths.ts";

/**
 * Behind a TLS-terminating proxy (`proxies` given; none outside proxy mode) the server itself
 * speaks HTTP, so it insists that one of the operator's proxies sent the request and vouches for
 * HTTPS; anything else is refused with 403 HTTPS_REQUIRED. A client that reaches the port directly
 * could write any X-Forwarded-For (an allowlisted address for /internal/) and X-Forwarded-Proto.
 * A trusted proxy that sends no X-Forwarded-Proto at all is a proxy set-up fault, not a client on
 * HTTP: the answer and a log line (at most one a minute, with the count since) name the header.
 */
export function httpsGuard(proxies: IpAllowlist | undefined, logger?: Pick<Logger, "warn">) {
  const missing = throttled(MISSING_PROTO_LOG_EVERY_MS, (count) => logger?.warn(MISSING_PROTO_LOG, { refused: count }));
  return new Elysia({ name: "https-guard" }).onRequest(({ request }) => {
    if (!proxies) return;
    const trusted = fromTrustedProxy(request, proxies);
    const proto = request.headers.get("x-forwarded-proto");
    if (trusted && proto?.trim().toLowerCase() === "https") return;
    if (trusted && proto === null) {
      missing();
      return answerError(request, new AppError(403, "HTTPS_REQUIRED", MISSING_PROTO_MESSAGE));
    }
    return answerError(
      request,
      new AppError(403, "HTTPS_REQUIRED", "Use HTTPS: this service does not answer plain HTTP."),
    );
  });
}

/** What a client behind a proxy that sends no X-Forwarded-Proto is told. */
export const MISSING_PROTO_MESSAGE =
  "The reverse proxy in front of this service sent no X-Forwarded-Proto header, so the service cannot tell whether this request arrived over HTTPS. " +
  "The proxy must set X-Forwarded-Proto: https (see docs/operations.md, 'Behind a reverse proxy').";
const MISSING_PROTO_LOG =
  "refused with 403 HTTPS_REQUIRED: the proxy sent no X-Forwarded-Proto header; set X-Forwarded-Proto in the proxy's configuration (docs/operations.md, 'Behind a reverse proxy')";
const MISSING_PROTO_LOG_EVERY_MS = 60_000;

// Calls `say` at the first event and then at most once per `everyMs`, with the number of events since
// the last call: a misconfigured proxy refuses every request, and one line a minute says so as well.
function throttled(everyMs: number, say: (count: number) => void): () => void {
  let count = 0;
  let lastAt = -Infinity;
  return () => {
    count++;
    const now = performance.now();
    if (now - lastAt < everyMs) return;
    lastAt = now;
    say(count);
    count = 0;
  };
}

/**
 * Hides every `/internal/` route from clients outside the allowlist: they get exactly the answer of
 * an unknown route, whatever the case, %-encoding, dot segments or doubled slashes of the path.
 */
export function internalGuard(allowlist: IpAllowlist) {
  return new Elysia({ name: "internal-guard" }).onRequest(({ request }) => {
    if (!reachesInternal(request)) return;
    if (allowlist.has(clientOf(request))) return;
    return answerError(request, notFound());
  });
}

/** isInternalPath of the request's URL, worked out once per request: the allowlist guard and the staff headers both ask. */
export function reachesInternal(request: Request): boolean {
  const meta = requestMeta(request);
  meta.internal ??= isInternalPath(request.url);
  return meta.internal;
}

// The prefix's first segment. Paths are matched on its start, not equality, so that any spelling with
// something after it is guarded rather than trusted to miss the routes.
const INTERNAL_SEGMENT = INTERNAL_PREFIX.slice(1).toLowerCase();

/**
 * True when a URL could reach an /internal/ route under any reading of its path: as sent or decoded
 * (up to three times), case-folded, backslashes as slashes, with empty and dot segments resolved or
 * left as they are. Both, because the router reads `%2f..` as part of one segment: resolved alone,
 * `/internal/x%2f..%2f..` would look like `/` to this guard and still reach `/internal/*`.
 */
export function isInternalPath(url: string): boolean {
  // Unreadable: treated as internal, so the allowlist decides (createFetchHandler refuses such URLs first).
  const parsed = URL.parse(url);
  if (!parsed) return true;
  const readings = [parsed.pathname];
  for (let i = 0; i < 3; i++) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(readings.at(-1)!);
    } catch {
      break;
    }
    if (decoded === readings.at(-1)) break;
    readings.push(decoded);
  }
  return readings.some((path) => {
    const segments = path
      .toLowerCase()
      .replaceAll("\\", "/")
      .split("/")
      .filter((segment) => segment !== "" && segment !== ".");
    const resolved: string[] = [];
    for (const segment of segments) {
      if (segment === "..") resolved.pop();
      else resolved.push(segment);
    }
    return [segments[0], resolved[0]].some((first) => first?.trim().startsWith(INTERNAL_SEGMENT) ?? false);
  });
}
