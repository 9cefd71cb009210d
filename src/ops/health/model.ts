import { t } from "elysia";

/** Per-check results of /health/ready: `ok` or what is wrong. */
export const ReadinessChecks = t.Object({
  database: t.String({ description: "A committed one-row write", examples: ["ok"] }),
  storage: t.String({ description: "Free space in the data folder", examples: ["ok"] }),
  libvips: t.String({ description: "A tiny in-memory encode", examples: ["ok"] }),
  draining: t.String({ description: "`ok`, or `shutting down` once a graceful stop began", examples: ["ok"] }),
});

/** 200 of /health. */
export const LiveResponse = t.Object({ status: t.Literal("ok") });

/** 200 of /health/ready. */
export const ReadyResponse = t.Object({ status: t.Literal("ready"), checks: ReadinessChecks });

/** 503 of /health/ready: the usual error body plus the checks. */
export const NotReadyResponse = t.Object(
  { error: t.String(), message: t.String(), code: t.Literal("NOT_READY"), checks: ReadinessChecks },
  { description: "Error: NOT_READY (a check failed: checks names it)" },
);
