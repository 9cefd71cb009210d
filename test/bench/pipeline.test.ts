/**
 * The bench's in-process reference (bench/lib/pipeline.ts) must do the service's work: its lossy
 * conversion is convertImage itself (with the guard off, the bare preset), and the sweep's option
 * chain, given the service's presets, must give the same bytes, or every ratio in bench/RESULTS.md would compare different work.
 */
import { describe, expect, test } from "bun:test";
import { convert, encodeWith, presets } from "../../bench/lib/pipeline.ts";
import { cmykJpeg, orientedJpeg, photo, pngWithAlpha } from "../support/images.ts";

const inputs = [
  { name: "photo JPEG", make: () => photo(160, 120) },
  { name: "JPEG with EXIF orientation 6", make: () => orientedJpeg(6) },
  { name: "CMYK JPEG", make: () => cmykJpeg(96, 64) },
  { name: "PNG with alpha", make: () => pngWithAlpha(96, 64) },
];

describe("bench reference = the service's pipeline", () => {
  for (const format of ["webp", "avif"] as const) {
    test.each(inputs)(`${format}: $name, same bytes from the sweep chain with the preset`, async ({ make }) => {
      const input = await make();
      const service = await convert(input, format, "off");
      const sweep = await encodeWith(input, format, presets[format].lossy);
      expect(Buffer.from(sweep).equals(Buffer.from(service))).toBe(true);
    });
  }
});
