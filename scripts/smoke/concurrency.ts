// Stage "concurrency": several first starts at once on one empty extraction cache.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Service } from "../../test/support/imgpress.ts";
import { type Smoke, startServe } from "./context.ts";
import { assertOneExtraction } from "./folders.ts";
import { assert, fmtMs } from "./report.ts";

/** How many instances start together. */
export const CONCURRENT_STARTS = 8;

/** Starts CONCURRENT_STARTS servers together on an empty IMGPRESS_CACHE_DIR: all healthy, exit 0, one extraction. */
export async function concurrencyStage(s: Smoke, cacheNames: string[]): Promise<void> {
  await s.report.check(
    s.tag,
    `${CONCURRENT_STARTS} concurrent first starts on an empty IMGPRESS_CACHE_DIR`,
    async () => {
      const conc = join(s.tmp, "concurrent");
      const cache = join(conc, "cache");
      mkdirSync(conc, { recursive: true });
      const slow = {
        ...s,
        lim: { ...s.lim, start: s.lim.start * 2, request: s.lim.request * 2, stop: s.lim.stop * 2 },
      };
      const t0 = performance.now();
      const started = await Promise.allSettled(
        Array.from({ length: CONCURRENT_STARTS }, (_, i) =>
          startServe(slow, { IMGPRESS_CACHE_DIR: cache, IMGPRESS_DATA_DIR: join(conc, `data-${i}`) }),
        ),
      );
      const svcs = started.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
      try {
        const refused = started.find((r): r is PromiseRejectedResult => r.status === "rejected");
        if (refused) throw refused.reason;
        const startedIn = performance.now() - t0;
        await Promise.all(
          svcs.map(async (svc: Service, i) => {
            const res = await svc.client.fetch("/health");
            assert(res.status === 200, `instance ${i}: /health HTTP ${res.status}`);
          }),
        );
        const codes = await Promise.all(svcs.map((svc) => svc.stop()));
        assert(
          codes.every((c) => c === 0),
          `exit statuses ${codes.join(",")}`,
        );
        const summary = assertOneExtraction(cache, s.t.arch, cacheNames);
        return `all ${CONCURRENT_STARTS} healthy (all listening after ${fmtMs(startedIn)}), exit 0; cache holds ${summary}`;
      } finally {
        for (const svc of svcs) svc.proc.kill("SIGKILL");
      }
    },
  );
}
