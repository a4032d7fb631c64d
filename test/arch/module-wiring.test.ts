// Modules wire themselves: each repository is built once, by the module that owns it (never by a
// route, never a second time elsewhere), routes reach the database only through services, and
// every route factory declares the narrow part of the services it uses instead of taking it all.
import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const SRC = join(import.meta.dir, "../../src");
const files = [...new Glob("**/*.ts").scanSync(SRC)].map((file) => ({ file, text: readFileSync(join(SRC, file), "utf8") }));
const isRoutes = (file: string) => /(^|\/)([\w-]+-)?routes\.ts$/.test(file);

describe("modules wire themselves", () => {
  test("every repository is built exactly once in src", () => {
    const factories = new Set(files.flatMap(({ text }) => [...text.matchAll(/export function (create\w+Repository)\(/g)].map((m) => m[1])));
    expect(factories.size).toBeGreaterThan(15);
    const builtAt = Object.fromEntries(
      [...factories].map((name) => [
        name,
        files.flatMap(({ file, text }) => [...text.matchAll(new RegExp(`(?<!function )\\b${name}\\(`, "g"))].map(() => file)),
      ]),
    );
    const notOnce = Object.entries(builtAt).filter(([, where]) => where.length !== 1);
    expect(notOnce).toEqual([]);
  });

  test("every repository is built by its own module (or its own layer's folder), never by another", () => {
    const ownerOf = (file: string) => {
      const [top, second] = file.split("/");
      return (top === "modules" || top === "channels") && file.split("/").length > 2 ? `${top}/${second}` : top;
    };
    const definedIn = new Map(
      files.flatMap(({ file, text }) => [...text.matchAll(/export function (create\w+Repository)\(/g)].map((m) => [m[1], file] as const)),
    );
    expect(definedIn.size).toBeGreaterThan(15);
    const elsewhere = files.flatMap(({ file, text }) =>
      [...definedIn]
        .filter(([name, home]) => new RegExp(`(?<!function )\\b${name}\\(`).test(text) && ownerOf(file) !== ownerOf(home))
        .map(([name, home]) => `${file} builds ${name} (of ${home})`),
    );
    expect(elsewhere).toEqual([]);
  });

  test("the composition root composes modules: it builds no repository itself", () => {
    const root = files.find(({ file }) => file === "services.ts")!;
    expect(root.text.match(/create\w+Repository\(/g) ?? []).toEqual([]);
  });

  test("no route builds a repository or reaches the database handle", () => {
    const offending = files
      .filter(({ file }) => isRoutes(file))
      .flatMap(({ file, text }) =>
        text
          .split("\n")
          .map((line, i) => ({ line, at: `${file}:${i + 1}` }))
          .filter(({ line }) => /create\w+Repository\(|\bs\.db\b|\$client|bun:sqlite/.test(line))
          .map(({ at, line }) => `${at}: ${line.trim()}`),
      );
    expect(offending).toEqual([]);
  });

  test("every module folder has an index.ts whose descriptor is in MODULES", async () => {
    const { MODULES } = await import("../../src/modules/index");
    const folders = [
      ...new Set(
        files
          .map(({ file }) => file.split("/"))
          .filter((p) => p[0] === "modules" && p.length > 2)
          .map((p) => p[1]),
      ),
    ];
    expect(folders.length).toBeGreaterThan(20);
    const listed = new Set(MODULES.map((m) => m.name));
    const missing = folders.filter((name) => !files.some(({ file }) => file === `modules/${name}/index.ts`) || !listed.has(name));
    expect(missing).toEqual([]);
  });

  test("no route factory takes the whole services object: each declares what it uses", () => {
    const routeFiles = files.filter(({ file }) => isRoutes(file));
    expect(routeFiles.length).toBeGreaterThan(30);
    const whole = routeFiles.filter(({ text }) => /\(\s*\w+\s*:\s*Services\s*[,)]/.test(text)).map(({ file }) => file);
    expect(whole).toEqual([]);
  });
});
