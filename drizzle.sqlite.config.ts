import { defineConfig } from "drizzle-kit";

// The embedded libSQL file's migrations; `npm run db:generate` runs this, the PostgreSQL twin and the embedder.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/data/db/schema.ts",
  out: "./drizzle/sqlite",
});
