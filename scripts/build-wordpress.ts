// Builds dist/imgpress-wordpress.zip: the plugin folder clients/wordpress/imgpress as one top
// folder `imgpress/`, the form Plugins → Add New → Upload takes. Refuses to build when the .pot
// is stale (regenerate it with `bun scripts/wordpress-pot.ts`). Run by `npm run build`, or alone.
import { mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { potIsCurrent } from "./wordpress-pot.ts";

const ROOT = join(import.meta.dir, "..");
const PLUGIN = join(ROOT, "clients/wordpress/imgpress");
/** Where the archive goes, relative to the project root. */
export const WORDPRESS_ZIP = "dist/imgpress-wordpress.zip";

/** Builds the archive at `out` (absolute or relative to the root); returns its absolute path. */
export function buildWordPressZip(out = WORDPRESS_ZIP): string {
  if (!potIsCurrent())
    throw new Error("clients/wordpress/imgpress/languages/imgpress.pot is stale: run `bun scripts/wordpress-pot.ts`");
  const target = join(out.startsWith("/") ? "" : ROOT, out);
  mkdirSync(join(target, ".."), { recursive: true });
  rmSync(target, { force: true });
  const stage = mkdtempSync(join(tmpdir(), "imgpress-wp-build-"));
  try {
    const cp = Bun.spawnSync(["cp", "-r", PLUGIN, join(stage, "imgpress")]);
    if (!cp.success) throw new Error(`copying the plugin: ${cp.stderr}`);
    // -X: no extra file attributes, so the archive depends on the files alone.
    const zip = Bun.spawnSync(["zip", "-q", "-r", "-X", target, "imgpress"], { cwd: stage });
    if (!zip.success) throw new Error(`zip: ${zip.stderr} (install Debian's zip package)`);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  return target;
}

if (import.meta.main) {
  const file = buildWordPressZip();
  console.log(`build: ${WORDPRESS_ZIP} (${(statSync(file).size / 1024).toFixed(1)} KiB)`);
}
