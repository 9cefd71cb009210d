// Embeds src/staff/assets/static/ into src/staff/assets/assets.gen.ts so the dashboard reads no files at
// run time: the compiled binary and Deno then need no file access for it. Run after editing an asset.
import { embeddedAssetsSource } from "../src/staff/assets/embed.ts";

const target = new URL("../src/staff/assets/assets.gen.ts", import.meta.url);
await Bun.write(target, await embeddedAssetsSource(new URL("../src/staff/assets/static/", import.meta.url)));
console.log(`wrote ${target.pathname}`);
