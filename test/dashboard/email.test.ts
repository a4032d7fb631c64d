// The Email page of the dashboard, in process: the settings saved and read back through the API,
// a refused value shown beside its field with nothing saved, and the secret address made (its token
// shown once, then only its last characters) and removed. Both back ends.
import { beforeAll, describe, expect, test } from "bun:test";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { DASHBOARD_PASSWORD, dashboardRequests } from "../helpers/dashboard-requests";

const EMAIL = "owner@example.com";

describe("the Email page", () => {
  let ctx: TestContext;
  let cookie = "";
  let csrf = "";
  const { post, text, signIn } = dashboardRequests(
    () => ctx,
    () => cookie,
    "/dashboard/email",
  );

  beforeAll(async () => {
    ctx = await createTestContext();
    await ctx.services.users.createUser({ email: EMAIL, password: DASHBOARD_PASSWORD });
    ({ cookie, csrf } = await signIn(EMAIL));
  });

  test("says whether mail is taken and forwarded; the settings saved are what the API reads", async () => {
    const page = await text("/dashboard/email");
    expect(page).toContain("The server takes no mail");
    expect(page).toContain("No mail relay is set");
    const saved = await post("/dashboard/email", {
      _csrf: csrf,
      content: "both",
      default_country: "gb",
      senders: "Panel@Alarm.example\n@printers.example",
      forward_to: "desk@shop.example, boss@shop.example",
      reply_domain: "sms.shop.example",
      dsn: "yes",
    });
    expect(saved.status).toBe(303);
    expect(expectEnvelope(await ctx.get("/v1/api/email/settings"), 200).data).toMatchObject({
      content: "both",
      default_country: "GB",
      senders: ["panel@alarm.example", "@printers.example"],
      forward_to: ["desk@shop.example", "boss@shop.example"],
      reply_domain: "sms.shop.example",
      dsn: true,
      forward_failures: false,
    });
    expect(await text("/dashboard/email")).toMatch(/name="content" value="both" checked/);
  });

  test("a refused value is shown beside its field and nothing is saved", async () => {
    const refused = await post("/dashboard/email", { _csrf: csrf, content: "body", forward_to: "not-an-address" });
    expect(refused.status).toBe(400);
    const page = await refused.text();
    expect(page).toContain('id="e-forward-error"');
    expect(page).toContain("is not an email address");
    expect(expectEnvelope(await ctx.get("/v1/api/email/settings"), 200).data.content).toBe("both");
  });

  test("the secret address: its token shown once, then only its hint; removed, it is gone", async () => {
    expect((await post("/dashboard/email/secret", { _csrf: csrf })).status).toBe(303);
    const shown = await text("/dashboard/email");
    const token = /<code>(s[A-Za-z0-9]{31})\+15551234567@your-domain<\/code>/.exec(shown)?.[1];
    expect(token).toBeDefined();
    const again = await text("/dashboard/email");
    expect(again).not.toContain(token!);
    expect(again).toContain(`its token ends in <code>${token!.slice(-4)}</code>`);
    expect((await ctx.services.email.secretAddress(token!))?.workspaceId).toBe(ctx.workspace.id);
    expect((await post("/dashboard/email/secret/remove", { _csrf: csrf })).status).toBe(303);
    expect(await text("/dashboard/email")).toContain("There is no secret address.");
    expect(await ctx.services.email.secretAddress(token!)).toBeNull();
  });

  test("a change without the CSRF token is refused", async () => {
    const res = await post("/dashboard/email/secret", {});
    expect(res.status).toBe(403);
  });
});
