// Every route the app mounts that a key can reach (auth apiKey, smsgate or twilio), called with a
// key holding every scope but the one the route declares: 403 key_scope_denied naming it; and with
// that scope alone: anything but key_scope_denied. The list comes from the app's own routes, so a
// route added later is swept without anyone remembering it; a keyed route must declare its scope.
import { describe, expect, test } from "bun:test";
import { KEY_SCOPES, type KeyScope } from "../../src/core/scopes";
import { declaredKindsOf, declaredScopesOf, KEYED_KINDS, scopeTable } from "../../src/http/declared-auth";
import { createTestContext } from "../helpers/context";

const ctx = await createTestContext();
await ctx.services.accounts.upsertPlan({
  code: "owner",
  name: "Owner",
  monthlySmsLimit: null,
  requestsPerMinute: 1_000_000,
  requestsPerDay: 10_000_000,
});
const { account_sid: sid } = await ctx.services.twilio.credentials(ctx.workspace.id);
const keyed = ctx.app.routes.filter((r) => KEYED_KINDS.includes(declaredKindsOf(r as never)[0]));
const table = scopeTable(ctx.app.routes as never);

const keys = new Map<string, Awaited<ReturnType<typeof ctx.services.accounts.createKey>>>();
async function keyOf(scopes: KeyScope[]) {
  const name = scopes.join(",");
  let key = keys.get(name);
  if (!key) {
    key = await ctx.services.accounts.createKey(name, ctx.workspace.id, { scopes });
    keys.set(name, key);
  }
  return key;
}

/** Every scope but `scope` (and but admin, which implies them all). */
const without = (scope: KeyScope) => KEY_SCOPES.filter((s) => s !== scope && s !== "admin");

async function call(route: { method: string; path: string }, kind: string, scopes: KeyScope[]) {
  const key = await keyOf(scopes);
  const path = route.path.replace(":AccountSid", sid).replace(/:[^/]+/g, "1");
  const headers: Record<string, string> =
    kind === "apiKey"
      ? { authorization: `Bearer ${key.api_key}`, "x-api-secret": key.api_secret }
      : { authorization: `Basic ${btoa(`${key.api_key}:${key.api_secret}`)}` };
  const body = ["GET", "DELETE"].includes(route.method) ? undefined : "{}";
  if (body) headers["content-type"] = "application/json";
  const res = await ctx.app.handle(new Request(`http://localhost${path}`, { method: route.method, headers, body }));
  const text = await res.text();
  return { status: res.status, text };
}

describe("the key-scope sweep", () => {
  test("every keyed route declares exactly one scope", () => {
    expect(keyed.length).toBeGreaterThan(150);
    const wrong = keyed.filter((r) => declaredScopesOf(r as never).length !== 1).map((r) => `${r.method} ${r.path}`);
    expect(wrong).toEqual([]);
    // Every scope is needed somewhere.
    expect(new Set([...table.values()].filter((s) => s !== null))).toEqual(new Set(KEY_SCOPES) as never);
  });

  test("without its scope each route answers 403 key_scope_denied naming it; with it, never that", async () => {
    let swept = 0;
    for (const route of keyed) {
      const scope = table.get(`${route.method} ${route.path}`);
      if (scope === null || scope === undefined) continue;
      const kind = declaredKindsOf(route as never)[0];
      const name = `${route.method} ${route.path}`;
      const denied = await call(route, kind, without(scope));
      expect({ name, status: denied.status }).toEqual({ name, status: 403 });
      expect((JSON.parse(denied.text) as { message: string }).message, name).toContain(`lacks the scope "${scope}"`);
      if (kind !== "twilio") expect(denied.text, name).toContain("key_scope_denied");
      const allowed = await call(route, kind, [scope]);
      expect(allowed.text, name).not.toContain("key_scope_denied");
      expect(allowed.text, name).not.toContain("lacks the scope");
      swept++;
    }
    expect(swept).toBeGreaterThan(140);
  }, 120_000);

  test("the routes any key may call are only SMSGate's token routes and the server's own facts", () => {
    const open = keyed.filter((r) => table.get(`${r.method} ${r.path}`) === null).map((r) => `${r.method} ${r.path}`);
    for (const name of open) expect(name).toMatch(/\/auth\/token|\/v1\/api\/server-info$|\/v1\/api\/project\/list$/);
  });
});
