// The documentation agrees with the code: every environment variable config.ts reads is in
// ENV_VARS, in `pigeon --help` and in docs/operating.md's table (with the default loadConfig
// applies); docs/errors.md is what scripts/docs-errors.ts writes; the README stays short and opens
// with the two commands; every relative link and every file path the docs name exists; and no page
// points outside the repository.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { renderErrorsDoc } from "../../scripts/docs-errors";
import { COMMAND_NAMES, HELP, runCli } from "../../src/cli/commands";
import { ENV_VARS, loadConfig } from "../../src/config";

const ROOT = join(import.meta.dir, "../..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

function markdownFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith(".md") ? [path] : [];
  });
}
const DOC_FILES = ["README.md", ...markdownFiles("docs")];

/** Text outside fenced code blocks. */
function prose(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "");
}

/** Names that occur more than once. */
function duplicates(names: string[]): string[] {
  return names.filter((name, i) => names.indexOf(name) !== i);
}

describe("environment variables: config.ts, ENV_VARS, --help and docs/operating.md agree", () => {
  const names = ENV_VARS.map((v) => v.name);

  test("every PIGEON_* name in src/config.ts (outside ENV_VARS itself) is in ENV_VARS, and vice versa", () => {
    const source = read("src/config.ts");
    const start = source.indexOf("export const ENV_VARS");
    const end = source.indexOf("\n];", start);
    expect(start).toBeGreaterThan(-1);
    expect(end).toBeGreaterThan(start);
    const code = source.slice(0, start) + source.slice(end + 3);
    const inCode = [...new Set([...code.matchAll(/\bPIGEON_[A-Z_]+\b/g)].map((m) => m[0]))].sort();
    expect(inCode.length).toBeGreaterThanOrEqual(18);
    expect(duplicates(names)).toEqual([]);
    expect([...names].sort()).toEqual(inCode);
  });

  test("each default ENV_VARS shows is the one loadConfig applies", () => {
    const defaults = loadConfig({});
    for (const v of ENV_VARS) {
      if (v.default === null) continue;
      // Setting a variable to its documented default changes nothing.
      expect({ name: v.name, config: loadConfig({ [v.name]: v.default }) }).toEqual({ name: v.name, config: defaults });
    }
  });

  test("docs/operating.md has one configuration row per variable, no other rows, with the same default", () => {
    const doc = read("docs/operating.md");
    const section = doc.slice(doc.indexOf("\n## Configuration\n"));
    expect(section.length).toBeGreaterThan(0);
    const table = section.slice(section.indexOf("\n|")).split("\n\n")[0];
    const rows = table
      .trim()
      .split("\n")
      .slice(2)
      .map((line) => line.split("|").map((cell) => cell.trim()));
    const rowNames = rows.map((cells) => cells[1].replace(/^`|`$/g, ""));
    expect(duplicates(rowNames)).toEqual([]);
    expect([...rowNames].sort()).toEqual([...names].sort());
    for (const cells of rows) {
      const v = ENV_VARS.find((e) => `\`${e.name}\`` === cells[1])!;
      expect({ name: v.name, default: cells[2] }).toEqual({ name: v.name, default: v.default === null ? "—" : `\`${v.default}\`` });
      expect(cells[3].length).toBeGreaterThan(0);
    }
  });

  test("pigeon --help prints every variable, one a line, with its default", async () => {
    const printed: string[] = [];
    const log = console.log;
    console.log = (...args: unknown[]) => printed.push(args.join(" "));
    let code: number | null;
    try {
      code = await runCli(["--help"], () => {
        throw new Error("--help must not open the data directory");
      });
    } finally {
      console.log = log;
    }
    expect(code).toBe(0);
    const text = printed.join("\n");
    expect(text).toBe(HELP);
    for (const v of ENV_VARS) {
      const line = text.split("\n").find((l) => l.trimStart().startsWith(`${v.name} `));
      expect({ name: v.name, line: line !== undefined }).toEqual({ name: v.name, line: true });
      if (v.default !== null) expect(line).toContain(v.default);
    }
  });
});

describe("the command table", () => {
  test("--help is made from it: each command's lines, and no line of another", () => {
    const commands = HELP.slice(HELP.indexOf("Commands:\n"), HELP.indexOf("\nOptions:")).split("\n").slice(1);
    const named = commands.filter((l) => /^ {2}[a-z]/.test(l)).map((l) => l.trim().split(/\s/)[0]);
    expect([...new Set(named)]).toEqual(COMMAND_NAMES);
    expect(COMMAND_NAMES).toContain("serve");
    expect(COMMAND_NAMES.length).toBeGreaterThan(15);
  });

  test("docs/operating.md shows every command", () => {
    const lines = read("docs/operating.md")
      .split("\n")
      .filter((l) => l.startsWith("pigeon "));
    const missing = COMMAND_NAMES.filter((name) => !lines.some((l) => new RegExp(`(^pigeon |\\| |\\[)${name}[ \\]]`).test(l)));
    expect(missing).toEqual([]);
  });
});

describe("docs/errors.md", () => {
  test("is what scripts/docs-errors.ts writes", () => {
    const written = read("docs/errors.md");
    if (written !== renderErrorsDoc()) {
      throw new Error("docs/errors.md differs from the error table: run `npm run docs:errors` and commit the result");
    }
  });
});

describe("README.md", () => {
  const readme = read("README.md");

  test("is short", () => {
    expect(readme.trimEnd().split("\n").length).toBeLessThanOrEqual(160);
  });

  test("opens with the two commands, each in a code block within its first 40 lines", () => {
    const head = readme.split("\n").slice(0, 40).join("\n");
    const blocks = [...head.matchAll(/^```[^\n]*\n([\s\S]*?)^```$/gm)].map((m) => m[1].trim());
    expect(blocks).toContain("npm install && npm start");
    expect(blocks).toContain("npm install && npm test");
  });

  test("links every page in docs/", () => {
    const linked = new Set([...prose(readme).matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)].map((m) => m[1]));
    const missing = markdownFiles("docs").filter((page) => !linked.has(page));
    expect(missing).toEqual([]);
  });
});

describe("links and references in README.md and docs/", () => {
  test("every relative link points at a file that exists", () => {
    const broken: string[] = [];
    let count = 0;
    for (const file of DOC_FILES) {
      for (const m of prose(read(file)).matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1].split("#")[0];
        if (target === "" || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        count++;
        const path = resolve(ROOT, dirname(file), target);
        if (!path.startsWith(`${ROOT}/`) || !existsSync(path)) broken.push(`${file}: ${m[1]}`);
      }
    }
    expect(count).toBeGreaterThan(20);
    expect(broken).toEqual([]);
  });

  test("every source, test, script and benchmark file they name exists", () => {
    const missing: string[] = [];
    for (const file of DOC_FILES) {
      for (const m of read(file).matchAll(/`((?:src|test|test-browser|scripts|bench)\/[\w./-]+)`/g)) {
        if (!existsSync(join(ROOT, m[1]))) missing.push(`${file}: ${m[1]}`);
      }
    }
    expect(missing).toEqual([]);
  });

  test("nothing points outside the repository", () => {
    const outside: string[] = [];
    for (const file of DOC_FILES) {
      const text = read(file);
      for (const needle of ["../shared", "shared/reference", "shared/spec"]) {
        if (text.includes(needle)) outside.push(`${file}: ${needle}`);
      }
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1].split("#")[0];
        if (target === "" || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        if (relative(ROOT, resolve(ROOT, dirname(file), target)).startsWith("..")) outside.push(`${file}: ${m[1]}`);
      }
    }
    expect(outside).toEqual([]);
  });
});
