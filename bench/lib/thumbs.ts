// The thumbnail corpus: the sizes WordPress generates for every upload (150, 300, 768, 1024, 1536
// and 2048 px wide), derived once from the bench corpus the way WordPress derives them (JPEG stays
// JPEG at quality 82, its default; PNG stays PNG), and kept in bench/.work/corpus/thumbs/.
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import type { Image } from "./corpus.ts";

/** The widths WordPress writes for an upload (thumbnail, medium, medium_large, large, 1536×1536, 2048×2048). */
export const WP_WIDTHS = [150, 300, 768, 1024, 1536, 2048] as const;

/** One generated size of a corpus image and the format it is converted to. */
export interface Thumb {
  /** `Dune.jpg@300`. */
  name: string;
  path: string;
  width: number;
  height: number;
  bytes: number;
  /** Output format of its job (lossy): WebP and AVIF alternate by width, shifted per image, so each width has both. */
  format: "webp" | "avif";
}

const GENERATION = "v1"; // bump when the way thumbnails are made changes

/**
 * Every WordPress width below each image's own width (WordPress never enlarges), upright, as
 * WordPress writes them.
 */
export async function loadThumbs(images: Image[], workDir: string): Promise<Thumb[]> {
  const dir = join(workDir, "corpus", "thumbs");
  mkdirSync(dir, { recursive: true });
  const stamp = join(dir, "GENERATION");
  const fresh = existsSync(stamp) && readFileSync(stamp, "utf8") === GENERATION;
  const thumbs: Thumb[] = [];
  for (const [i, image] of images.entries()) {
    for (const [w, width] of WP_WIDTHS.entries()) {
      if (width >= image.width) continue;
      const ext = image.format === "png" ? "png" : "jpg";
      const path = join(dir, `${image.name.replace(/\.\w+$/, "")}-${width}.${ext}`);
      if (!fresh || !existsSync(path)) {
        const resized = sharp(image.path).autoOrient().resize({ width, withoutEnlargement: true });
        writeFileSync(path, await (ext === "png" ? resized.png() : resized.jpeg({ quality: 82 })).toBuffer());
      }
      const m = await sharp(path).metadata();
      thumbs.push({
        name: `${image.name}@${width}`,
        path,
        width: m.width!,
        height: m.height!,
        bytes: statSync(path).size,
        format: (i + w) % 2 ? "avif" : "webp",
      });
    }
  }
  writeFileSync(stamp, GENERATION);
  return thumbs;
}
