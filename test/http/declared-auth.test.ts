// Every route declares who may call it (http/declared-auth.ts), and the declaration is what the
// foundation's early API-key gate and /openapi.json say about it.
import { describe, expect, test } from "bun:test";
import { documentedPathOf } from "../../src/docs/refine";
import { declaredKindsOf, SECURITY_OF } from "../../src/http/declared-auth";
import { needsApiKey } from "../../src/http/foundation";
import { createTestContext } from "../helpers/context";

const ctx = await createTestContext();
const spec = (await ctx.get("/openapi.json", { key: null })).body as { paths: Record<string, Record<string, { security?: unknown[] }>> };
const routes = ctx.app.routes.map((r) => ({ route: r, name: `${r.method} ${r.path}`, kinds: declaredKindsOf(r as never) }));

describe("declared auth", () => {
  test("there are routes to check, of every kind", () => {
    expect(routes.length).toBeGreaterThan(60);
    expect(new Set(routes.flatMap((r) => r.kinds))).toEqual(new Set(Object.keys(SECURITY_OF)) as never);
  });

  test("every route declares exactly one kind", () => {
    const wrong = routes.filter((r) => r.kinds.length !== 1).map((r) => `${r.name}: ${r.kinds.join(", ") || "nothing"}`);
    expect(wrong).toEqual([]);
  });

  test("the early API-key gate covers exactly the routes declared apiKey", () => {
    const disagree = routes.filter((r) => needsApiKey(r.route.path) !== (r.kinds[0] === "apiKey")).map((r) => `${r.name}: ${r.kinds[0]}`);
    expect(disagree).toEqual([]);
  });

  test("the phone's kinds are declared on the phone's routes only", () => {
    const disagree = routes
      .filter((r) => r.route.path.startsWith("/mobile/") !== r.kinds[0].startsWith("phone"))
      .map((r) => `${r.name}: ${r.kinds[0]}`);
    expect(disagree).toEqual([]);
  });

  test("each documented operation's security is its declared kind's (API-key operations inherit the document's)", () => {
    let checked = 0;
    for (const { route, name, kinds } of routes) {
      const op = spec.paths[documentedPathOf(route.path)]?.[route.method.toLowerCase()];
      if (!op) continue;
      checked++;
      const expected = kinds[0] === "apiKey" ? undefined : SECURITY_OF[kinds[0]];
      expect({ name, security: op.security }).toEqual({ name, security: expected });
    }
    expect(checked).toBe(Object.values(spec.paths).flatMap((methods) => Object.keys(methods)).length);
  });
});
