// `npm run build:release`: the release binaries, dist/release/pigeon-linux-x64 and
// pigeon-linux-arm64 (the Raspberry Pi a home server often is), compiled as `bun run build` compiles
// dist/pigeon but for each target: Bun takes the target's runtime from its own npm package
// (@oven/bun-linux-x64, @oven/bun-linux-aarch64) at the version this project pins. Then
// SHA256SUMS beside them, in the format `sha256sum -c` reads.
import { $ } from "bun";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const out = join(root, "dist", "release");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await $`bun run ${join(root, "scripts/embed-migrations.ts")}`.quiet();

const RELEASE_TARGETS = [
  { name: "pigeon-linux-x64", target: "bun-linux-x64" },
  { name: "pigeon-linux-arm64", target: "bun-linux-arm64" },
];

const sums: string[] = [];
for (const { name, target } of RELEASE_TARGETS) {
  const file = join(out, name);
  await $`bun build ${join(root, "src/main.ts")} --compile --target=${target} --compile-exec-argv=--max-http-header-size=262144 --minify-whitespace --minify-syntax --outfile ${file}`
    .cwd(root)
    .quiet();
  sums.push(`${createHash("sha256").update(readFileSync(file)).digest("hex")}  ${name}`);
  console.log(`built dist/release/${name}`);
}
writeFileSync(join(out, "SHA256SUMS"), `${sums.join("\n")}\n`);
console.log("wrote dist/release/SHA256SUMS");
