import pkg from "../package.json" with { type: "json" };

/** The release version, from package.json. */
export const version: string = pkg.version;

/** The JavaScript runtime and its version, e.g. `{ name: "Bun", version: "1.4.5" }` (Bun and Deno fill in their own `process.versions` entry). */
export function runtime(): { name: "Bun" | "Deno" | "Node.js"; version: string } {
  const versions = process.versions as Record<string, string | undefined>;
  if (versions.bun) return { name: "Bun", version: versions.bun };
  if (versions.deno) return { name: "Deno", version: versions.deno };
  return { name: "Node.js", version: process.versions.node };
}
