// The server as src/main.ts starts it, minus its glibc malloc tuning (mallopt: 2 arenas, fixed 1 MiB
// mmap threshold, added in commit 04ce795): the "before" row of RESULTS.md's allocator table, so
// that every run still measures what the tuning buys. Keep the runtime object in step with
// src/main.ts.
import scalarPath from "../../node_modules/@scalar/api-reference/dist/browser/standalone.js" with { type: "file" };
import { runMain } from "../../src/cli/run.ts";

process.exit(
  await runMain(process.argv.slice(2), {
    name: `bun ${Bun.version}`,
    env: process.env,
    loadDocsAsset: async () => Bun.file(scalarPath),
    async listen(options) {
      const server = Bun.serve({
        hostname: options.host,
        port: options.port,
        tls: options.tls,
        idleTimeout: options.idleTimeoutS,
        maxRequestBodySize: options.maxBodyBytes,
        fetch: (request, srv) => options.fetch(request, srv.requestIP(request)?.address),
      });
      return { port: server.port ?? options.port, stop: () => server.stop(false) };
    },
    onShutdownSignal(handler) {
      process.on("SIGTERM", handler);
      process.on("SIGINT", handler);
    },
  }),
);
