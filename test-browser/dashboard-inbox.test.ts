// The dashboard's Inbox in Chromium against the compiled binary, a simulated phone and the fake
// chat-app platform: a received SMS shows as unread, opening it reads it, a reply goes out and
// its badge follows it; a chat-app conversation inside the 24-hour window takes free text, and one
// whose window is closed offers the approved templates instead of a text box.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { waitFor } from "../test/helpers/api";
import type { Credentials, RunningServer } from "../test/helpers/binary";
import { CHROMIUM, chromiumAvailable, judgePage, navTo, startDashboard, type DashboardRig } from "../test/helpers/dashboard";
import { bakeryWaba, startFakeChatApp, type FakeChatApp } from "../test/helpers/fake-chatapp";
import type { RunningPhone } from "../test/helpers/simulator";

if (!chromiumAvailable) console.warn(`dashboard-inbox: ${CHROMIUM} is missing; skipping`);

const EMAIL = "owner@example.com";
const PASSWORD = "a long enough secret";
const SECRET = "inbox-app-secret";

describe.skipIf(!chromiumAvailable)("the Inbox", () => {
  let rig: DashboardRig;
  let fake: FakeChatApp;
  let server: RunningServer;
  let key: Credentials;
  let phone: RunningPhone;
  let page: Page;
  let problems: string[];

  beforeAll(async () => {
    fake = startFakeChatApp({ appSecret: SECRET, autoStatuses: ["sent", "delivered"], wabas: [bakeryWaba()] });
    rig = await startDashboard({
      email: EMAIL,
      password: PASSWORD,
      env: { PIGEON_CHATAPP_GRAPH_URL: fake.url, PIGEON_CHATAPP_APP_SECRET: SECRET, PIGEON_CHATAPP_VERIFY_TOKEN: "v" },
    });
    ({ server, key, page, problems } = rig);
    fake.setWebhookUrl(`${server.url}/v1/webhooks/chatapp`);
    phone = await rig.pairPhone(["--delay", "300", "--name", "Inbox/phone", "--inbound", "Is my parcel here?", "--from", "+14155550777"]);
    await waitFor("the received SMS", () => phone.output().includes("posted"), { detail: phone.output });
  });

  afterAll(async () => {
    await rig?.stop();
    fake?.stop();
  });

  test("a chat-app number is connected from the Devices page with an access token, and a bad token is refused there", async () => {
    await page.goto(`${server.url}/dashboard/devices/chatapp`);
    await page.getByLabel("Access token").fill("not-a-token");
    await page.getByRole("button", { name: "Connect" }).click();
    expect(await page.getByRole("alert").innerText()).not.toBe("");
    await page.getByLabel("Access token").fill("good-token");
    await page.getByRole("button", { name: "Connect" }).click();
    expect(await page.getByRole("status").first().innerText()).toContain("Connected 1 business account");
    await judgePage(page, "devices-chatapp");
    const devices = (await server.api("/v1/api/device/list", key)).body.data.devices as { kind: string }[];
    expect(devices.some((d) => d.kind === "chatapp")).toBe(true);
  });

  test("a received SMS is unread until opened, and a reply goes out and is delivered", async () => {
    await navTo(page, "Inbox");
    const item = page.locator(".threads li", { hasText: "+14155550777" });
    expect(await item.innerText()).toContain("1 unread");
    expect(await item.innerText()).toContain("Is my parcel here?");
    await judgePage(page, "inbox");
    await item.getByRole("link").click();
    expect(await page.locator(".bubble.inbound").innerText()).toContain("Is my parcel here?");
    await page.getByLabel("Reply", { exact: true }).fill("Yes, it is at the counter.");
    await page.getByRole("button", { name: "Send reply" }).click();
    const mine = page.locator(".bubble.outbound", { hasText: "Yes, it is at the counter." });
    await mine.waitFor();
    await mine.locator("[data-status-for]").filter({ hasText: "delivered" }).waitFor({ timeout: 20_000 });
    await judgePage(page, "conversation");
    await page.getByRole("link", { name: "Back to the inbox" }).click();
    expect(await page.locator(".threads li", { hasText: "+14155550777" }).innerText()).not.toContain("unread");
  });

  test("a chat-app conversation inside its window takes free text", async () => {
    await fake.sendInbound({ phoneNumberId: "777", from: "14155550123", text: "Are you open today?", name: "Bob" });
    await page.goto(`${server.url}/dashboard/inbox`);
    await page.locator(".threads li", { hasText: "+14155550123" }).getByRole("link").click();
    expect(await page.locator("p.hint").first().innerText()).toContain("window is open");
    await page.getByLabel("Reply", { exact: true }).fill("Yes, until 6pm!");
    await page.getByRole("button", { name: "Send reply" }).click();
    await page.locator(".bubble.outbound", { hasText: "Yes, until 6pm!" }).waitFor();
    await waitFor("the reply at the platform", () => fake.sent.some((m) => m.type === "text" && m.to === "+14155550123"));
  });

  test("with the window closed it offers the approved templates instead of a text box", async () => {
    const template = (await server.api("/v1/api/template/list?channel=chatapp", key)).body.data.templates.find(
      (t: { name: string }) => t.name === "order_ready",
    );
    // A conversation Pigeon started: the customer never wrote, so no window is open.
    expect(
      (
        await server.api("/v1/api/chatapp/send", key, {
          recipient_contact: "+14155559999",
          template_id: template.template_id,
          variables: ["Ada", "A-1"],
        })
      ).status,
    ).toBe(200);
    await page.goto(`${server.url}/dashboard/inbox`);
    await page.locator(".threads li", { hasText: "+14155559999" }).getByRole("link").click();
    expect(await page.getByLabel("Reply", { exact: true }).count()).toBe(0);
    expect(await page.locator("p.hint").first().innerText()).toContain("window is closed");
    await page.getByLabel("Approved template").selectOption({ index: 1 });
    await page.getByLabel("Variable 1").fill("Ada");
    await page.getByLabel("Variable 2").fill("A-2");
    await judgePage(page, "conversation-template");
    await page.getByRole("button", { name: "Send reply" }).click();
    await page.locator(".bubble.outbound", { hasText: "order A-2 is ready" }).waitFor();
    // The refused token was answered 400 on purpose; nothing else may have failed.
    expect(problems.filter((p) => !/status of 400\b/.test(p))).toEqual([]);
  });
});
