// Embeds src/dashboard/assets/ into src/dashboard/assets.gen.ts so the dashboard reads no files at
// run time: the compiled binary and Deno then need no file access for it. Run after editing an asset.
import { embeddedAssetsSource } from "../src/dashboard/embed.ts";

const target = new URL("../src/dashboard/assets.gen.ts", import.meta.url);
await Bun.write(target, await embeddedAssetsSource(new URL("../src/dashboard/assets/", import.meta.url)));
console.log(`wrote ${target.pathname}`);
