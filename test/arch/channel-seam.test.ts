// The channel seam holds: the kinds written once in core/kinds.ts are exactly the channels in
// CHANNELS, nothing outside a channel's folder imports from it (only the CHANNELS list does), src
// has no import cycle (type imports included), SQL is written only in repositories, and no list of
// channel names is written out by hand outside src/channels and core/kinds.ts.
import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { CHANNELS } from "../../src/channels";
import { DELIVERY_TYPES, DEVICE_KINDS } from "../../src/core/kinds";

const SRC = join(import.meta.dir, "../../src");

/** Every relative import of every file in src, resolved to a file path relative to src. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of new Glob("**/*.ts").scanSync(SRC)) {
    const text = readFileSync(join(SRC, file), "utf8");
    const deps: string[] = [];
    for (const m of text.matchAll(/^(?:import|export)\s[^;]*?\sfrom\s+"(\.[^"]+)"/gms)) {
      const base = resolve(dirname(join(SRC, file)), m[1]);
      const found = [`${base}.ts`, join(base, "index.ts"), base].find((c) => c.endsWith(".ts") && existsSync(c));
      if (found) deps.push(relative(SRC, found));
    }
    graph.set(file, deps);
  }
  return graph;
}

/** Each line of each file in src that matches one of the patterns, as "file:line: text". */
function linesMatching(patterns: RegExp[], skip: (file: string) => boolean): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of new Glob("**/*.ts").scanSync(SRC)) {
    if (skip(file)) continue;
    readFileSync(join(SRC, file), "utf8")
      .split("\n")
      .forEach((line, i) => {
        if (patterns.some((p) => p.test(line))) found.set(file, [...(found.get(file) ?? []), `${file}:${i + 1}: ${line.trim()}`]);
      });
  }
  return found;
}

/**
 * What writes SQL: a statement handed to bun:sqlite as a string (prepare, query, run, exec), any
 * call of those on a sqlite handle, drizzle's sql`` template, and drizzle's query builder on the
 * database or a transaction, and a statement written in a string for the storage seam's executor.
 * (sqlite.transaction is not SQL: services open transactions and call
 * repositories inside them.)
 */
const SQL_PATTERNS = [
  /\.(prepare|query|run|exec)(<[^>]*>)?\(\s*[`"']/,
  /\b\w*(sqlite|\$client)\.(prepare|query|run|exec)\b/,
  /\bsql`/,
  /\b(db|tx)\.(select|insert|update|delete)\(/,
  // a statement in a string, as the storage seam's executor takes it (comments aside)
  /^(?!\s*(\/\/|\*)).*[`"'](SELECT |INSERT INTO|UPDATE \w+ SET|DELETE FROM|WITH \w+ AS)/,
];

/** SQL allowed outside a repository, and why. */
const SQL_ALLOWED: Record<string, string> = {
  "db/client.ts": "opening the database: the PRAGMAs and the WAL checkpoint at close belong to the connection, not to a table",
  "db/migrate.ts": "the migrator asks sqlite_master and drizzle's journal whether the schema is there",
  "db/records.ts": "a table's insert statement, built from its drizzle schema for the repositories that use it",
  "db/sqlite-storage.ts": "the unit of work on SQLite: it prepares the repositories' statements and opens, nests and ends transactions",
  "db/postgres-migrate.ts": "PostgreSQL's migrator: its advisory lock and its journal table",
  "db/signals.ts": "the hints between servers: PostgreSQL's NOTIFY, no table",
  "db/copy.ts": "`pigeon db copy` reads and writes every table alike, by the names the two schemas share",
};

const isRepository = (file: string) => /(^|\/)[\w-]*repository\.ts$/.test(file);
/** A module's (or a layer's) tables: partial indexes are declared with sql`` conditions in the schema itself. */
const isSchema = (file: string) => /(^|\/)schema\.ts$/.test(file);

describe("the channel seam", () => {
  test("each device kind is one channel, and each delivery type has a channel", () => {
    expect(CHANNELS.map((c) => c.kind).sort()).toEqual([...DEVICE_KINDS].sort());
    expect(new Set(CHANNELS.map((c) => c.name)).size).toBe(CHANNELS.length);
    for (const type of DELIVERY_TYPES) expect(CHANNELS.some((c) => c.deliveryType === type)).toBe(true);
  });

  test("nothing outside a channel's folder imports from it but the CHANNELS list", () => {
    // Every folder under src/channels is a channel's own (read from the tree, so a renamed folder is still checked).
    const folders = readdirSync(join(SRC, "channels"), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    expect(folders.length).toBe(CHANNELS.length);
    const leaks: string[] = [];
    for (const [file, deps] of importGraph()) {
      for (const dep of deps) {
        const folder = folders.find((f) => dep.startsWith(`channels/${f}/`));
        if (folder && !file.startsWith(`channels/${folder}/`) && file !== "channels/index.ts") leaks.push(`${file} → ${dep}`);
      }
    }
    expect(leaks).toEqual([]);
  });

  test("src has no import cycle", () => {
    const graph = importGraph();
    // The graph is really read: the composition root imports the CHANNELS list.
    expect(graph.get("services.ts")).toContain("channels/index.ts");
    const state = new Map<string, "open" | "done">();
    const stack: string[] = [];
    const cycles: string[] = [];
    const visit = (file: string) => {
      state.set(file, "open");
      stack.push(file);
      for (const dep of graph.get(file) ?? []) {
        if (state.get(dep) === "open") cycles.push([...stack.slice(stack.indexOf(dep)), dep].join(" → "));
        else if (!state.has(dep)) visit(dep);
      }
      stack.pop();
      state.set(file, "done");
    };
    for (const file of graph.keys()) if (!state.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });

  test("SQL is written only in repository files (and the few allowed places, each for its reason)", () => {
    const sql = linesMatching(SQL_PATTERNS, () => false);
    // The scan really finds SQL: the repositories are full of it.
    expect(sql.has("modules/notifications/repository.ts")).toBe(true);
    expect(sql.has("channels/phone/repository.ts")).toBe(true);
    // The schema files' partial indexes are found too, and are allowed.
    expect(sql.has("modules/notifications/schema.ts")).toBe(true);
    const outside = [...sql]
      .filter(([file]) => !isRepository(file) && !isSchema(file) && !(file in SQL_ALLOWED))
      .flatMap(([, lines]) => lines);
    expect(outside).toEqual([]);
    // Every allowance is still needed: one that no longer matches anything is dropped.
    for (const file of Object.keys(SQL_ALLOWED)) expect({ file, hasSql: sql.has(file) }).toEqual({ file, hasSql: true });
  });

  test("no list of channel names is written out by hand outside src/channels and core/kinds.ts", () => {
    const names = [...new Set<string>([...DEVICE_KINDS, ...DELIVERY_TYPES])].join("|");
    const quoted = `["'\`](?:${names})["'\`]`;
    const lists = [
      // a type union: "sms" | "chatapp"
      new RegExp(`${quoted}\\s*\\|\\s*${quoted}`),
      // a schema union: t.Union([t.Literal("sms"), t.Literal("chatapp")])
      new RegExp(`t\\.Literal\\(${quoted}\\)\\s*,\\s*t\\.Literal\\(${quoted}\\)`),
      // an array: ["sms", "chatapp"]
      new RegExp(`\\[\\s*${quoted}\\s*,\\s*${quoted}`),
    ];
    // The patterns do catch the lists as core/kinds.ts writes them.
    expect(linesMatching(lists, (file) => file !== "core/kinds.ts").has("core/kinds.ts")).toBe(true);
    const found = [...linesMatching(lists, (file) => file.startsWith("channels/") || file === "core/kinds.ts")].flatMap(
      ([, lines]) => lines,
    );
    expect(found).toEqual([]);
  });
});
