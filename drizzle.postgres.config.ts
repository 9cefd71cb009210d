import { defineConfig } from "drizzle-kit";

// PostgreSQL's migrations, from the pg-core twin of the schema (generating needs no server).
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/data/db/schema-pg.ts",
  out: "./drizzle/postgres",
});
