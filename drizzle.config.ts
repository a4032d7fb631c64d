import { defineConfig } from "drizzle-kit";

// `bun run db:generate` writes a new SQL migration into migrations/ from src/db/schema.ts,
// then regenerates src/db/embedded-migrations.ts so the binary carries it.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./migrations",
});
