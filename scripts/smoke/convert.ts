// Stage "convert": a real photo to WebP (bearer) and AVIF (signed), and a replayed signature refused.
import { Client, type Keys, multipart, type Service } from "../../test/support/imgpress.ts";
import type { Smoke } from "./context.ts";
import { checkImage } from "./photo.ts";
import { assert } from "./report.ts";

/** Converts the photo twice (two conversions on the key) and replays the signed request. */
export async function convertStage(s: Smoke, svc: Service, keys: Keys): Promise<void> {
  const { photo } = s;
  const client = new Client(svc.url, svc.ca, s.lim.convert);
  const webp = multipart({ format: "webp" }, photo.bytes, "photo.jpg");
  await s.report.check(s.tag, "convert JPEG → WebP (bearer key)", async () =>
    checkImage(await client.convert(keys, "bearer", webp), "webp", photo.width, photo.height, photo.bytes.length),
  );
  const avifWidth = Math.min(640, photo.width);
  const avifHeight = Math.round((photo.height * avifWidth) / photo.width);
  const avif = multipart({ format: "avif", max_width: String(avifWidth) }, photo.bytes, "photo.jpg");
  const ts = Math.floor(Date.now() / 1000);
  await s.report.check(s.tag, `convert JPEG → AVIF, max_width ${avifWidth} (signed request)`, async () =>
    checkImage(await client.convert(keys, "signed", avif, ts), "avif", avifWidth, avifHeight, photo.bytes.length),
  );
  await s.report.check(s.tag, "signed request replayed → 401 REPLAYED_REQUEST", async () => {
    const res = await client.convert(keys, "signed", avif, ts);
    const body = (await res.json()) as { code?: string };
    assert(res.status === 401 && body.code === "REPLAYED_REQUEST", `HTTP ${res.status} ${JSON.stringify(body)}`);
    return "401 REPLAYED_REQUEST";
  });
}
