// Reads a `.cpuprofile` that `bun --cpu-prof` wrote and splits the JS thread's samples into the
// parts of a request. Bun's sampler records the JS thread only while it runs (JS, or native code
// called from JS), so samples × interval is CPU time of that thread; libvips' worker threads,
// where the pixels are processed, are not in it.
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** A part of the request: the first rule whose test matches a sample's stack names it. */
interface Part {
  name: string;
  test: (frames: string[]) => boolean;
}

const anyFrame = (re: RegExp) => (frames: string[]) => frames.some((f) => re.test(f));

/**
 * The parts, most specific first. Frames read `function url:line`; Elysia's compiled handlers
 * have no url (`map :14`, `handle :5`).
 */
export const PARTS: Part[] = [
  { name: "libSQL statements (key lookup; signed: replay INSERT)", test: anyFrame(/libsql/) },
  {
    name: "pipeline's JS: header read, sharp calls, guard (also in the in-process reference)",
    test: anyFrame(/src\/convert\/pipeline|sharp\/dist/),
  },
  {
    name: "authentication's JS (headers, hashes, HMACs, secret box)",
    test: anyFrame(/src\/requestauth|src\/keys|src\/crypto/),
  },
  {
    name: "body receipt, multipart split, form checks",
    test: anyFrame(/src\/http\/body|src\/convert\/multipart|src\/convert\/form/),
  },
  { name: "request log line", test: anyFrame(/src\/log\.ts/) },
  { name: "metrics and usage counting", test: anyFrame(/prom-client|src\/metrics|src\/usage/) },
  { name: "Elysia: routing, hooks, response mapping", test: anyFrame(/elysia|^(map|handle) :\d+$/) },
  { name: "the rest of imgpress (request meta, gate, response headers)", test: anyFrame(/src\//) },
  // Bun's HTTP server, TLS and GC run natively: sampled only when they run inside a call from JS.
  { name: "native work sampled on the JS thread (Bun's HTTP and TLS, GC)", test: () => true },
];

/** CPU milliseconds of the JS thread per request, by part, between the first and the last sample under `marker`. */
export function cpuByPart(
  file: string,
  intervalUs: number,
  requests: number,
  marker: RegExp,
): { parts: Record<string, number>; total: number } {
  const profile = JSON.parse(readFileSync(file, "utf8")) as { nodes: ProfileNode[]; samples: number[] };
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stacks = new Map<number, string[]>();
  const stack = (id: number) => {
    let frames = stacks.get(id);
    if (!frames) {
      frames = [];
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const { functionName, url, lineNumber } = nodes.get(at)!.callFrame;
        if (functionName !== "(root)")
          frames.push(
            `${functionName || "(anonymous)"} ${url.replace(/^.*?\/(src|node_modules)\//, "$1/")}:${lineNumber}`,
          );
      }
      stacks.set(id, frames);
    }
    return frames;
  };
  // Start-up and shut-down are not requests: keep the samples between the first and last request.
  const inRequest = profile.samples
    .map((s, i) => (stack(s).some((f) => marker.test(f)) ? i : -1))
    .filter((i) => i >= 0);
  const window = profile.samples.slice(inRequest[0] ?? 0, (inRequest.at(-1) ?? -1) + 1);
  const counts: Record<string, number> = Object.fromEntries(PARTS.map((p) => [p.name, 0]));
  for (const s of window) counts[PARTS.find((p) => p.test(stack(s)))!.name]!++;
  const ms = (n: number) => (n * intervalUs) / 1000 / requests;
  return { parts: Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, ms(n)])), total: ms(window.length) };
}
