// The in-process reference: the service's own convertImage, called directly,
// in its own Bun process (so its memory is measured alone and its allocator/thread settings come
// from the same environment as the server's). Driven by the bench over Bun's IPC channel.

import { readFileSync } from "node:fs";
import { afterConversion } from "./mallopt.ts"; // first: glibc settings must precede sharp's threads
import { convert, encodeWith, type Format, sharp } from "./pipeline.ts";

const files = new Map<string, Buffer>();
const input = (path: string) => {
  let b = files.get(path);
  if (!b) files.set(path, (b = readFileSync(path)));
  return b;
};

type Msg =
  | { id: number; op: "info" }
  | { id: number; op: "convert"; path: string; format: Format; options?: object }
  // `formats`, when given, is the output format of each path (mixed jobs); else `format` for all.
  | { id: number; op: "pool"; paths: string[]; size: number; format: Format; formats?: Format[] };

async function handle(m: Msg): Promise<unknown> {
  switch (m.op) {
    case "info":
      return { concurrency: sharp.concurrency(), versions: sharp.versions, bun: Bun.version };
    case "convert": {
      const buf = input(m.path);
      const t0 = performance.now();
      const out = m.options ? await encodeWith(buf, m.format, m.options) : await convert(buf, m.format);
      const ms = performance.now() - t0;
      afterConversion();
      return { ms, bytes: out.length };
    }
    case "pool": {
      for (const p of m.paths) input(p);
      let next = 0;
      const t0 = performance.now();
      const worker = async () => {
        while (next < m.paths.length) {
          const k = next++;
          await convert(input(m.paths[k]!), m.formats?.[k] ?? m.format);
          afterConversion();
        }
      };
      await Promise.all(Array.from({ length: m.size }, worker));
      return { ms: performance.now() - t0, count: m.paths.length };
    }
  }
}

process.on("message", (m: Msg) => {
  handle(m).then(
    (result) => process.send!({ id: m.id, result }),
    (err: Error) => process.send!({ id: m.id, error: err.message }),
  );
});
process.send!({ ready: true });
