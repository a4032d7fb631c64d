// Encrypted sends on the dashboard, in process: the Safe sending page's switch says why it is off
// by default, and turning it on there lets an encrypted send through the API (403 before); the
// Messages page lists and shows such a send as ciphertext, marked encrypted.
import { beforeAll, describe, expect, test } from "bun:test";
import { SEND_PATH } from "../helpers/api";
import { appEncrypt } from "../helpers/app-encryption";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { DASHBOARD_PASSWORD, dashboardRequests } from "../helpers/dashboard-requests";
import { RECIPIENT } from "../helpers/numbers";

const EMAIL = "owner@example.com";

describe("the Safe sending page", () => {
  let ctx: TestContext;
  let cookie = "";
  let csrf = "";
  const { post, text, signIn } = dashboardRequests(
    () => ctx,
    () => cookie,
    "/dashboard/safety",
  );

  beforeAll(async () => {
    ctx = await createTestContext();
    await ctx.services.users.createUser({ email: EMAIL, password: DASHBOARD_PASSWORD });
    ({ cookie, csrf } = await signIn(EMAIL));
    await ctx.phone();
  });

  const send = () =>
    ctx.post(SEND_PATH, { recipient_contact: appEncrypt("p", RECIPIENT), message: appEncrypt("p", "Hi"), encrypted: true });

  test("the switch is off with its reason shown; ticked and saved, encrypted sends are taken; unticked, refused again", async () => {
    const page = await text("/dashboard/safety");
    expect(page).toContain("Allow end-to-end encrypted sends");
    expect(page).toContain("cannot check it against your opt-outs");
    expect(page).not.toMatch(/name="encrypted_sends" value="yes"[^>]*checked/);
    expect(expectEnvelope(await send(), 403).data.error_code).toBe("encrypted_sends_disabled");

    const saved = await post("/dashboard/safety", { _csrf: csrf, quiet_off: "yes", encrypted_sends: "yes" });
    expect(saved.status).toBe(303);
    expect(await text("/dashboard/safety")).toMatch(/name="encrypted_sends" value="yes"[^>]*checked/);
    expect(expectEnvelope(await ctx.get("/v1/api/workspace/settings"), 200).data.encrypted_sends).toBe(true);
    expectEnvelope(await send(), 200);

    expect((await post("/dashboard/safety", { _csrf: csrf, quiet_off: "yes" })).status).toBe(303);
    expect(expectEnvelope(await send(), 403).data.error_code).toBe("encrypted_sends_disabled");
  });
});

describe("the Messages page", () => {
  test("an encrypted send is listed and shown as ciphertext, marked encrypted", async () => {
    const ctx = await createTestContext();
    await ctx.services.users.createUser({ email: EMAIL, password: DASHBOARD_PASSWORD });
    let cookie = "";
    const { text, signIn } = dashboardRequests(
      () => ctx,
      () => cookie,
      "/dashboard/messages",
    );
    ({ cookie } = await signIn(EMAIL));
    await ctx.phone();
    expectEnvelope(await ctx.post("/v1/api/workspace/settings", { encrypted_sends: true }), 200);
    const recipient = appEncrypt("p", RECIPIENT);
    const message = appEncrypt("p", "Secret text");
    const id = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: recipient, message, encrypted: true }), 200).data
      .notification_id;
    const list = await text("/dashboard/messages");
    expect(list).toContain(`<span class="badge">encrypted</span> <code>${recipient.slice(0, 23)}…</code>`);
    const detail = await text(`/dashboard/messages/${id}`);
    expect(detail).toContain("only the paired phone decrypts");
    expect(detail).toContain(recipient);
    expect(detail).not.toContain(RECIPIENT);
  });
});
