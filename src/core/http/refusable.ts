// What the runtime edges (src/bun.ts, src/deno.ts) do with a body the app refused part-way.
import { SLOW_BODY } from "./body.ts";

/** Most bytes of a refused body read and discarded: three times the largest body the app accepts. */
export const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;
/** Longest the answer to a refused body waits for the rest of it. */
export const DRAIN_WAIT_MS = 30_000;

/** A request body as the app reads it, with what the edge does with the part it left unread. */
export interface RefusableBody {
  /** The stream handed to the app in place of the request's own. */
  stream: ReadableStream<Uint8Array>;
  /** Reads and discards what the app left unread (within bounds); resolves once done. */
  settled: (read: boolean, declaredBytes: number) => Promise<void>;
  /** The discard of a body the app started reading and then cut (413 part-way), if it did. */
  cutShort: () => Promise<void> | undefined;
}

/**
 * Wraps `source` so that what the app leaves unread (401 for a bad key, 413 for a body over the
 * limit) can be read and discarded before the connection goes on. A client still sending when the
 * server closes gets "broken pipe" or a stream reset instead of the JSON error: curl reports error
 * 55 over HTTP/1.1 and error 92 over HTTP/2, where Deno resets a stream whose body is not read to
 * its end right after the answer. A body cut for arriving too slowly (408) is not waited for, nor
 * one declared over DRAIN_LIMIT_BYTES, nor one still arriving after `timeoutMs` (at most DRAIN_WAIT_MS).
 */
export function refusableBody(source: ReadableStream<Uint8Array>, timeoutMs: number): RefusableBody {
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
    cutShort: () => discarded,
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
