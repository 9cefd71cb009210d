import { defineConfig } from "drizzle-kit";

// Generates SQL into drizzle/; `npm run db:generate` also refreshes the embedded copy the app migrates from.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./drizzle",
});
