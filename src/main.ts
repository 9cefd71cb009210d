// Bun entry point: the only file (besides the build script) that touches Bun's own APIs.
import scalarPath from "../node_modules/@scalar/api-reference/dist/browser/standalone.js" with { type: "file" };
import { runMain, type Runtime } from "./cli/run.ts";

const bunRuntime: Runtime = {
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
};

process.exit(await runMain(process.argv.slice(2), bunRuntime));
