// Embeds drizzle/sqlite/*.sql and drizzle/postgres/*.sql into src/data/db/migrations.gen.ts so the app migrates without reading files:
// the compiled binary and Deno then need no file access for it. Run after `drizzle-kit generate`.
import { embeddedMigrationsSource } from "../src/data/db/embed.ts";

const target = new URL("../src/data/db/migrations.gen.ts", import.meta.url);
await Bun.write(target, await embeddedMigrationsSource(new URL("../drizzle/", import.meta.url)));
console.log(`wrote ${target.pathname}`);
