import { Elysia } from "elysia";
import { AppError, errorResponse } from "../errors.ts";
import { requestMeta } from "./meta.ts";

/**
 * Behind a TLS-terminating proxy the server itself speaks HTTP, so it insists that the proxy
 * vouches for HTTPS on every request; anything else is refused with 403 HTTPS_REQUIRED.
 */
export function httpsGuard(behindProxy: boolean) {
  return new Elysia({ name: "https-guard" }).onRequest(({ request }) => {
    if (!behindProxy) return;
    if (request.headers.get("x-forwarded-proto")?.trim().toLowerCase() === "https") return;
    return errorResponse(new AppError(403, "HTTPS_REQUIRED", "Use HTTPS: this service does not answer plain HTTP."), {
      "x-request-id": requestMeta(request).id,
    });
  });
}

/** Hides every `/internal/` route from clients outside the allowlist: they get the ordinary 404. */
export function internalGuard(allowed: readonly string[], clientIp: (request: Request) => string) {
  return new Elysia({ name: "internal-guard" }).onRequest(({ request }) => {
    const path = new URL(request.url).pathname;
    if (!path.startsWith("/internal/") && path !== "/internal") return;
    if (allowed.includes(clientIp(request))) return;
    return errorResponse(new AppError(404, "NOT_FOUND", "No such route. See /v1/docs for the API."), {
      "x-request-id": requestMeta(request).id,
    });
  });
}
