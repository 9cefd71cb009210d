import { memoryUsage } from "node:process";
import { Elysia } from "elysia";
import type { ConversionGate } from "../convert/gate.ts";
import { version } from "../version.ts";

const startedAt = Date.now();

/** Operator routes under /internal/ (reachable only from IMGPRESS_INTERNAL_ALLOW; never in the docs). */
export function internalRoutes(gate: ConversionGate) {
  return new Elysia({ name: "internal", prefix: "/internal" }).get(
    "/status",
    () => ({ version, uptime_s: Math.round((Date.now() - startedAt) / 1000), conversions: gate.stats(), memory: memoryUsage() }),
    { detail: { hide: true } },
  );
}
