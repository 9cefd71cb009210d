/** The bench's "what was tried" notes live in bench/README.md; RESULTS.md quotes them for a missed figure. */
import { expect, test } from "bun:test";
import { triedNotes, withTried, type Figure } from "../bench/lib/figures.ts";

const missed: Figure = { figure: "overhead", measured: "", ratio: 1.1, against: "", target: "≤ 1.05", met: false };

test("bench/README.md has a note for each figure that has missed in past runs", () => {
  const notes = triedNotes();
  for (const f of ["overhead", "throughput", "peer", "memory (throughput)", "memory (8 × 20 MB)", "idle (source)", "idle (binary)", "AVIF time", "AVIF bytes", "AVIF SSIM"]) {
    expect(notes[f]).toBeString();
    expect(notes[f]!.length).toBeGreaterThan(10);
  }
});

test("a missed figure quotes its note after what the run found; a met one quotes nothing", () => {
  const notes = { overhead: "Tried this." };
  expect(withTried({ ...missed, finding: "Found that." }, notes).tried).toBe("Found that. Tried this.");
  expect(withTried({ ...missed, met: true }, notes).tried).toBeUndefined();
});
