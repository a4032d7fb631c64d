// `bun run build`: compiles src/main.ts, with its embedded migrations and docs assets, into the
// single executable dist/pigeon. Plain --minify breaks Elysia; whitespace and syntax are safe.
import { $ } from "bun";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
mkdirSync(join(root, "dist"), { recursive: true });
await $`bun run ${join(root, "scripts/embed-migrations.ts")}`.quiet();
await $`bun build ${join(root, "src/main.ts")} --compile --minify-whitespace --minify-syntax --outfile ${join(root, "dist/pigeon")}`.cwd(root);
console.log("built dist/pigeon");
