// The thumbnail workload's clients: bearer or signed uploads over a kept-alive connection or a new
// TLS connection per request (PHP cURL without handle reuse), and the in-process pool they are
// compared with.
import { authHeaders, type Keys, multipart } from "../../test/support/imgpress.ts";
import type { Reference } from "./reference.ts";
import type { Thumb } from "./thumbs.ts";

/** How a client talks to the service. */
export interface ClientKind {
  auth: "bearer" | "signed";
  /** false: a new TCP + TLS connection for every request. */
  keepAlive: boolean;
}

/** The four client kinds of the workload. */
export const CLIENT_KINDS: ClientKind[] = [
  { auth: "bearer", keepAlive: true },
  { auth: "signed", keepAlive: true },
  { auth: "bearer", keepAlive: false },
  { auth: "signed", keepAlive: false },
];

/** `keep-alive, signed`. */
export const kindLabel = (k: ClientKind) => `${k.keepAlive ? "keep-alive" : "new connection"}, ${k.auth}`;

/** A server the workload talks to. */
export interface Target {
  base: string;
  ca: string;
  keys: Keys;
}

/** A prepared upload: the exact bytes and headers (built and signed before any clock starts). */
export interface Upload {
  body: Uint8Array;
  headers: Record<string, string>;
}

/** The upload of `thumb` to its format, lossy, authenticated as `kind` says. */
export function prepare(target: Target, kind: ClientKind, thumb: Thumb, bytes: Uint8Array): Upload {
  const form = multipart({ format: thumb.format, quality: "lossy" }, bytes, thumb.path.split("/").at(-1)!);
  return {
    body: form.body,
    headers: { "content-type": form.contentType, ...authHeaders(target.keys, kind.auth, form.body) },
  };
}

/** One request, request start → last byte of the reply; throws unless 200 (or `expect`). */
export async function post(
  target: Target,
  keepAlive: boolean,
  path: string,
  init: { method?: string; body?: Uint8Array; headers?: Record<string, string> } = {},
  expect = 200,
): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${target.base}${path}`, {
    ...init,
    keepalive: keepAlive,
    tls: { ca: target.ca },
  } as RequestInit);
  const buf = await res.arrayBuffer();
  const ms = performance.now() - t0;
  if (res.status !== expect)
    throw new Error(`${path} answered ${res.status}: ${new TextDecoder().decode(buf).slice(0, 300)}`);
  return ms;
}

/** Images per second of `n` concurrent client loops draining the prepared `uploads`. */
export async function saturate(target: Target, keepAlive: boolean, uploads: Upload[], n: number): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < uploads.length)
        await post(target, keepAlive, "/v1/plugin/convert", { method: "POST", ...uploads[next++]! });
    }),
  );
  return (uploads.length * 1000) / (performance.now() - t0);
}

/** Images per second of the in-process pool of `size` on the same jobs (each to its own format). */
export async function poolRate(ref: Reference, jobs: Thumb[], size: number): Promise<number> {
  const r = await ref.call<{ ms: number; count: number }>({
    op: "pool",
    paths: jobs.map((j) => j.path),
    formats: jobs.map((j) => j.format),
    size,
    format: "webp",
  });
  return (r.count * 1000) / r.ms;
}
