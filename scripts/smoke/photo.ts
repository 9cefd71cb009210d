// The smoke test's photo (a real JPEG of about 1.5 MP) and the check of a converted image.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import sharp, { type Metadata } from "sharp";
import { assert } from "./report.ts";

/** The photo every conversion check sends. */
export interface Photo {
  bytes: Uint8Array;
  source: string;
  width: number;
  height: number;
}

/** Pixel count the arm64 run under qemu can convert in a few seconds. */
const TARGET_PIXELS = 1.5e6;

function listJpegs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listJpegs(path));
    else if (entry.isFile() && /\.jpe?g$/i.test(entry.name)) out.push(path);
  }
  return out.sort();
}

/** Upright dimensions (EXIF orientations 5–8 swap width and height). */
function upright(meta: Metadata): { width: number; height: number } {
  const swap = (meta.orientation ?? 1) >= 5;
  return { width: swap ? meta.height! : meta.width!, height: swap ? meta.width! : meta.height! };
}

/**
 * A real photo of about 1–2 megapixels: $SMOKE_PHOTO, else the JPEG in /usr/share/backgrounds
 * (Debian's mate-backgrounds) closest to 1.5 MP, scaled down if it is larger than 2.5 MP, else a
 * photo-like picture generated with sharp (noise, blur and gradients; never a flat image).
 */
export async function pickPhoto(): Promise<Photo> {
  const explicit = process.env.SMOKE_PHOTO;
  const candidates = explicit ? [explicit] : listJpegs("/usr/share/backgrounds");
  let best: { path: string; meta: Metadata; score: number } | undefined;
  for (const path of candidates) {
    try {
      const meta = await sharp(path).metadata();
      if (meta.format !== "jpeg" || !meta.width || !meta.height) continue;
      const score = Math.abs(Math.log((meta.width * meta.height) / TARGET_PIXELS));
      if (!best || score < best.score) best = { path, meta, score };
    } catch {
      // not readable: skip
    }
  }
  if (explicit && !best) throw new Error(`SMOKE_PHOTO=${explicit} is not a readable JPEG`);
  if (best) {
    const { width, height } = upright(best.meta);
    if (width * height <= 2.5e6) return { bytes: readFileSync(best.path), source: best.path, width, height };
    const scale = Math.sqrt(TARGET_PIXELS / (width * height));
    const { data, info } = await sharp(best.path)
      .autoOrient()
      .resize({ width: Math.round(width * scale) })
      .jpeg({ quality: 90 })
      .toBuffer({ resolveWithObject: true });
    return {
      bytes: data,
      source: `${best.path} scaled to ${info.width}×${info.height}`,
      width: info.width,
      height: info.height,
    };
  }
  const width = 1400;
  const height = 1000;
  const sky = Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
      <defs><linearGradient id="g" x1="0" y1="0" x2="0.3" y2="1">
        <stop offset="0" stop-color="#5d8ec9"/><stop offset="0.55" stop-color="#e8c98f"/><stop offset="1" stop-color="#3f5a2a"/>
      </linearGradient></defs>
      <rect width="100%" height="100%" fill="url(#g)"/>
      <circle cx="1050" cy="260" r="120" fill="#fff3c4" opacity="0.8"/>
      <path d="M0 700 Q 350 560 700 690 T 1400 650 V 1000 H 0 Z" fill="#2d4221" opacity="0.85"/>
    </svg>`,
  );
  const grain = await sharp({
    create: { width, height, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 40 } },
  })
    .blur(1.2)
    .png()
    .toBuffer();
  const bytes = await sharp(sky)
    .composite([{ input: grain, blend: "soft-light" }])
    .jpeg({ quality: 88 })
    .toBuffer();
  return {
    bytes,
    source: "generated with sharp (no JPEG in /usr/share/backgrounds; run scripts/ci-setup.sh)",
    width,
    height,
  };
}

/** Decodes a conversion result and checks its format and dimensions. */
export async function checkImage(
  res: Response,
  format: "webp" | "avif",
  width: number,
  height: number,
  originalSize: number,
): Promise<string> {
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 300)}`);
  const type = res.headers.get("content-type");
  assert(type === `image/${format}`, `content-type ${type}, expected image/${format}`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  assert(
    res.headers.get("x-original-size") === String(originalSize),
    `x-original-size ${res.headers.get("x-original-size")} != ${originalSize}`,
  );
  assert(
    res.headers.get("x-optimized-size") === String(bytes.length),
    `x-optimized-size ${res.headers.get("x-optimized-size")} != ${bytes.length} bytes received`,
  );
  const meta = await sharp(bytes).metadata();
  const decoded = format === "webp" ? meta.format === "webp" : meta.format === "heif" && meta.compression === "av1";
  assert(decoded, `decodes as ${meta.format}/${meta.compression ?? "-"}, expected ${format}`);
  assert(
    meta.width === width && Math.abs(meta.height! - height) <= 1,
    `decoded ${meta.width}×${meta.height}, expected ${width}×${height}`,
  );
  // Decode the pixels too, not only the header.
  const { info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
  assert(info.width === meta.width && info.height === meta.height, "pixel data does not match the header");
  return `${format} ${meta.width}×${meta.height}, ${bytes.length} bytes (from ${originalSize}, ${res.headers.get("x-savings-percent")}% saved)`;
}
