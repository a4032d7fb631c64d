// The layers of src/ hold as docs/dev/architecture.md states them, from the bottom up:
//   lib < db < core < http < modules < channels < worker < dashboard < docs < app < cli
// (the top-level files: clock.ts, config.ts and version.ts are lib's; services.ts and app.ts are
// app's; main.ts is cli's). A runtime import never reaches up; the domain's shared modules never
// name a channel, type imports included (the vocabulary and the ports they share are core's);
// nothing below http imports http, type imports included; core imports only lib and db, and lib
// only itself. Type-only imports of the container's written-out type (services-type.ts: `Services`
// and the `ModuleDescriptor` that is given it) from higher up are the one upward reach left.
import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = join(import.meta.dir, "../../src");
const ORDER = ["lib", "db", "core", "http", "modules", "channels", "worker", "dashboard", "docs", "app", "cli"] as const;
type Layer = (typeof ORDER)[number];
const TOP_LEVEL: Record<string, Layer> = {
  "clock.ts": "lib",
  "config.ts": "lib",
  "version.ts": "lib",
  "assets.d.ts": "lib",
  "services.ts": "app",
  "services-type.ts": "app",
  "app.ts": "app",
  "main.ts": "cli",
};

/** Upward runtime imports still standing, each with what removes it. */
const KNOWN: Record<string, string> = {};

function layerOf(file: string): Layer {
  const top = file.split("/")[0];
  if (!file.includes("/")) {
    const layer = TOP_LEVEL[file];
    if (!layer) throw new Error(`${file}: a top-level file of src with no layer: add it to TOP_LEVEL`);
    return layer;
  }
  if (!ORDER.includes(top as Layer)) throw new Error(`src/${top}: a folder with no layer: add it to ORDER`);
  return top as Layer;
}

interface Import {
  from: string;
  to: string;
  typeOnly: boolean;
}

/** Every relative import and re-export in src, resolved to files relative to src. */
function imports(): Import[] {
  const out: Import[] = [];
  for (const file of new Glob("**/*.ts").scanSync(SRC)) {
    const text = readFileSync(join(SRC, file), "utf8");
    for (const m of text.matchAll(/^(import|export)\s+(type\s+)?([^;]*?)\s*from\s+"(\.[^"]+)"/gms)) {
      const base = resolve(dirname(join(SRC, file)), m[4]);
      const found = [`${base}.ts`, join(base, "index.ts"), base].find((c) => c.endsWith(".ts") && existsSync(c));
      if (!found) continue;
      const names = /^\{([^}]*)\}$/
        .exec(m[3].trim())?.[1]
        .split(",")
        .map((n) => n.trim())
        .filter(Boolean);
      const typeOnly = !!m[2] || (!!names && names.length > 0 && names.every((n) => n.startsWith("type ")));
      out.push({ from: file, to: relative(SRC, found), typeOnly });
    }
  }
  return out;
}

const all = imports();
const name = (i: Import) => `${i.from} → ${i.to}${i.typeOnly ? " (type)" : ""}`;
const up = (i: Import) => ORDER.indexOf(layerOf(i.to)) > ORDER.indexOf(layerOf(i.from));

describe("the layers of src", () => {
  test("the import reader sees the tree: hundreds of imports, type-only ones told apart", () => {
    expect(all.length).toBeGreaterThan(500);
    expect(all.some((i) => i.typeOnly)).toBe(true);
    expect(all.some((i) => !i.typeOnly)).toBe(true);
    expect(all.find((i) => i.from === "app.ts" && i.to === "services.ts")?.typeOnly).toBe(true);
  });

  test("no runtime import reaches up a layer, but for those named with what removes them", () => {
    const upward = all.filter((i) => !i.typeOnly && up(i)).map((i) => `${i.from} → ${i.to}`);
    expect(upward.filter((u) => !KNOWN[u])).toEqual([]);
    // Each known one still stands: when it goes, so does its entry.
    expect(Object.keys(KNOWN).filter((k) => !upward.includes(k))).toEqual([]);
  });

  test("the shared modules never import a channel, not even a type", () => {
    expect(all.filter((i) => layerOf(i.from) === "modules" && layerOf(i.to) === "channels").map(name)).toEqual([]);
  });

  test("nothing below http imports http, not even a type", () => {
    const below = new Set<Layer>(["lib", "db", "core"]);
    expect(all.filter((i) => below.has(layerOf(i.from)) && layerOf(i.to) === "http").map(name)).toEqual([]);
  });

  test("core imports only lib and db; lib only itself", () => {
    const wrong = all.filter(
      (i) =>
        (layerOf(i.from) === "core" && !["lib", "db", "core"].includes(layerOf(i.to))) ||
        (layerOf(i.from) === "lib" && layerOf(i.to) !== "lib"),
    );
    expect(wrong.map(name)).toEqual([]);
  });

  test("the only upward type imports left are of the composition root's Services", () => {
    const types = all.filter((i) => i.typeOnly && up(i) && !(layerOf(i.from) === "modules" && layerOf(i.to) === "channels"));
    expect(types.filter((i) => i.to !== "services-type.ts").map(name)).toEqual([]);
  });

  test("whether other servers share the database is asked of cluster.shared; the dialect only where the engine itself differs", () => {
    /** Each place outside db/ and the repositories that names the dialect, and the engine's difference it stands for. */
    const ENGINE: Record<string, string> = {
      "modules/sending/routes.ts": "SQLite has one writer: bulk sends take turns",
      "services.ts": "a PostgreSQL commit costs a round trip: single sends share one unit of work",
      "modules/notifications/index.ts": "PostgreSQL has no triggers to fold the hourly counts: a task does",
      "worker/cluster.ts": "cluster.shared itself, whose default is the engine's",
    };
    const naming = [...new Glob("**/*.ts").scanSync(SRC)]
      .filter((file) => !file.startsWith("db/") && !file.endsWith("repository.ts"))
      .filter((file) => /\.dialect\b/.test(readFileSync(join(SRC, file), "utf8")));
    expect(naming.filter((file) => !ENGINE[file]).sort()).toEqual([]);
    expect(Object.keys(ENGINE).filter((file) => !naming.includes(file))).toEqual([]);
  });
});

describe("repositories are private to their module", () => {
  /** The folder that owns a file: a module's or a channel's own folder, else its layer's. */
  const ownerOf = (file: string) => {
    const [top, second] = file.split("/");
    return (top === "modules" || top === "channels") && file.split("/").length > 2 ? `${top}/${second}` : top;
  };
  const isRepository = (file: string) => /(^|[-/])repository\.ts$/.test(file);

  test("the reader finds the repositories and their own folders' imports of them", () => {
    expect(all.filter((i) => isRepository(i.to)).length).toBeGreaterThan(30);
    expect(ownerOf("modules/devices/service.ts")).toBe("modules/devices");
    expect(ownerOf("dashboard/pages/overview.ts")).toBe("dashboard");
  });

  test("no file imports another folder's repository, not even a type (records and ports are in the owner's model.ts)", () => {
    const reaching = all.filter((i) => isRepository(i.to) && ownerOf(i.from) !== ownerOf(i.to)).map(name);
    expect(reaching).toEqual([]);
  });
});

describe("files a person can hold", () => {
  const LIMIT = 500;
  /** Hand-written files still over the limit, each with what will split it. */
  const OVER: Record<string, string> = {};
  test(`no hand-written file in src is over ${LIMIT} lines but those named with what will split them`, () => {
    const lengths = [...new Glob("**/*.ts").scanSync(SRC)]
      .filter((file) => file !== "db/embedded-migrations.ts")
      .map((file) => ({ file, lines: readFileSync(join(SRC, file), "utf8").trimEnd().split("\n").length }));
    expect(lengths.length).toBeGreaterThan(200);
    const over = lengths.filter((f) => f.lines > LIMIT).map((f) => f.file);
    expect(over.filter((file) => !OVER[file]).sort()).toEqual([]);
    // Each one named is still over: once split, its entry goes.
    expect(Object.keys(OVER).filter((file) => !over.includes(file))).toEqual([]);
  });
});
