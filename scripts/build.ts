// `bun run build`: compiles src/main.ts, with its embedded migrations and docs assets, into the
// single executable dist/pigeon. Plain --minify breaks Elysia; whitespace and syntax are safe.
// The runtime's header limit is raised to 256 KiB so oversized heads up to that size reach the
// foundation, which answers 431 in the envelope above its own 16 KiB limit.
import { $ } from "bun";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
mkdirSync(join(root, "dist"), { recursive: true });
await $`bun run ${join(root, "scripts/embed-migrations.ts")}`.quiet();
await $`bun build ${join(root, "src/main.ts")} --compile --compile-exec-argv=--max-http-header-size=262144 --minify-whitespace --minify-syntax --outfile ${join(root, "dist/pigeon")}`.cwd(
  root,
);
console.log("built dist/pigeon");
