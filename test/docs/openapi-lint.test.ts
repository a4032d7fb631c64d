// Redocly's `recommended` ruleset, run on the document the app serves: strict tools and client
// generators read /openapi.json, so an error there is a bug. Offline: telemetry and update checks off.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestContext } from "../helpers/context";

const REDOCLY = join(import.meta.dir, "../../node_modules/.bin/redocly");

interface Problem {
  ruleId: string;
  severity: "error" | "warn";
  message: string;
  location: { pointer: string }[];
}

async function lint(document: string) {
  const dir = mkdtempSync(join(tmpdir(), "pigeon-openapi-"));
  try {
    const file = join(dir, "openapi.json");
    writeFileSync(file, document);
    // Output goes to files rather than pipes: under a full run, Bun's pipe polling once failed with
    // EBADF (epoll_ctl) before Redocly had said anything.
    const outFile = join(dir, "report.json");
    const proc = Bun.spawn([REDOCLY, "lint", "--extends=recommended", "--format=json", "--max-problems=10000", file], {
      env: { PATH: process.env.PATH ?? "", HOME: dir, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
      stdout: Bun.file(outFile),
      stderr: Bun.file(join(dir, "stderr.txt")),
    });
    await proc.exited;
    const out = readFileSync(outFile, "utf8");
    return JSON.parse(out) as { totals: { errors: number; warnings: number }; problems: Problem[] };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const show = (problems: Problem[]) => problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);

describe("redocly lint --extends=recommended", () => {
  test("reports no errors on /openapi.json", async () => {
    const ctx = await createTestContext({ config: { publicUrl: null } });
    const served = await ctx.get("/openapi.json", { key: null });
    const report = await lint(served.text);
    expect(show(report.problems.filter((p) => p.severity === "error"))).toEqual([]);
    expect(report.totals.errors).toBe(0);
    // The one warning we accept: Pigeon declares no licence in its package yet.
    expect(show(report.problems.filter((p) => p.severity === "warn" && p.ruleId !== "info-license"))).toEqual([]);
  });

  test("the linter is really looking: a 3.0 `nullable` in the document is an error", async () => {
    const ctx = await createTestContext();
    const doc = (await ctx.get("/openapi.json", { key: null })).body;
    doc.components.schemas.Error.properties.message.nullable = true;
    const report = await lint(JSON.stringify(doc));
    expect(report.problems.some((p) => p.severity === "error" && p.message.includes("nullable"))).toBe(true);
  });
});
