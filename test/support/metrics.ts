/**
 * Reading Prometheus text in tests: `parseMetrics` maps each sample line to its value, keyed by
 * the line's name and labels as written (`imgpress_mail_total{outcome="sent"}`), and `promtool`
 * runs the real `promtool check …` (Debian package prometheus) on text or a file.
 *
 *   const before = parseMetrics(await scrape());
 *   …
 *   expect(delta(before, after, 'imgpress_conversions_total{format="webp",quality="lossy",outcome="ok"}')).toBe(3);
 */

/** Sample name with labels → value. */
export type Samples = Map<string, number>;

/** Parses the text exposition into samples (comment lines skipped). */
export function parseMetrics(text: string): Samples {
  const samples: Samples = new Map();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const cut = line.lastIndexOf(" ");
    samples.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return samples;
}

/** How much a sample grew between two scrapes (an absent sample counts as 0). */
export function delta(before: Samples, after: Samples, key: string): number {
  return (after.get(key) ?? 0) - (before.get(key) ?? 0);
}

/** Runs `promtool check <what>` with `input` on stdin (metrics) or as arguments (rules files). */
export async function promtool(args: string[], stdin?: string): Promise<{ code: number; output: string }> {
  const proc = Bun.spawn(["promtool", "check", ...args], {
    stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, output: out + err };
}
