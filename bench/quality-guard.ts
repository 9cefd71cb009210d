// The quality guard's figure (issue 16): per image, lossy AVIF and WebP through the service's
// pipeline with IMGPRESS_QUALITY_GUARD off and on, against WebP q80 effort 4 on the same image,
// in one run side by side: SSIM (bench/lib/ssim.ts, full resolution, alpha on white), bytes,
// median time, the quality chosen and the candidates tried. Two sets: the bench corpus, and a
// generated set of translucent images and graphics. Writes its section of bench/RESULTS.md
// between the quality-guard markers and prints it.
//
//   bun bench/quality-guard.ts [--quick] [--reps=N] [--only=NAME,NAME]
//
// --only keeps the images whose names contain one of the given strings (to iterate on a few);
// like --quick, it writes bench/.work/quality-guard.quick.md instead of RESULTS.md.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import type { GuardMode } from "../src/conversion/pipeline/guard.ts";
import { convertImage } from "../src/conversion/pipeline/index.ts";
import { presets } from "../src/conversion/pipeline/presets.ts";
import { rng } from "../test/support/images.ts";
import { loadCorpus } from "./lib/corpus.ts";
import { QUALITY_GUARD_BLOCK, writeSection } from "./lib/results.ts";
import { decodeOnWhite, meanSsim, type Pixels } from "./lib/ssim.ts";
import { fmt, median, progress, sum, table } from "./lib/util.ts";

const WORK = join(import.meta.dir, ".work");
const START = "<!-- quality-guard:start (written by bench/quality-guard.ts) -->";
const END = "<!-- quality-guard:end -->";

interface Variant {
  key: string;
  label: string;
  format: "webp" | "avif";
  guard: GuardMode;
}

const VARIANTS: Variant[] = [
  { key: "webp", label: "WebP q80 (fixed)", format: "webp", guard: "off" },
  { key: "avifBefore", label: "AVIF preset (guard off)", format: "avif", guard: "off" },
  { key: "avifAfter", label: "AVIF, guard on", format: "avif", guard: "avif" },
  { key: "webpGuard", label: "WebP, guard on", format: "webp", guard: "all" },
];

interface Sample {
  name: string;
  set: "corpus" | "generated";
  path: string;
  mp: number;
  bytes: number;
}

interface Outcome {
  ms: number[];
  bytes: number;
  score: number;
  quality: number | "lossless";
  reasons: string;
  candidates: number;
  extra: number;
}

/** Translucent images and graphics: what the corpus has few of and the guard is for. */
async function generatedSet(): Promise<Sample[]> {
  const dir = join(WORK, "guard-set");
  mkdirSync(dir, { recursive: true });
  const svg = (w: number, h: number, body: string) =>
    Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}">${body}</svg>`);
  const made: [string, () => Promise<Buffer>][] = [
    [
      "logo-translucent.png",
      () =>
        sharp(
          svg(
            1200,
            900,
            `<defs><linearGradient id="g" x1="0" x2="1"><stop offset="0" stop-color="#e0402a" stop-opacity="0.9"/><stop offset="1" stop-color="#2a60e0" stop-opacity="0.35"/></linearGradient>
             <radialGradient id="r"><stop offset="0" stop-color="#fff" stop-opacity="0.8"/><stop offset="1" stop-color="#fc0" stop-opacity="0"/></radialGradient></defs>
             <rect x="60" y="60" width="1080" height="780" rx="120" fill="url(#g)"/><circle cx="600" cy="450" r="330" fill="url(#r)"/>
             ${Array.from({ length: 24 }, (_, i) => `<circle cx="${120 + i * 42}" cy="${200 + 18 * Math.sin(i)}" r="14" fill="#113" fill-opacity="${0.2 + (i % 5) * 0.15}"/>`).join("")}
             <text x="600" y="700" font-family="sans-serif" font-size="120" font-weight="bold" text-anchor="middle" fill="#fff" fill-opacity="0.85">imgpress</text>`,
          ),
        )
          .png()
          .toBuffer(),
    ],
    [
      "chart.png",
      () => {
        const r = rng(3);
        const bars = Array.from(
          { length: 30 },
          (_, i) =>
            `<rect x="${100 + i * 48}" y="${900 - 700 * r()}" width="36" height="800" fill="${i % 3 ? "#3b7dd8" : "#e8743b"}"/>`,
        ).join("");
        const grid = Array.from(
          { length: 15 },
          (_, i) => `<line x1="80" x2="1560" y1="${60 * i + 60}" y2="${60 * i + 60}" stroke="#ccc" stroke-width="1"/>`,
        ).join("");
        const labels = Array.from(
          { length: 30 },
          (_, i) =>
            `<text x="${118 + i * 48}" y="960" font-family="sans-serif" font-size="16" text-anchor="middle">${2000 + i}</text>`,
        ).join("");
        return sharp(
          svg(
            1600,
            1000,
            `<rect width="1600" height="1000" fill="#fff"/>${grid}${bars}<rect x="0" y="900" width="1600" height="100" fill="#fff"/>${labels}`,
          ),
        )
          .flatten({ background: "#ffffff" })
          .png()
          .toBuffer();
      },
    ],
    [
      "screenshot.png",
      () => {
        const lines = Array.from(
          { length: 40 },
          (_, i) =>
            `<text x="300" y="${140 + i * 22}" font-family="monospace" font-size="15" fill="#222">${`const value_${i} = compute(${"x".repeat(i % 17)}, ${i * 37}); // note`}</text>`,
        ).join("");
        const side = Array.from(
          { length: 20 },
          (_, i) =>
            `<text x="20" y="${140 + i * 30}" font-family="sans-serif" font-size="16" fill="#ddd">Item ${i + 1}</text>`,
        ).join("");
        return sharp(
          svg(
            1920,
            1080,
            `<rect width="1920" height="1080" fill="#f7f7f7"/><rect width="260" height="1080" fill="#2d3142"/><rect x="0" y="0" width="1920" height="80" fill="#4f5d75"/>${side}${lines}<rect x="1400" y="140" width="440" height="300" rx="8" fill="#fff" stroke="#bbb"/>`,
          ),
        )
          .flatten({ background: "#ffffff" })
          .png()
          .toBuffer();
      },
    ],
    [
      "starfield.png",
      () => {
        const w = 2000;
        const h = 1250;
        const r = rng(9);
        const px = Buffer.alloc(w * h * 3);
        for (let y = 0, p = 0; y < h; y++)
          for (let x = 0; x < w; x++, p += 3) px.set([8, 10 + (20 * y) / h, 30 + (30 * x) / w], p);
        for (let i = 0; i < 6000; i++) {
          const x = Math.floor(r() * w);
          const y = Math.floor(r() * h);
          const v = 120 + Math.floor(135 * r());
          px.set([v, v, Math.min(255, v + 20)], (y * w + x) * 3);
        }
        return sharp(px, { raw: { width: w, height: h, channels: 3 } })
          .png()
          .toBuffer();
      },
    ],
    [
      "icon-alpha.png",
      () =>
        sharp(
          svg(
            512,
            512,
            `<defs><filter id="s"><feGaussianBlur stdDeviation="12"/></filter></defs><circle cx="266" cy="276" r="200" fill="#000" fill-opacity="0.35" filter="url(#s)"/>
             <circle cx="256" cy="256" r="200" fill="#1e88e5"/><path d="M160 270 L230 340 L360 190" stroke="#fff" stroke-width="40" fill="none" stroke-linecap="round"/>`,
          ),
        )
          .png()
          .toBuffer(),
    ],
    [
      "photo-vignette.png",
      async () => {
        const photo = "/usr/share/backgrounds/mate/nature/Dune.jpg";
        const { data, info } = await sharp(photo)
          .autoOrient()
          .ensureAlpha()
          .raw()
          .toBuffer({ resolveWithObject: true });
        for (let y = 0, p = 3; y < info.height; y++) {
          for (let x = 0; x < info.width; x++, p += 4) {
            const d = Math.hypot((x - info.width / 2) / (info.width / 2), (y - info.height / 2) / (info.height / 2));
            data[p] = Math.max(0, Math.min(255, Math.round(255 * (1.3 - d))));
          }
        }
        return sharp(data, { raw: { width: info.width, height: info.height, channels: 4 } })
          .png()
          .toBuffer();
      },
    ],
  ];
  const out: Sample[] = [];
  for (const [name, make] of made) {
    const path = join(dir, name);
    if (!existsSync(path)) writeFileSync(path, await make());
    const m = await sharp(path).metadata();
    out.push({ name, set: "generated", path, mp: (m.width! * m.height!) / 1e6, bytes: readFileSync(path).length });
  }
  return out;
}

/**
 * Why an image stays below WebP q80 with the guard on, as measured when the guard was tuned
 * (2026-11-23, full-image encodes of AVIF effort 0 outside the guard); printed for the images
 * below in the run at hand.
 */
const KNOWN_MISSES: Record<string, string> = {
  "Gulp.png":
    "80% of its pixels are transparent, the rest soft-edged: the loss is AVIF's lossy alpha, which barely improves with quality (q55 → q85: +0.0004 on the guard's measure). Only q100 or lossless matches WebP's lossless alpha, at 3.9–7.2 MB (2.4–4.4× WebP's bytes) and ≥ 9× the preset's time. Alpha coded exactly in an item of its own (colour q55–70) reaches 0.9970–0.9971 at 1.26–1.66 MB for 2× the preset's time: still below, beyond the bound (bench/README.md, AVIF SSIM).",
  "MATE-Stripes-Dark.png":
    "WebP q80 scores 1.0000 here (its alpha is lossless: 898 KB). AVIF reaches it only at q100 (914 KB) for ~2.2× the preset's encode time, beyond the bound (q95: 0.9948); exact alpha in an item of its own (colour q55) passes at the same 914 KB for 2.75× the preset's time; the guard returns the best quality that fits.",
  "Ubuntu-Mate-Cold-no-logo.png":
    "Needs about q80 (3.5× the preset's bytes, ~1.3× its encode time). On this 2.5 MP PNG the trials with their decoding and scoring cost about half the preset's encode, so a q80 final encode barely fits the bound and only when the sample's timings happen to be low: it passed in a trace run the same hour (q80, 0.9465), not here, where the trials were spent and the preset returned.",
  "chart.png":
    "The sample (20 tiles of 64 px) misses the axis labels: on it the preset scores above WebP (+0.0003), on the whole image below (−0.0010), so the guard keeps the preset. On the whole image AVIF effort 0 needs q≈90 (74 KB, 3.8× WebP's bytes). Tried: tiles spread from edge to edge instead of centred in equal cells (so the labels along the bottom are sampled): chart rose to q68 (0.9988, still below 0.9991), and in the same run Kleiber.jpg fell below (−0.0004), so the centred layout stays.",
  "starfield.png":
    "AVIF effort 0 smooths isolated stars: q90 scores 0.9943, q≈92 passes at ~395 KB (7× WebP's bytes); q100 (224 KB, 0.9997) costs ~2× the preset's time and effort 2 (26 KB, 0.9995) 3×, beyond the bound, so the best candidate that fits is returned.",
  "Elephants_3840x2160.jpg":
    "High-bitrate, noisy JPEG: needs q≈72–73, as many bytes as WebP's; the final encode fits the bound only when the estimate from the sample allows it.",
  "logo-translucent.png":
    "Translucent: needs q≈89 (alpha coded lossy at the colour quality); a 1 MP image's trials cost a third of its encode, so under load the bound may stop the search.",
  "icon-alpha.png": "Translucent, 0.26 MP: needs q≈91; under load the trials alone may use the bound.",
  "screenshot.png":
    "Text on flat colour: needs q≈88 at effort 0 (effort 2 would pass at the preset's quality with fewer bytes, at 4× the time).",
};

async function run(input: Buffer, v: Variant) {
  const t0 = performance.now();
  const r = await convertImage(
    input,
    { format: v.format, quality: "lossy" },
    { maxPixels: 100_000_000, timeoutS: 120, qualityGuard: v.guard },
  );
  return { ms: performance.now() - t0, result: r };
}

async function measure(sample: Sample, reps: number): Promise<Record<string, Outcome>> {
  const input = readFileSync(sample.path);
  const reference: Pixels = await decodeOnWhite(input);
  const out: Record<string, Outcome> = {};
  await run(input, VARIANTS[0]!); // untimed: first touch of the input
  for (let rep = 0; rep < reps; rep++) {
    // Rotate the order so no variant always runs first or last.
    for (let i = 0; i < VARIANTS.length; i++) {
      const v = VARIANTS[(i + rep) % VARIANTS.length]!;
      const { ms, result } = await run(input, v);
      const o = (out[v.key] ??= { ms: [], bytes: 0, score: 0, quality: 0, reasons: "", candidates: 0, extra: 0 });
      o.ms.push(ms);
      if (rep === reps - 1) {
        Object.assign(o, {
          bytes: result.bytes.length,
          quality: result.quality,
          reasons: result.qualityReasons.join(", "),
          candidates: result.candidates,
          extra: result.guardEncodes,
        });
        o.score = meanSsim(reference, await decodeOnWhite(Buffer.from(result.bytes)));
      }
    }
  }
  return out;
}

interface Row {
  sample: Sample;
  o: Record<string, Outcome>;
}

function summary(rows: Row[], label: string) {
  const t = (k: string) => sum(rows.map((r) => median(r.o[k]!.ms)));
  const b = (k: string) => sum(rows.map((r) => r.o[k]!.bytes));
  const below = (k: string) => rows.filter((r) => r.o[k]!.score < r.o.webp!.score);
  const worst = (k: string) => Math.min(0, ...rows.map((r) => r.o[k]!.score - r.o.webp!.score));
  // The guard's time bound, per image: its conversion time over the same format's without it.
  const unguarded: Record<string, string> = { avifAfter: "avifBefore", webpGuard: "webp" };
  const slowest = (k: string) => {
    const base = unguarded[k];
    if (!base) return "–";
    const worstRow = rows.reduce((a, r) =>
      median(r.o[k]!.ms) / median(r.o[base]!.ms) > median(a.o[k]!.ms) / median(a.o[base]!.ms) ? r : a,
    );
    return `${fmt(median(worstRow.o[k]!.ms) / median(worstRow.o[base]!.ms), 2)} (${worstRow.sample.name})`;
  };
  return ["avifBefore", "avifAfter", "webpGuard"].map((k) => {
    const v = VARIANTS.find((x) => x.key === k)!;
    const n = below(k);
    return [
      label,
      v.label,
      `${n.length}/${rows.length}${n.length ? ` (worst Δ ${fmt(worst(k), 4)}: ${n.map((r) => r.sample.name).join(", ")})` : ""}`,
      fmt(b(k) / b("webp"), 3),
      fmt(t(k) / t("webp"), 3),
      `${fmt(t(k) / 1000, 1)} s vs ${fmt(t("webp") / 1000, 1)} s`,
      slowest(k),
    ];
  });
}

/** The images still below WebP q80 with the guard on, each with its measured reason. */
function misses(rows: Row[]): string {
  const below = rows.filter((r) => r.o.avifAfter!.score < r.o.webp!.score);
  if (below.length === 0) return "With the guard on, no AVIF is below WebP q80's SSIM.";
  const lines = below.map((r) => {
    const o = r.o.avifAfter!;
    return `- **${r.sample.name}** (Δ ${fmt(o.score - r.o.webp!.score, 4)}, q ${o.quality}, ${o.reasons}): ${KNOWN_MISSES[r.sample.name] ?? "not analysed."}`;
  });
  return ["Still below WebP q80 with the guard on, and why:", "", ...lines].join("\n");
}

/** Where the bytes target is missed: the raises that cost the most bytes over the preset. */
function bytesNote(sets: [string, Row[]][]): string {
  const over = sets.filter(
    ([, rows]) => sum(rows.map((r) => r.o.avifAfter!.bytes)) > 0.75 * sum(rows.map((r) => r.o.webp!.bytes)),
  );
  if (over.length === 0) return "";
  const notes = over.map(([name, rows]) => {
    const extra = rows
      .map((r) => ({ name: r.sample.name, kb: (r.o.avifAfter!.bytes - r.o.avifBefore!.bytes) / 1000 }))
      .sort((a, b) => b.kb - a.kb);
    return `${name}: ${extra
      .slice(0, 4)
      .map((e) => `${e.name} +${fmt(e.kb, 0)} KB`)
      .join(", ")}`;
  });
  return [
    "",
    `Σ AVIF bytes above 0.75× WebP's (${notes.join("; ")} over the preset). Meeting the SSIM target costs these bytes: a noisy photo such as Elephants needs as many bytes as WebP's. Lowering the quality where the preset beats WebP would win some back, but the sample overstates AVIF's lead on smooth photos by 0.001–0.007 SSIM (Wood, Wine, Dune: more than the lead itself), so the guard never lowers it; on the generated set AVIF effort 0 codes graphics several times larger than WebP whatever the quality.`,
  ].join("\n");
}

function perImage(rows: Row[]): string {
  const cell = (o: Outcome, withChoice: boolean) => {
    const base = `${fmt(o.score, 4)} · ${o.bytes} · ${Math.round(median(o.ms))} ms`;
    return withChoice ? `${base} · q ${o.quality} (${o.reasons}) · ${o.candidates} tried, +${o.extra} encodes` : base;
  };
  return table(
    [
      "image",
      "set",
      "MP",
      "WebP q80: SSIM · bytes · time",
      "AVIF before (preset)",
      "AVIF after (guard): … · quality (reason) · candidates",
      "WebP with the guard",
    ],
    rows.map((r) => [
      r.sample.name,
      r.sample.set,
      fmt(r.sample.mp, 1),
      cell(r.o.webp!, false),
      cell(r.o.avifBefore!, false),
      cell(r.o.avifAfter!, true),
      cell(r.o.webpGuard!, true),
    ]),
  );
}

async function main() {
  const only = process.argv
    .find((a) => a.startsWith("--only="))
    ?.slice(7)
    .split(",");
  const quick = process.argv.includes("--quick") || only !== undefined;
  const reps = Number(process.argv.find((a) => a.startsWith("--reps="))?.slice(7) ?? (quick ? 1 : 3));
  const loadStart = loadavg();
  const corpus = await loadCorpus(WORK, process.argv.includes("--quick"));
  const samples: Sample[] = [
    ...corpus.images.map((i) => ({ name: i.name, set: "corpus" as const, path: i.path, mp: i.mp, bytes: i.bytes })),
    ...(await generatedSet()),
  ].filter((s) => !only || only.some((o) => s.name.includes(o)));
  // Warm up the encoders and the guard's SSIM before anything is timed.
  const warm = await sharp({
    create: { width: 640, height: 480, channels: 4, background: { r: 90, g: 120, b: 200, alpha: 0.6 } },
  })
    .png()
    .toBuffer();
  for (const v of VARIANTS) for (let i = 0; i < 3; i++) await run(warm, v);
  const rows: Row[] = [];
  for (const sample of samples) {
    progress(`quality guard: ${sample.name} (${fmt(sample.mp, 1)} MP)`);
    rows.push({ sample, o: await measure(sample, reps) });
  }
  const loadEnd = loadavg();
  const corpusRows = rows.filter((r) => r.sample.set === "corpus");
  const generatedRows = rows.filter((r) => r.sample.set === "generated");
  const section = [
    START,
    "## Quality guard (bench/quality-guard.ts)",
    "",
    `Lossy output through the service's pipeline (src/conversion/pipeline, \`IMGPRESS_QUALITY_GUARD\` off / on) against WebP q80 effort 4 on the same image, one image at a time, all variants side by side in one run (order rotated per repetition), median of ${reps} time(s) per image. SSIM: bench/lib/ssim.ts (full resolution, alpha on white), of the last repetition's output. **The machine was shared and loaded** (load average ${loadStart.map((x) => x.toFixed(2)).join(" / ")} at start, ${loadEnd.map((x) => x.toFixed(2)).join(" / ")} at end, 2 cores): the guard's choices depend on measured time, so they can differ between runs. Date ${new Date().toISOString()}${quick ? ", --quick" : ""}.`,
    "",
    "Targets: every AVIF at or above WebP q80's SSIM; Σ AVIF bytes ≤ 0.75 × WebP's; Σ AVIF time ≤ 1.2 × WebP's. The guard's bound is 1.5× (decode + preset encode) with the encode estimated from the sample, or the preset's time + 100 ms for tiny images; the last column shows how far the real conversions went past the preset's.",
    "",
    table(
      [
        "set",
        "variant",
        "images below WebP q80's SSIM",
        "Σ bytes ÷ WebP q80",
        "Σ median time ÷ WebP q80",
        "Σ time",
        "worst image's time ÷ same format without the guard",
      ],
      [
        ...summary(corpusRows, `corpus (${corpusRows.length})`),
        ...summary(generatedRows, `generated (${generatedRows.length})`),
        ...summary(rows, `both (${rows.length})`),
      ],
    ),
    "",
    misses(rows),
    bytesNote([
      ["corpus", corpusRows],
      ["generated", generatedRows],
    ]),
    "",
    `Per image (before = AVIF preset ${JSON.stringify(presets.avif.lossy)} alone, after = with the guard, which codes graphics 4:4:4; 'tried' counts the output format's settings tried on the sample, the preset included; '+N encodes' the extra encoder runs, the WebP reference and the final encode included):`,
    "",
    perImage(rows),
    END,
  ].join("\n");
  console.log(section);
  if (!quick) {
    writeSection(QUALITY_GUARD_BLOCK, section);
  } else writeFileSync(join(WORK, "quality-guard.quick.md"), section);
}

await main();
