// The benchmark corpus: a fixed, documented subset of Debian's wallpaper packages plus generated
// 20 MB worst cases. Nothing here was made by this project except the worst cases, which are
// derived deterministically from two of the wallpapers.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { progress } from "./util.ts";

/** Where Debian installs the wallpapers. */
export const BACKGROUNDS = "/usr/share/backgrounds";
/** The Debian packages of the corpus. */
export const PACKAGES = ["mate-backgrounds", "lomiri-wallpapers"];

/** Size class of a corpus file. */
export type SizeClass = "small" | "medium" | "large" | "worst";

/** One fixed corpus entry: a path under /usr/share/backgrounds, its package and why it is in. */
interface Entry {
  rel: string;
  pkg: string;
  size: SizeClass;
  note: string;
}

// The subset, chosen once (small < 3 MP ≤ medium < 10 MP ≤ large) to span sizes, both input
// formats, real alpha (three PNGs whose alpha reaches 0), a partly transparent PNG, an opaque
// PNG with an ICC profile, a JPEG with an ICC profile and high-bitrate JPEGs. It averages ~8.5 MP,
// like the whole set (~8.7 MP).
const ENTRIES: Entry[] = [
  { rel: "Picture_1A_by_freespace.jpg", pkg: "lomiri-wallpapers", size: "small", note: "high-bitrate JPEG" },
  { rel: "mate/nature/Dune.jpg", pkg: "mate-backgrounds", size: "small", note: "photo, EXIF orientation tag" },
  {
    rel: "mate/abstract/Gulp.png",
    pkg: "mate-backgrounds",
    size: "small",
    note: "RGBA, alpha 0–255 (real transparency)",
  },
  {
    rel: "mate/abstract/Waves.png",
    pkg: "mate-backgrounds",
    size: "small",
    note: "RGBA, alpha 0–255 (real transparency)",
  },
  {
    rel: "mate/desktop/MATE-Stripes-Dark.png",
    pkg: "mate-backgrounds",
    size: "small",
    note: "RGBA, alpha 17–255 (translucent)",
  },
  {
    rel: "mate/desktop/Ubuntu-Mate-Cold-no-logo.png",
    pkg: "mate-backgrounds",
    size: "small",
    note: "opaque PNG with ICC profile",
  },
  { rel: "mate/nature/Wood.jpg", pkg: "mate-backgrounds", size: "medium", note: "photo" },
  { rel: "aitzgorri_by_Aitzol_Berasategi.jpg", pkg: "lomiri-wallpapers", size: "medium", note: "photo" },
  {
    rel: "mate/abstract/Elephants_3840x2160.jpg",
    pkg: "mate-backgrounds",
    size: "medium",
    note: "8.5 MB high-bitrate JPEG",
  },
  { rel: "warty-final-ubuntu.png", pkg: "lomiri-wallpapers", size: "medium", note: "opaque PNG graphic" },
  { rel: "Wine_by_Jakkub_Mede.jpg", pkg: "lomiri-wallpapers", size: "medium", note: "portrait photo" },
  { rel: "Bridge_by_Sander_Klootwijk.jpg", pkg: "lomiri-wallpapers", size: "large", note: "photo" },
  { rel: "sunset_by_Aitzol_Berasategi.jpg", pkg: "lomiri-wallpapers", size: "large", note: "photo" },
  { rel: "Infinite-Sea_by_Aury88.jpg", pkg: "lomiri-wallpapers", size: "large", note: "6.7 MB JPEG" },
  { rel: "Kleiber_by_Lukas_Baubkus.jpg", pkg: "lomiri-wallpapers", size: "large", note: "photo" },
  {
    rel: "Painting-Colors_by__herobrine7gamer.jpg",
    pkg: "lomiri-wallpapers",
    size: "large",
    note: "24 MP, ICC profile",
  },
];

/** The subset of `--quick`: one of each kind, ~13 MP in all. */
const QUICK = new Set([
  "mate/nature/Dune.jpg",
  "mate/abstract/Gulp.png",
  "mate/desktop/Ubuntu-Mate-Cold-no-logo.png",
  "aitzgorri_by_Aitzol_Berasategi.jpg",
]);

/** One corpus file, described. */
export interface Image {
  /** Short name for tables. */
  name: string;
  path: string;
  /** Path relative to the corpus folder served by ipx. */
  rel: string;
  pkg: string;
  size: SizeClass;
  note: string;
  format: "jpeg" | "png";
  width: number;
  height: number;
  mp: number;
  bytes: number;
  alpha: "none" | "real" | "opaque";
}

/** The corpus of a run. */
export interface Corpus {
  images: Image[];
  worst: Image[];
  /** Where the wallpapers are (the ipx storage root, with the worst cases' folder). */
  dir: string;
}

/** Makes sure the wallpapers are installed: apt-get when root, otherwise an explanation. */
export function ensurePackages(): void {
  if (ENTRIES.every((e) => existsSync(join(BACKGROUNDS, e.rel)))) return;
  const isRoot = process.getuid?.() === 0;
  if (!isRoot) {
    throw new Error(
      `the corpus needs Debian's ${PACKAGES.join(" and ")} under ${BACKGROUNDS}; run as root (the bench then installs them) or: sudo apt-get install ${PACKAGES.join(" ")}`,
    );
  }
  progress(`installing ${PACKAGES.join(", ")} with apt-get…`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  let r = spawnSync("apt-get", ["install", "-y", "-qq", ...PACKAGES], { env, encoding: "utf8" });
  if (r.status !== 0) {
    spawnSync("apt-get", ["update", "-qq"], { env, stdio: "inherit" });
    r = spawnSync("apt-get", ["install", "-y", "-qq", ...PACKAGES], { env, encoding: "utf8" });
  }
  if (r.status !== 0) throw new Error(`apt-get install ${PACKAGES.join(" ")} failed:\n${r.stderr}`);
}

/** Deterministic pseudo-random bytes (xorshift32), so generated files are identical on every machine. */
function noise(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

const MAX_BYTES = 20 * 1024 * 1024; // the service's limit (20 MiB)
const TARGET_MIN = 19_500_000;

/** Grain over a photo: a 512×512 tile of seeded noise, overlay-blended, repeated. */
function grainTile(channels: 3 | 4): {
  input: Buffer;
  raw: { width: number; height: number; channels: 3 | 4 };
  tile: true;
  blend: "overlay";
} {
  const n = noise(512 * 512 * channels, 0x1badb002);
  // Centre the noise on grey (±40) so overlay adds grain without shifting the tone; opaque alpha.
  for (let i = 0; i < n.length; i++) n[i] = channels === 4 && i % 4 === 3 ? 255 : 88 + (n[i]! % 81);
  return { input: Buffer.from(n), raw: { width: 512, height: 512, channels }, tile: true, blend: "overlay" };
}

/**
 * Worst case 1: a ~20 MB JPEG at ~32 MP (Kleiber upscaled 1.25×, grain added, 4:4:4): the most
 * pixels a 20 MB photo-like JPEG plausibly carries. The quality is searched so the file lands
 * just under the 20 MiB limit.
 */
async function worstJpeg(out: string): Promise<void> {
  const src = join(BACKGROUNDS, "Kleiber_by_Lukas_Baubkus.jpg");
  const base = await sharp(src)
    .resize(7535, 4239)
    .composite([grainTile(3)])
    .raw()
    .toBuffer({ resolveWithObject: true });
  const encode = (q: number) =>
    sharp(base.data, { raw: { width: base.info.width, height: base.info.height, channels: base.info.channels as 3 } })
      .jpeg({ quality: q, chromaSubsampling: "4:4:4", mozjpeg: false })
      .toBuffer();
  let lo = 40;
  let hi = 100;
  let best: Buffer | null = null;
  while (lo <= hi) {
    const q = (lo + hi) >> 1;
    const b = await encode(q);
    if (b.length <= MAX_BYTES) {
      best = b;
      if (b.length >= TARGET_MIN) break;
      lo = q + 1;
    } else hi = q - 1;
  }
  if (!best) throw new Error("could not fit the JPEG worst case under 20 MiB");
  writeFileSync(out, best);
}

/**
 * Worst case 2: a ~20 MB RGBA PNG derived from a photo (Dragonfly), with a radial alpha that is
 * fully transparent in the corners and grain so it compresses like a real photo. Its width is
 * searched so the file lands just under the 20 MiB limit.
 */
async function worstPng(out: string): Promise<void> {
  const src = join(BACKGROUNDS, "Dragonfly_by_Bolly.jpg");
  const encode = async (width: number) => {
    const height = Math.round((width * 3168) / 4224);
    const rgb = await sharp(src)
      .resize(width, height)
      .composite([grainTile(3)])
      .removeAlpha()
      .raw()
      .toBuffer();
    const alpha = Buffer.alloc(width * height);
    const cx = width / 2;
    const cy = height / 2;
    const r = Math.hypot(cx, cy);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const d = Math.hypot(x - cx, y - cy) / r; // 0 centre … 1 corner
        alpha[y * width + x] = d < 0.55 ? 255 : d > 0.95 ? 0 : Math.round(255 * (1 - (d - 0.55) / 0.4));
      }
    }
    return sharp(rgb, { raw: { width, height, channels: 3 } })
      .joinChannel(alpha, { raw: { width, height, channels: 1 } })
      .png({ compressionLevel: 6 })
      .toBuffer();
  };
  let width = 2600;
  let best: Buffer | null = null;
  for (let i = 0; i < 6; i++) {
    const b = await encode(width);
    if (b.length <= MAX_BYTES) best = best && best.length > b.length ? best : b;
    if (b.length <= MAX_BYTES && b.length >= TARGET_MIN) break;
    // Bytes scale with pixels: aim for the middle of the window.
    width = Math.floor(width * Math.sqrt(20_100_000 / b.length));
  }
  if (!best) throw new Error("could not fit the PNG worst case under 20 MiB");
  writeFileSync(out, best);
}

const GENERATION = "v1"; // bump when the generators change

async function describe(path: string, rel: string, e: Omit<Entry, "rel">): Promise<Image> {
  const m = await sharp(path).metadata();
  let alpha: Image["alpha"] = "none";
  if (m.hasAlpha) {
    const st = await sharp(path).stats();
    alpha = st.channels.at(-1)!.min < 255 ? "real" : "opaque";
  }
  const name = rel
    .split("/")
    .at(-1)!
    .replace(/_by_.*(\.\w+)$/, "$1");
  return {
    name,
    path,
    rel,
    pkg: e.pkg,
    size: e.size,
    note: e.note,
    format: m.format as "jpeg" | "png",
    width: m.width!,
    height: m.height!,
    mp: (m.width! * m.height!) / 1e6,
    bytes: statSync(path).size,
    alpha,
  };
}

/** Installs (if needed), links and generates the corpus under `workDir`, and describes every file. */
export async function loadCorpus(workDir: string, quick: boolean): Promise<Corpus> {
  ensurePackages();
  const dir = join(workDir, "corpus");
  mkdirSync(join(dir, "worst"), { recursive: true });
  const images: Image[] = [];
  for (const e of ENTRIES) {
    if (quick && !QUICK.has(e.rel)) continue;
    images.push(await describe(join(BACKGROUNDS, e.rel), e.rel, e));
  }
  // The worst cases are generated once and kept (they take ~20 s to search).
  const stamp = join(dir, "worst", "GENERATION");
  const jpeg = join(dir, "worst", "worst-32mp.jpg");
  const png = join(dir, "worst", "worst-rgba.png");
  const fresh = existsSync(stamp) && readFileSync(stamp, "utf8") === GENERATION && existsSync(jpeg) && existsSync(png);
  if (!fresh) {
    progress("generating the 20 MB worst cases (once; kept in bench/.work)…");
    await worstJpeg(jpeg);
    await worstPng(png);
    writeFileSync(stamp, GENERATION);
  }
  const worst = [
    await describe(jpeg, "worst/worst-32mp.jpg", {
      pkg: "generated",
      size: "worst",
      note: "Kleiber ×1.25 + grain, JPEG 4:4:4 at the 20 MiB limit",
    }),
    await describe(png, "worst/worst-rgba.png", {
      pkg: "generated",
      size: "worst",
      note: "Dragonfly + grain + radial alpha (0 in the corners), PNG at the 20 MiB limit",
    }),
  ];
  worst[0]!.path = jpeg;
  worst[1]!.path = png;
  return { images, worst, dir: BACKGROUNDS };
}

/**
 * The quick subset's `mate-backgrounds` files (3 images, 1680–1920 px wide) without the worst cases
 * (nothing generated): the sources of the thumbnail workload for scripts that need only small inputs.
 */
export async function smallImages(): Promise<Image[]> {
  const entries = ENTRIES.filter((e) => QUICK.has(e.rel) && e.pkg === "mate-backgrounds");
  if (!entries.every((e) => existsSync(join(BACKGROUNDS, e.rel)))) ensurePackages();
  return Promise.all(entries.map((e) => describe(join(BACKGROUNDS, e.rel), e.rel, e)));
}
