// The channel seam holds: the kinds written once in channels/kinds.ts are exactly the channels in
// CHANNELS, nothing outside a channel's folder imports from it (only the CHANNELS list does), and
// src has no import cycle (type imports included).
import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { CHANNELS } from "../src/channels";
import { DELIVERY_TYPES, DEVICE_KINDS } from "../src/channels/kinds";

const SRC = join(import.meta.dir, "../src");

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

describe("the channel seam", () => {
  test("each device kind is one channel, and each delivery type has a channel", () => {
    expect(CHANNELS.map((c) => c.kind).sort()).toEqual([...DEVICE_KINDS].sort());
    expect(new Set(CHANNELS.map((c) => c.name)).size).toBe(CHANNELS.length);
    for (const type of DELIVERY_TYPES) expect(CHANNELS.some((c) => c.deliveryType === type)).toBe(true);
  });

  test("nothing outside a channel's folder imports from it but the CHANNELS list", () => {
    const folders = ["chatapp", "sms-cloud", "sms-phone"];
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
});
