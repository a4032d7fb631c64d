// The Twilio-compatible credentials on the dashboard's API keys page, in process: an owner creates
// them (the auth token shown on the next page only, and it works with the real `twilio` package),
// rotates the token (the old one stops at once), sets and clears the incoming-message URL (a URL
// Pigeon may not call is refused beside the field, what was typed kept); a member sees none of it
// and cannot post to it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import twilio from "twilio";
import { DASHBOARD_PASSWORD, dashboardRequests } from "../helpers/dashboard-requests";
import { createTestContext, type TestContext } from "../helpers/context";

const EMAIL = "owner@example.com";
const MEMBER_EMAIL = "member@example.com";

describe("the API keys page: Twilio-compatible credentials", () => {
  let ctx: TestContext;
  let server: ReturnType<typeof Bun.serve>;
  let cookie = "";
  let csrf = "";
  const { post, text, signIn } = dashboardRequests(
    () => ctx,
    () => cookie,
    "/dashboard/keys",
  );
  /** The secret the page after a redirect shows once, with the account SID beside it. */
  async function shownOnce() {
    const page = await text("/dashboard/keys");
    return {
      token: /<code class="secret" id="new-secret">([^<]+)<\/code>/.exec(page)?.[1] ?? null,
      sid: /Account SID: <code>(AC[0-9a-f]{32})<\/code>/.exec(page)?.[1] ?? null,
    };
  }
  const fetchWith = (sid: string, token: string) => {
    const c = twilio(sid, token);
    c.api.baseUrl = `http://127.0.0.1:${server.port}`;
    return c.messages.list({ limit: 1 });
  };

  beforeAll(async () => {
    ctx = await createTestContext();
    server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => ctx.app.handle(req) });
    await ctx.services.users.createUser({ email: EMAIL, password: DASHBOARD_PASSWORD });
    await ctx.services.users.createUser({ email: MEMBER_EMAIL, password: DASHBOARD_PASSWORD, role: "member" });
    ({ cookie, csrf } = await signIn(EMAIL));
  });
  afterAll(() => server?.stop(true));

  test("create, then rotate: the token is shown once each time, and only the newest works", async () => {
    expect(await text("/dashboard/keys")).toContain("No Twilio credentials yet.");
    const made = await post("/dashboard/twilio/credentials", { _csrf: csrf });
    expect(made.status).toBe(303);
    const first = await shownOnce();
    expect(first.sid).toMatch(/^AC[0-9a-f]{32}$/);
    expect(first.token).toMatch(/^[0-9a-f]{32}$/);
    // The next view of the page no longer holds it.
    const later = await text("/dashboard/keys");
    expect(later).not.toContain(first.token!);
    expect(later).toContain(`<code id="twilio-account-sid">${first.sid}</code>`);
    expect(await fetchWith(first.sid!, first.token!)).toEqual([]);

    expect((await post("/dashboard/twilio/credentials", { _csrf: csrf })).status).toBe(303);
    const second = await shownOnce();
    expect(second.sid).toBe(first.sid);
    expect(second.token).not.toBe(first.token);
    expect(await fetchWith(second.sid!, second.token!)).toEqual([]);
    const old = await fetchWith(first.sid!, first.token!).catch((e: { status: number; code: number }) => e);
    expect(old).toMatchObject({ status: 401, code: 20003 });
  });

  test("the incoming-message URL: refused beside the field with what was typed, then saved, then cleared", async () => {
    const refused = await post("/dashboard/twilio/incoming", { _csrf: csrf, url: "ftp://example.com/in" });
    expect(refused.status).toBe(400);
    const page = await refused.text();
    expect(page).toContain("must use http or https");
    expect(page).toContain('value="ftp://example.com/in"');
    expect((await ctx.services.twilio.settings(ctx.workspace.id)).incoming_url).toBeNull();

    expect((await post("/dashboard/twilio/incoming", { _csrf: csrf, url: "https://example.com/sms/in" })).status).toBe(303);
    expect((await ctx.services.twilio.settings(ctx.workspace.id)).incoming_url).toBe("https://example.com/sms/in");
    expect(await text("/dashboard/keys")).toContain('value="https://example.com/sms/in"');
    expect((await post("/dashboard/twilio/incoming", { _csrf: csrf, url: "" })).status).toBe(303);
    expect((await ctx.services.twilio.settings(ctx.workspace.id)).incoming_url).toBeNull();
  });

  test("a member sees no Twilio section and cannot change it; without the CSRF token nothing changes", async () => {
    const member = await signIn(MEMBER_EMAIL);
    expect(await text("/dashboard/keys", member.cookie)).not.toContain("Twilio-compatible API");
    const tried = await post("/dashboard/twilio/credentials", { _csrf: member.csrf }, member.cookie);
    expect(tried.status).toBe(403);
    const before = await ctx.services.twilio.credentials(ctx.workspace.id);
    expect((await post("/dashboard/twilio/credentials", {})).status).toBe(403);
    expect(await ctx.services.twilio.credentials(ctx.workspace.id)).toEqual(before);
  });
});
