/**
 * Helpers for the conversion tests: multipart bodies serialised by the runtime itself, requests to
 * POST /v1/plugin/convert through `app.handle` that keep the binary body, and decoding of outputs.
 */
import { expect } from "bun:test";
import sharp from "sharp";
import { attachMeta } from "../../src/core/http/meta.ts";
import type { Harness } from "./harness.ts";
import { type SignInput, signedHeaders } from "./sign.ts";

/** The conversion route. */
export const CONVERT_PATH = "/v1/plugin/convert";
/** The server's image limit (20 MiB). */
export const MAX_IMAGE = 20 * 1024 * 1024;

/** A file part: bytes plus the client-side name and type (neither of which the server may trust). */
export interface FilePart {
  data: Uint8Array;
  filename?: string;
  type?: string;
}
/** A multipart field: text or a file part. */
export type FieldValue = string | FilePart;

/** A multipart body exactly as the runtime's fetch would send it. */
export interface Body {
  bytes: Uint8Array;
  contentType: string;
}

/**
 * Serialises fields with the runtime's own `new Response(formData)`; a field given as an array is
 * appended once per value (duplicated fields).
 */
export async function formBody(fields: Record<string, FieldValue | readonly FieldValue[]>): Promise<Body> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) {
    for (const v of (Array.isArray(value) ? value : [value]) as FieldValue[]) {
      if (typeof v === "string") form.append(name, v);
      else
        form.append(
          name,
          new Blob([v.data as Uint8Array<ArrayBuffer>], { type: v.type ?? "application/octet-stream" }),
          v.filename ?? "upload.bin",
        );
    }
  }
  const res = new Response(form);
  // Read the type first: Bun derives it from the body and reports null once the body is consumed.
  const contentType = res.headers.get("content-type");
  if (!contentType?.startsWith("multipart/form-data"))
    throw new Error(`unexpected FormData content type: ${contentType}`);
  return { bytes: new Uint8Array(await res.arrayBuffer()), contentType };
}

/** The usual conversion form: `image` plus optional text fields. */
export function convertForm(
  image: Uint8Array,
  fields: Record<string, string> = {},
  filename = "photo.jpg",
  type = "image/jpeg",
): Promise<Body> {
  return formBody({ image: { data: image, filename, type }, ...fields });
}

/** A response with its body kept as bytes (images) and parsed as JSON when it is JSON. */
export interface RawResponse {
  status: number;
  headers: Headers;
  bytes: Uint8Array;
  body: any;
}

/** Reads a response whole: status, headers, body bytes and the JSON body when there is one. */
export async function readResponse(res: Response): Promise<RawResponse> {
  const bytes = new Uint8Array(await res.arrayBuffer());
  let body: unknown = null;
  if ((res.headers.get("content-type") ?? "").includes("json")) body = JSON.parse(new TextDecoder().decode(bytes));
  return { status: res.status, headers: res.headers, bytes, body };
}

/** POST to the conversion route through `app.handle` (no socket). */
export async function postConvert(
  h: Harness,
  options: {
    body?: BodyInit | Uint8Array | null;
    contentType?: string;
    headers?: Record<string, string>;
    path?: string;
    method?: string;
    ip?: string;
  },
): Promise<RawResponse> {
  const headers = new Headers(options.headers);
  if (options.contentType && !headers.has("content-type")) headers.set("content-type", options.contentType);
  // As every HTTP client sends it with a body of known size (a body without one reserves the most an upload may be).
  if (options.body instanceof Uint8Array && !headers.has("content-length"))
    headers.set("content-length", String(options.body.length));
  const req = new Request(`http://localhost${options.path ?? CONVERT_PATH}`, {
    method: options.method ?? "POST",
    headers,
    body: (options.body ?? null) as BodyInit | null,
    // @ts-expect-error: needed by the fetch spec for stream bodies; Bun accepts it.
    duplex: "half",
  });
  // The client address the app sees, as the runtime's edge attaches it (otherwise "unknown").
  if (options.ip !== undefined) attachMeta(req, options.ip);
  return readResponse(await h.app.handle(req));
}

/** Credentials of one issued key. */
export interface Keys {
  api_key: string;
  secret_key: string;
}

/** POST a multipart body with `Authorization: Bearer`. */
export function postBearer(
  h: Harness,
  keys: Keys | string,
  body: Body,
  extra: Record<string, string> = {},
): Promise<RawResponse> {
  const apiKey = typeof keys === "string" ? keys : keys.api_key;
  return postConvert(h, {
    body: body.bytes,
    contentType: body.contentType,
    headers: { authorization: `Bearer ${apiKey}`, ...extra },
  });
}

/** POST a multipart body signed over its raw bytes at the harness clock (overridable), from client address `ip` when given. */
export function postSigned(
  h: Harness,
  keys: Keys,
  body: Body,
  sign: Partial<SignInput> = {},
  ip?: string,
): Promise<RawResponse> {
  const headers = signedHeaders({
    apiKey: keys.api_key,
    secretKey: keys.secret_key,
    timestamp: Math.floor(h.clock.now() / 1000),
    body: body.bytes,
    ...sign,
  });
  return postConvert(h, { body: body.bytes, contentType: body.contentType, headers, ip });
}

/** "webp" or "avif" from the decoded container (sharp reports AVIF as heif + av1). */
export async function outputFormat(bytes: Uint8Array): Promise<string> {
  const m = await sharp(bytes).metadata();
  if (m.format === "heif") return m.compression === "av1" ? "avif" : `heif/${m.compression}`;
  return m.format ?? "unknown";
}

/** 8-bit sRGB RGBA pixels; `orient` applies EXIF orientation first (for inputs). */
export async function rgba(
  bytes: Uint8Array,
  orient = false,
): Promise<{ data: Buffer; width: number; height: number }> {
  let s = sharp(bytes);
  if (orient) s = s.autoOrient();
  const { data, info } = await s
    .toColourspace("srgb")
    .ensureAlpha()
    .raw({ depth: "uchar" })
    .toBuffer({ resolveWithObject: true });
  expect(info.channels).toBe(4);
  return { data, width: info.width, height: info.height };
}

/** Mean absolute difference per channel value of two equal-size RGBA buffers. */
export function meanAbsDiff(a: Uint8Array, b: Uint8Array): number {
  expect(a.length).toBe(b.length);
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i]! - b[i]!);
  return sum / a.length;
}

/** Index and values of the first differing byte, or null: a readable failure for "pixels are equal". */
export function firstDifference(a: Uint8Array, b: Uint8Array): { index: number; a: number; b: number } | null {
  if (a.length !== b.length) return { index: -1, a: a.length, b: b.length };
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return { index: i, a: a[i]!, b: b[i]! };
  return null;
}

/** Asserts a decoded output's container, size and alpha. */
export async function expectImage(
  bytes: Uint8Array,
  want: { format: "webp" | "avif"; width: number; height: number; alpha?: boolean },
): Promise<void> {
  const m = await sharp(bytes).metadata();
  const got = {
    format: await outputFormat(bytes),
    width: m.width,
    height: m.height,
    ...(want.alpha === undefined ? {} : { alpha: m.hasAlpha }),
  };
  expect(got).toEqual(want);
}

/** Runs async jobs at most `n` at a time (keeps CPU-heavy tables from swamping a 2-core box). */
export async function mapLimit<T, R>(
  items: readonly T[],
  n: number,
  fn: (item: T, i: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}
