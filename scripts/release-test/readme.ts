// The README's "Download and run" recipes, so the release test runs the commands users copy.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fences } from "../../test/support/recipes.ts";
import { ROOT } from "../release/context.ts";

/** The lines of the first shell fence under the "### <heading…>" of README.md (comments and blank lines dropped). */
export function readmeRecipe(heading: string): string[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const at = readme.indexOf(`\n### ${heading}`);
  if (at < 0) throw new Error(`README.md has no "### ${heading}" section`);
  const fence = fences(readme.slice(at)).find((f) => f.lang === "sh" || f.lang === "bash");
  if (!fence) throw new Error(`README.md's "${heading}" has no shell recipe`);
  return fence.code
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
}
