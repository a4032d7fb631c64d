import { defineConfig } from "drizzle-kit";

// `bun run db:generate` writes a new SQL migration into migrations/ from the tables every
// schema.ts in src declares (each module's, beside it), then regenerates
// src/db/embedded-migrations.ts so the binary carries it. scripts/pg-schema.ts reads the same files.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/**/schema.ts",
  out: "./migrations",
});
