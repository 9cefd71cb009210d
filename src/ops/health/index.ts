import { Elysia } from "elysia";
import { AppError, errorAnswer, statusTitles } from "../../core/errors.ts";
import { noteErrorCode } from "../../core/http/meta.ts";
import { LiveResponse, NotReadyResponse, ReadyResponse } from "./model.ts";
import type { Readiness } from "./service.ts";

/** Liveness (`/health`, cheap) and readiness (`/health/ready`, for load balancers and container checks). */
export function healthRoutes(database: { ping(): Promise<void> }, readiness: Readiness) {
  return new Elysia({ name: "health" })
    .get(
      "/health",
      async () => {
        await database.ping().catch(() => {
          throw new AppError(503, "UNHEALTHY", "The database is not reachable.");
        });
        return { status: "ok" as const };
      },
      {
        response: { 200: LiveResponse, 503: errorAnswer("UNHEALTHY (the database is not reachable)") },
        detail: { summary: "Liveness and database check", tags: ["operations"] },
      },
    )
    .get(
      "/health/ready",
      async ({ set, request }) => {
        const { ready, checks } = await readiness.check();
        set.headers["cache-control"] = "no-store";
        if (ready) return { status: "ready" as const, checks };
        const failing = Object.entries(checks)
          .filter(([, v]) => v !== "ok")
          .map(([name, v]) => `${name}: ${v}`);
        // The usual error body plus the checks, so answered here; its code still reaches the log line and the metrics.
        noteErrorCode(request, "NOT_READY");
        set.status = 503;
        return {
          error: statusTitles[503]!,
          message: `Not ready (${failing.join("; ")}).`,
          code: "NOT_READY" as const,
          checks,
        };
      },
      {
        response: { 200: ReadyResponse, 503: NotReadyResponse },
        detail: {
          summary: "Readiness: database writable, disk not full, libvips working, not draining",
          tags: ["operations"],
        },
      },
    );
}
