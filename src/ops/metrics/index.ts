import { Elysia } from "elysia";
import { timingSafeEqual } from "../../core/crypto.ts";
import { AppError } from "../../core/errors.ts";
import { requestMeta } from "../../core/http/meta.ts";
import { INTERNAL_PREFIX } from "../../core/http/paths.ts";
import type { Metrics } from "./service.ts";

/** The exposition format version Prometheus asks for by default. */
const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/**
 * GET /internal/metrics in the Prometheus text format. The /internal/ allowlist guards it; with
 * `token` set a scraper must also send `Authorization: Bearer <token>`, so it needs no staff session.
 */
export function metricsRoutes(metrics: Metrics, token: string | undefined) {
  return new Elysia({ name: "metrics", prefix: INTERNAL_PREFIX }).get(
    "/metrics",
    async ({ request }) => {
      if (token !== undefined && !bearerMatches(request.headers.get("authorization"), token)) {
        throw new AppError(401, "INVALID_METRICS_TOKEN", "Send the metrics token as Authorization: Bearer <token>.", {
          "www-authenticate": "Bearer",
        });
      }
      return new Response(await metrics.render(), {
        headers: { "content-type": CONTENT_TYPE, "cache-control": "no-store" },
      });
    },
    { detail: { hide: true } },
  );
}

// Constant time over the presented value, so the answer time says nothing about how much of it was right.
function bearerMatches(header: string | null, token: string): boolean {
  const presented = /^Bearer\s+(.+)$/i.exec(header?.trim() ?? "")?.[1] ?? "";
  return timingSafeEqual(presented, token);
}

/**
 * Route recorder for the HTTP metrics: remembers the matched route template on the request, so
 * the runtime wrapper can label the answer without ever using the raw path.
 */
export function routeRecorder() {
  return new Elysia({ name: "route-recorder" }).onTransform({ as: "global" }, ({ request, route }) => {
    requestMeta(request).route = route;
  });
}
