// Embeds src/staff/dashboard/assets/ into src/staff/dashboard/assets.gen.ts so the dashboard reads no files at
// run time: the compiled binary and Deno then need no file access for it. Run after editing an asset.
import { embeddedAssetsSource } from "../src/staff/dashboard/embed.ts";

const target = new URL("../src/staff/dashboard/assets.gen.ts", import.meta.url);
await Bun.write(target, await embeddedAssetsSource(new URL("../src/staff/dashboard/assets/", import.meta.url)));
console.log(`wrote ${target.pathname}`);
