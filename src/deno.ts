// Deno entry point: with src/main.ts and src/bun.ts (Bun) the only files that touch a runtime's own APIs.
// Run it with `deno task start`; deno.json holds its permission flags (README "Run with Deno" says why).
import { runMain } from "./cli/run.ts";
import type { Listening, Runtime } from "./server.ts";

/** The Scalar UI script, read from the installed package (deno.json grants read access to this one file). */
const scalarUrl = new URL("../node_modules/@scalar/api-reference/dist/browser/standalone.js", import.meta.url);

/** More than the largest body the app accepts (a 20 MiB image plus its multipart form). */
const DRAIN_LIMIT_BYTES = 32 * 1024 * 1024;

const denoRuntime: Runtime = {
  name: `deno ${Deno.version.deno}`,
  env: Deno.env.toObject(),
  loadDocsAsset: async () => new Blob([await Deno.readFile(scalarUrl)], { type: "text/javascript" }),
  listen(options) {
    // Deno.serve has no idle-timeout or body-size option: the app's body reader enforces its own
    // limits (408 REQUEST_TIMEOUT, 413), and a connection is not cut while a request is in flight.
    return new Promise<Listening>((resolve, reject) => {
      try {
        const server = Deno.serve(
          {
            hostname: options.host,
            port: options.port,
            ...(options.tls ? { cert: options.tls.cert, key: options.tls.key } : {}),
            // The real port (IMGPRESS_PORT=0 picks a free one); also replaces Deno's own "Listening on" line.
            onListen: ({ port }) => resolve({ port, stop: () => server.shutdown() }),
          },
          async (request, info) => {
            const response = await options.fetch(request, (info.remoteAddr as Deno.NetAddr).hostname);
            if (request.body && !request.bodyUsed) drain(request, options.idleTimeoutS * 1000);
            return response;
          },
        );
      } catch (err) {
        reject(err);
      }
    });
  },
  onShutdownSignal(handler) {
    Deno.addSignalListener("SIGTERM", () => handler("SIGTERM"));
    Deno.addSignalListener("SIGINT", () => handler("SIGINT"));
    Deno.addSignalListener("SIGHUP", () => handler("SIGHUP"));
  },
};

/**
 * Reads and discards a request body the app answered without reading (e.g. 401 for a bad key).
 * Over TLS Deno.serve also speaks HTTP/2, where an unread body ends the stream with RST_STREAM
 * (NO_ERROR) right after the answer, and curl 7.x (Debian 12's curl and PHP cURL) then reports
 * "error 92" instead of the JSON error; Bun speaks HTTP/1.1 only and has no such case. Bounded in
 * bytes and time: past either, the stream is reset as before.
 */
function drain(request: Request, timeoutMs: number): void {
  const reader = request.body!.getReader();
  if (Number(request.headers.get("content-length")) > DRAIN_LIMIT_BYTES) {
    reader.cancel().catch(() => {});
    return;
  }
  const timer = setTimeout(() => reader.cancel().catch(() => {}), timeoutMs);
  (async () => {
    let received = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      received += value.byteLength;
      if (received > DRAIN_LIMIT_BYTES) {
        await reader.cancel();
        break;
      }
    }
  })()
    .catch(() => {})
    .finally(() => clearTimeout(timer));
}

Deno.exit(await runMain(Deno.args, denoRuntime));
