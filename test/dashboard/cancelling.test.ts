// The dashboard's cancel of a message the paired phone (app 1.67.0+) has downloaded, in process: the
// form's notice says the phone decides, the message reads `cancelling` on its page and in the list
// (no second cancel button), then `cancelled` once the phone dropped it.
import { describe, expect, test } from "bun:test";
import { smsSender } from "../helpers/api";
import { createTestContext, type TestContext } from "../helpers/context";
import { DASHBOARD_PASSWORD, dashboardRequests } from "../helpers/dashboard-requests";
import { mobile, pairMobile } from "../helpers/mobile";
import { RECIPIENT } from "../helpers/numbers";

describe("the dashboard's cancel of a downloaded message", () => {
  test("cancelling while the phone decides, cancelled after", async () => {
    const ctx: TestContext = await createTestContext();
    let cookie = "";
    const { post, text, signIn } = dashboardRequests(
      () => ctx,
      () => cookie,
      "/dashboard/messages",
    );
    await ctx.services.users.createUser({ email: "owner@example.com", password: DASHBOARD_PASSWORD });
    const session = await signIn("owner@example.com");
    cookie = session.cookie;
    const phone = await pairMobile(ctx);
    const id = await smsSender({ recipient_contact: RECIPIENT, message: "Drop me" })(ctx);
    const [m] = (await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json;

    expect(await text(`/dashboard/messages/${id}`)).toContain("Cancel this message");
    expect((await post(`/dashboard/messages/${id}/cancel`, { _csrf: session.csrf })).status).toBe(303);
    const page = await text(`/dashboard/messages/${id}`);
    expect(page).toContain("has been told to drop it");
    expect(page).toContain(`<span class="badge cancelling" data-status-for="${id}">cancelling</span>`);
    expect(page).not.toContain("Cancel this message");
    expect(await text("/dashboard/messages")).toContain(`data-status-for="${id}">cancelling</span>`);

    await mobile(ctx, "PATCH", "/message", {
      auth: phone.bearer,
      body: [{ id: m.id, state: "Cancelled", recipients: [{ phoneNumber: RECIPIENT, state: "Cancelled" }], states: {} }],
    });
    expect(await text(`/dashboard/messages/${id}`)).toContain(`<span class="badge cancelled" data-status-for="${id}">cancelled</span>`);
  });
});
