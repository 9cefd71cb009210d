// Deno entry point: with src/main.ts and src/bun.ts (Bun) the only files that touch a runtime's own APIs.
// Run it with `deno task start`; deno.json holds its permission flags (README "Run with Deno" says why).
import { runMain } from "./cli/run.ts";
import { SLOW_BODY } from "./core/http/body.ts";
import type { Listening, Runtime } from "./server/server.ts";

/** The Scalar UI script, read from the installed package (deno.json grants read access to this one file). */
const scalarUrl = new URL("../node_modules/@scalar/api-reference/dist/browser/standalone.js", import.meta.url);

/** Most bytes of a refused body read and discarded (see `refusableBody`): three times the largest body the app accepts. */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;
/** Longest the answer to a refused body waits for the rest of it. */
const DRAIN_WAIT_MS = 30_000;

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
              resolve({ port, stop: () => Promise.race([server.shutdown(), allAnswered]), closeAnswered: () => answered() });
            },
          },
          async (request, info) => {
            // The app reads the body through a stream of its own, so that what it leaves unread
            // (a refused body) is read to its end before the answer goes out (see `refusableBody`).
            const body = request.body ? refusableBody(request.body, options.idleTimeoutS * 1000) : undefined;
            const forwarded = body ? new Request(request, { body: body.stream, duplex: "half" } as RequestInit) : request;
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

/**
 * A request body as the app reads it, and `settled`, which reads and discards what the app left
 * unread (401 for a bad key, 413 for a body over the limit) within bounds, resolving once done.
 * Over TLS Deno.serve also speaks HTTP/2, where a body not read to its end when the answer is
 * complete ends the stream with RST_STREAM right after it, and curl 7.x (Debian 12's curl and PHP
 * cURL) then reports "error 92" instead of the JSON error; Bun speaks HTTP/1.1 only and has no such
 * case. A body cut for arriving too slowly (408) is not waited for, nor one declared over
 * DRAIN_LIMIT_BYTES: its stream is reset as before, as is one still arriving after DRAIN_WAIT_MS.
 */
function refusableBody(source: ReadableStream<Uint8Array>, timeoutMs: number): { stream: ReadableStream<Uint8Array>; settled: (read: boolean, declaredBytes: number) => Promise<void> } {
  const reader = source.getReader();
  let discarded: Promise<void> | undefined;
  const discard = () => (discarded ??= discardRest(reader, Math.min(timeoutMs, DRAIN_WAIT_MS)));
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel(reason) {
        if (reason === SLOW_BODY) reader.cancel().catch(() => {});
        else discard();
      },
    },
    { highWaterMark: 0 },
  );
  return {
    stream,
    settled(read, declaredBytes) {
      if (!read && declaredBytes > DRAIN_LIMIT_BYTES) return reader.cancel().catch(() => {});
      // Read to its end by the app: the discard finds nothing left.
      return read && !discarded ? Promise.resolve() : discard();
    },
  };
}

/** Reads `reader` to its end, discarding, for at most DRAIN_LIMIT_BYTES and `timeoutMs`; then cancels it. */
function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>, timeoutMs: number): Promise<void> {
  const timer = setTimeout(() => reader.cancel().catch(() => {}), timeoutMs);
  return (async () => {
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
