// The Bun runtime for the shared command line: with src/main.ts and src/deno.ts the only files
// that touch a runtime's own APIs.
import scalarPath from "../node_modules/@scalar/api-reference/dist/browser/standalone.js" with { type: "file" };
import type { Runtime } from "./server/server.ts";

/** Bun.serve, Bun's signals and the Scalar script embedded by `with { type: "file" }`. */
export const bunRuntime: Runtime = {
  name: `bun ${Bun.version}`,
  env: process.env,
  loadDocsAsset: async () => Bun.file(scalarPath),
  // Bun.serve refuses a larger idleTimeout, and a request's own server.timeout() is cut there too (measured).
  maxSilentS: 255,
  async listen(options) {
    const server = Bun.serve({
      hostname: options.host,
      port: options.port,
      tls: options.tls,
      idleTimeout: options.idleTimeoutS,
      maxRequestBodySize: options.maxBodyBytes,
      // Never Bun's development error page (it shows source code), whatever NODE_ENV says.
      development: false,
      // Refuse a port another process listens on (EADDRINUSE): with a TLS config given as strings,
      // Bun 1.4 would otherwise share it (SO_REUSEPORT) and the kernel split requests between two servers.
      reusePort: false,
      fetch: (request, srv) => options.fetch(request, srv.requestIP(request)?.address),
    });
    return { port: server.port ?? options.port, stop: () => server.stop(false), closeAnswered: () => void server.stop(true) };
  },
  onShutdownSignal(handler) {
    process.on("SIGTERM", () => handler("SIGTERM"));
    process.on("SIGINT", () => handler("SIGINT"));
    process.on("SIGHUP", () => handler("SIGHUP"));
  },
};
