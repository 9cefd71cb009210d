// The Bun runtime for the shared command line: with src/main.ts and src/deno.ts the only files
// that touch a runtime's own APIs.
import scalarPath from "../node_modules/@scalar/api-reference/dist/browser/standalone.js" with { type: "file" };
import { refusableBody } from "./core/http/refusable.ts";
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
      fetch: async (request, srv) => {
        const ip = srv.requestIP(request)?.address;
        // A streamed body (no Content-Length) refused part-way (413) is read to its end, within
        // bounds, before the answer goes out: Bun closes a connection whose body is unread, and a
        // client still sending gets "broken pipe" instead of the JSON. A declared body is refused
        // before it is read or read whole, so it goes to the app as it came (no extra stream on the
        // conversion path); one refused before it is read is not waited for: curl and PHP wait for
        // the answer to "Expect: 100-continue".
        if (!request.body || request.headers.has("content-length")) return options.fetch(request, ip);
        const body = refusableBody(request.body, options.idleTimeoutS * 1000);
        const response = await options.fetch(
          new Request(request, { body: body.stream, duplex: "half" } as RequestInit),
          ip,
        );
        await body.cutShort();
        return response;
      },
    });
    return {
      port: server.port ?? options.port,
      stop: () => server.stop(false),
      closeAnswered: () => void server.stop(true),
    };
  },
  onShutdownSignal(handler) {
    process.on("SIGTERM", () => handler("SIGTERM"));
    process.on("SIGINT", () => handler("SIGINT"));
    process.on("SIGHUP", () => handler("SIGHUP"));
  },
};
