import pkg from "../../package.json" with { type: "json" };

// Replaced by scripts/build.ts with the commit an executable is built from; from source it is not
// declared anywhere, and `typeof` of it is "undefined".
declare const IMGPRESS_BUILD_COMMIT: string;

/** The release version from package.json; an executable adds the commit it was built from as build metadata ("0.1.0+1a2b3c4d5e"). */
export const version: string =
  typeof IMGPRESS_BUILD_COMMIT === "string" ? `${pkg.version}+${IMGPRESS_BUILD_COMMIT}` : pkg.version;

/** The JavaScript runtime and its version, e.g. `{ name: "Bun", version: "1.4.5" }` (Bun and Deno fill in their own `process.versions` entry). */
export function runtime(): { name: "Bun" | "Deno" | "Node.js"; version: string } {
  const versions = process.versions as Record<string, string | undefined>;
  if (versions.bun) return { name: "Bun", version: versions.bun };
  if (versions.deno) return { name: "Deno", version: versions.deno };
  return { name: "Node.js", version: process.versions.node };
}
