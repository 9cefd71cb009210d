// Deno entry point: with src/main.ts (Bun) the only files that touch a runtime's own APIs.
// Run it with `deno task start` (deno.json holds the permission set and says why each is needed).
import { runMain, type Listening, type Runtime } from "./cli/run.ts";

/** The Scalar UI script, read from the installed package (`--allow-read` covers node_modules). */
const scalarUrl = new URL("../node_modules/@scalar/api-reference/dist/browser/standalone.js", import.meta.url);

const denoRuntime: Runtime = {
  name: `deno ${Deno.version.deno}`,
  env: Deno.env.toObject(),
  loadDocsAsset: async () => new Blob([await Deno.readFile(scalarUrl)], { type: "text/javascript" }),
  listen(options) {
    // Deno.serve has no idle-timeout or body-size option: the app's body reader enforces both limits
    // itself (408 REQUEST_TIMEOUT, 413), and a connection is not cut while a request is in flight.
    return new Promise<Listening>((resolve, reject) => {
      try {
        const server = Deno.serve(
          {
            hostname: options.host,
            port: options.port,
            ...(options.tls ? { cert: options.tls.cert, key: options.tls.key } : {}),
            // The real port (IMGPRESS_PORT=0 picks a free one); also silences Deno's own "Listening on" line.
            onListen: ({ port }) => resolve({ port, stop: () => server.shutdown() }),
          },
          (request, info) => options.fetch(request, (info.remoteAddr as Deno.NetAddr).hostname),
        );
      } catch (err) {
        reject(err);
      }
    });
  },
  onShutdownSignal(handler) {
    Deno.addSignalListener("SIGTERM", handler);
    Deno.addSignalListener("SIGINT", handler);
  },
};

Deno.exit(await runMain(Deno.args, denoRuntime));
