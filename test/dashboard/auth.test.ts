// The dashboard's sign-in rules, in process with a manual clock: sessions end after 30 idle days
// and on sign-out, a password change ends them all, the cookie is HttpOnly/SameSite=Lax and Secure
// under TLS, every post needs its CSRF token, the throttle counts per address and per email and
// lifts after its minute, the setup link lasts 24 hours, and another workspace's key is not found.
import { describe, expect, test } from "bun:test";
import { createTestContext } from "../helpers/context";

const EMAIL = "owner@example.com";
const PASSWORD = "a long enough secret";

type Ctx = Awaited<ReturnType<typeof createTestContext>>;

async function get(ctx: Ctx, path: string, cookie = "", base = "http://localhost") {
  return ctx.app.handle(new Request(base + path, { headers: cookie ? { cookie } : {}, redirect: "manual" }));
}

async function post(
  ctx: Ctx,
  path: string,
  fields: Record<string, string>,
  cookie = "",
  base = "http://localhost",
  headers: Record<string, string> = {},
) {
  return ctx.app.handle(
    new Request(base + path, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...(cookie ? { cookie } : {}), ...headers },
      body: new URLSearchParams(fields).toString(),
    }),
  );
}

const cookieValue = (res: Response, name: string) => new RegExp(`${name}=([^;]*)`).exec(res.headers.getSetCookie().join("\n"))?.[1] ?? null;

/** Signs in through the form as a browser would; the response and the session cookie. */
async function signIn(ctx: Ctx, email = EMAIL, password = PASSWORD, base = "http://localhost") {
  const form = await get(ctx, "/dashboard/sign-in", "", base);
  const pre = cookieValue(form, "pigeon_presession")!;
  const res = await post(ctx, "/dashboard/sign-in", { _csrf: pre, email, password }, `pigeon_presession=${pre}`, base);
  const session = cookieValue(res, "pigeon_session");
  return { res, session, cookie: `pigeon_session=${session}` };
}

async function withUser() {
  const ctx = await createTestContext();
  await ctx.services.users.createUser({ email: EMAIL, password: PASSWORD });
  return ctx;
}

describe("dashboard sign-in", () => {
  test("a session cookie is HttpOnly and SameSite=Lax, Secure only under TLS", async () => {
    const ctx = await withUser();
    const plain = await signIn(ctx);
    const header = plain.res.headers.getSetCookie().find((c) => c.startsWith("pigeon_session="))!;
    expect(header).toContain("HttpOnly");
    expect(header).toContain("SameSite=Lax");
    expect(header).not.toContain("Secure");
    const tls = await signIn(ctx, EMAIL, PASSWORD, "https://localhost");
    expect(tls.res.headers.getSetCookie().find((c) => c.startsWith("pigeon_session="))).toContain("Secure");
  });

  test("a session ends after 30 idle days, and use keeps it alive", async () => {
    const ctx = await withUser();
    const { cookie } = await signIn(ctx);
    ctx.clock.advance(29 * 86_400_000);
    expect((await get(ctx, "/dashboard", cookie)).status).toBe(200);
    ctx.clock.advance(29 * 86_400_000);
    expect((await get(ctx, "/dashboard", cookie)).status).toBe(200);
    ctx.clock.advance(30 * 86_400_000 + 1);
    const expired = await get(ctx, "/dashboard", cookie);
    expect(expired.status).toBe(303);
    expect(expired.headers.get("location")).toBe("/dashboard/sign-in");
  });

  test("a new password ends every session of the user", async () => {
    const ctx = await withUser();
    const a = await signIn(ctx);
    const b = await signIn(ctx);
    await ctx.services.users.setPassword(EMAIL, "another long secret");
    expect((await get(ctx, "/dashboard", a.cookie)).status).toBe(303);
    expect((await get(ctx, "/dashboard", b.cookie)).status).toBe(303);
  });

  test("a post without the page's CSRF token changes nothing; with it, it works", async () => {
    const ctx = await withUser();
    const { cookie, session } = await signIn(ctx);
    const before = (await ctx.services.accounts.listKeys()).length;
    expect((await post(ctx, "/dashboard/keys", { name: "Forged" }, cookie)).status).toBe(403);
    expect((await post(ctx, "/dashboard/keys", { name: "Forged", _csrf: "0".repeat(32) }, cookie)).status).toBe(403);
    expect((await ctx.services.accounts.listKeys()).length).toBe(before);
    const page = await (await get(ctx, "/dashboard/keys", cookie)).text();
    const csrf = /name="_csrf" value="([0-9a-f]{32})"/.exec(page)![1];
    expect((await post(ctx, "/dashboard/keys", { name: "Real", _csrf: csrf }, cookie)).status).toBe(303);
    expect((await ctx.services.accounts.listKeys()).length).toBe(before + 1);
    expect(session).not.toBeNull();
  });

  test("six attempts in a minute: the sixth is refused even with the right password, and the wait is shown; a minute later it works", async () => {
    const ctx = await withUser();
    for (let i = 0; i < 5; i++) expect((await signIn(ctx, EMAIL, `wrong ${i} password`)).res.status).toBe(401);
    const sixth = await signIn(ctx);
    expect(sixth.res.status).toBe(429);
    expect(sixth.session).toBeNull();
    expect(await sixth.res.text()).toMatch(/Wait \d+ seconds/);
    expect(Number(sixth.res.headers.get("retry-after"))).toBeGreaterThan(0);
    ctx.clock.advance(60_001);
    expect((await signIn(ctx)).res.status).toBe(303);
  });

  test("the setup link makes the owner once, and not after 24 hours", async () => {
    const ctx = await createTestContext();
    const owner = (await ctx.services.accounts.requireOwner()).id;
    const token = (await ctx.services.users.issueSetupToken(owner))!;
    ctx.clock.advance(24 * 3_600_000 + 1);
    expect((await get(ctx, `/dashboard/setup?token=${token}`)).status).toBe(410);
    const fresh = (await ctx.services.users.issueSetupToken(owner))!;
    // The earlier link stopped working when a new one was issued.
    expect(await ctx.services.users.setupValid(token)).toBe(false);
    const form = await get(ctx, `/dashboard/setup?token=${fresh}`);
    expect(form.status).toBe(200);
    const pre = cookieValue(form, "pigeon_presession")!;
    const made = await post(
      ctx,
      "/dashboard/setup",
      { _csrf: pre, token: fresh, email: EMAIL, password: PASSWORD, confirm: PASSWORD },
      `pigeon_presession=${pre}`,
    );
    expect(made.status).toBe(303);
    expect(await ctx.services.users.listUsers()).toMatchObject([{ email: EMAIL, role: "owner" }]);
    expect((await get(ctx, `/dashboard/setup?token=${fresh}`)).status).toBe(410);
    // And no new link while the account has a user.
    expect(await ctx.services.users.issueSetupToken(owner)).toBeNull();
  });

  test("another workspace's key cannot be rotated or disabled from this session", async () => {
    const ctx = await withUser();
    const other = await ctx.otherWorkspace("Elsewhere");
    const { cookie } = await signIn(ctx);
    const page = await (await get(ctx, "/dashboard/keys", cookie)).text();
    const csrf = /name="_csrf" value="([0-9a-f]{32})"/.exec(page)![1];
    const res = await post(ctx, `/dashboard/keys/${other.key.key_id}/disable`, { _csrf: csrf }, cookie);
    expect(res.status).toBe(404);
    expect((await ctx.services.accounts.listKeys(other.workspace.id))[0].status).toBe("active");
  });

  test("pages carry a CSP with no inline script and no framing", async () => {
    const ctx = await withUser();
    const { cookie } = await signIn(ctx);
    const pages: [string, string][] = [["/dashboard/sign-in", ""]];
    for (const path of [
      "/dashboard",
      "/dashboard/keys",
      "/dashboard/messages",
      "/dashboard/send",
      "/dashboard/devices",
      "/dashboard/inbox",
      "/dashboard/bulk",
    ])
      pages.push([path, cookie]);
    for (const [path, as] of pages) {
      const res = await get(ctx, path, as);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("script-src 'self'");
      const html = await res.text();
      // No inline script or style attribute that the policy would block.
      expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
      expect(html).not.toMatch(/\sstyle="/);
      expect(html).not.toMatch(/\son[a-z]+="/);
    }
  });
});

describe("dashboard assets", () => {
  test("every page's script and style together stay under 150 KB gzipped, served from the binary with long caching", async () => {
    const ctx = await withUser();
    const { cookie } = await signIn(ctx);
    const html = await (await get(ctx, "/dashboard/send", cookie)).text();
    const paths = [...html.matchAll(/(?:src|href)="(\/dashboard\/assets\/[^"]+)"/g)].map((m) => m[1]);
    expect(paths.length).toBe(3);
    let gzipped = 0;
    for (const path of paths) {
      const res = await get(ctx, path);
      expect(res.status).toBe(200);
      expect(res.headers.get("cache-control")).toContain("immutable");
      gzipped += Bun.gzipSync(new Uint8Array(await res.arrayBuffer())).length;
    }
    expect(gzipped).toBeLessThan(150 * 1024);
    expect((await get(ctx, "/dashboard/assets/app.000000000000.css")).status).toBe(404);
  });
});

describe("workspaces", () => {
  test("a user switches between its account's workspaces, and only those", async () => {
    const ctx = await withUser();
    const other = await ctx.otherWorkspace("Second shop");
    const { cookie } = await signIn(ctx);
    const page = await (await get(ctx, "/dashboard/keys", cookie)).text();
    expect(page).toContain("Second shop");
    const csrf = /name="_csrf" value="([0-9a-f]{32})"/.exec(page)![1];
    expect((await post(ctx, "/dashboard/workspace", { _csrf: csrf, workspace_id: String(other.workspace.id) }, cookie)).status).toBe(303);
    // The keys page now lists the second workspace's key only.
    const keys = await (await get(ctx, "/dashboard/keys", cookie)).text();
    expect(keys).toContain(other.key.api_key);
    expect(keys).not.toContain(ctx.key.api_key);
    // Another account's workspace is not one to switch to.
    const stranger = (await ctx.services.accounts.createAccount("Stranger")).workspace;
    expect((await post(ctx, "/dashboard/workspace", { _csrf: csrf, workspace_id: String(stranger.id) }, cookie)).status).toBe(404);
  });
});
