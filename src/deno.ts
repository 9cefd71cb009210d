// Deno entry point: with src/main.ts and src/bun.ts (Bun) the only files that touch a runtime's own APIs.
// Run it with `deno task start`; deno.json holds its permission flags (README "Run with Deno" says why).
import { runMain } from "./cli/run.ts";
import { refusableBody } from "./core/http/refusable.ts";
import type { Listening, Runtime } from "./server/server.ts";

/** The Scalar UI script, read from the installed package (deno.json grants read access to this one file). */
const scalarUrl = new URL("../node_modules/@scalar/api-reference/dist/browser/standalone.js", import.meta.url);

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
            // shutdown() also waits on connections with nothing in flight (one refused before its
            // body came, a TCP connection that never starts TLS): once every request is answered the
            // drain stops waiting, and the process's exit closes them.
            onListen: ({ port }) => {
              let answered = () => {};
              const allAnswered = new Promise<void>((done) => (answered = done));
              resolve({
                port,
                stop: () => Promise.race([server.shutdown(), allAnswered]),
                closeAnswered: () => answered(),
              });
            },
          },
          async (request, info) => {
            // The app reads the body through a stream of its own, so that what it leaves unread
            // (a refused body) is read to its end before the answer goes out (see `refusableBody`).
            const body = request.body ? refusableBody(request.body, options.idleTimeoutS * 1000) : undefined;
            const forwarded = body
              ? new Request(request, { body: body.stream, duplex: "half" } as RequestInit)
              : request;
            const response = await options.fetch(forwarded, (info.remoteAddr as Deno.NetAddr).hostname);
            const rest = body?.settled(forwarded.bodyUsed, Number(request.headers.get("content-length")));
            // Only HTTP/2 needs the rest read before the answer (Deno gives its requests no Host
            // header: `:authority` made the URL); an HTTP/1.1 client may wait for the answer before
            // sending its body (a 401 for a bad key), so there the rest is read after it.
            if (request.headers.get("host") === null) await rest;
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

Deno.exit(await runMain(Deno.args, denoRuntime));
