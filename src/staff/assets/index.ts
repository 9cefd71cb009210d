import { INTERNAL_PREFIX } from "../../core/http/paths.ts";
import { embeddedAssets } from "./assets.gen.ts";

/** One embedded asset: its source name, its content-hashed path under /internal/assets/, type and text. */
export interface Asset {
  name: string;
  path: string;
  type: string;
  body: string;
}

const byName = new Map(embeddedAssets.map((a) => [a.name, a]));
const byPath = new Map(embeddedAssets.map((a) => [a.path, a]));

/** The URL of an asset by its source name, e.g. `assetUrl("dashboard.css")` → `/internal/assets/dashboard.1a2b3c4d5e.css`. */
export function assetUrl(name: string): string {
  const asset = byName.get(name);
  if (!asset) throw new Error(`unknown dashboard asset ${name}`);
  return `${INTERNAL_PREFIX}/assets/${asset.path}`;
}

/** The asset served at `/internal/assets/<path>`, or undefined. */
export function assetAt(path: string): Asset | undefined {
  return byPath.get(path);
}
