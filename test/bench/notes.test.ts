/** The bench's "what was tried" notes live in bench/README.md; RESULTS.md quotes them for a missed figure. */
import { expect, test } from "bun:test";
import { type Figure, triedNotes, withTried } from "../../bench/lib/figures.ts";
import { missedNotes } from "../../bench/lib/results.ts";

const missed: Figure = { figure: "overhead", measured: "", ratio: 1.1, against: "", target: "≤ 1.05", met: false };

test("bench/README.md has a note for each figure that has missed in past runs", () => {
  const notes = triedNotes();
  for (const f of [
    "overhead",
    "throughput",
    "peer",
    "memory (throughput)",
    "memory (8 × 20 MB)",
    "idle (source)",
    "idle (binary)",
    "AVIF time",
    "AVIF bytes",
    "AVIF SSIM",
  ]) {
    expect(notes[f]).toBeString();
    expect(notes[f]!.length).toBeGreaterThan(10);
  }
});

test("a missed figure quotes its note after what the run found; a met one quotes nothing", () => {
  const notes = { overhead: "Tried this." };
  expect(withTried({ ...missed, finding: "Found that." }, notes).tried).toBe("Found that. Tried this.");
  expect(withTried({ ...missed, met: true }, notes).tried).toBeUndefined();
});

test("figures that share a long note quote it once; the others keep their own findings and refer to the first", () => {
  const shared = "Shared sentence one. ".repeat(15).trim();
  const notes = missedNotes([
    { ...missed, figure: "a", tried: `A found 1.0. ${shared}` },
    { ...missed, figure: "b", tried: `B found 1.1. ${shared}` },
    { ...missed, figure: "c", tried: "Short. Shared sentence one." },
    { ...missed, figure: "d", tried: shared },
    { ...missed, figure: "e" },
  ]);
  expect(notes[0]).toBe(`- **a**: A found 1.0. ${shared}`);
  expect(notes[1]).toBe("- **b**: B found 1.1. The rest as for **a**.");
  // Below the minimum a shared ending is printed again: a sentence is cheaper than a reference.
  expect(notes[2]).toBe("- **c**: Short. Shared sentence one.");
  expect(notes[3]).toBe("- **d**: The rest as for **a**.");
  expect(notes[4]).toBe("- **e**: see the section below.");
});

test("a shared ending is cut at a sentence start, never inside a sentence", () => {
  const tail = ` and then the long part. ${"Next sentence here. ".repeat(12).trim()}`;
  const notes = missedNotes([
    { ...missed, figure: "a", tried: `First figure did X${tail}` },
    { ...missed, figure: "b", tried: `Second figure did Y${tail}` },
  ]);
  expect(notes[1]).toBe("- **b**: Second figure did Y and then the long part. The rest as for **a**.");
});
