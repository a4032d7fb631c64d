// The dashboard's Messages page in Chromium against the compiled binary and a simulated phone: a
// message's badge moves to "delivered" while the page stays open; filters, the CSV export, the
// detail with its attempts, and cancelling a scheduled message with its credits refunded.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { SEND_PATH } from "../test/helpers/api";
import type { RunningPhone } from "../test/helpers/simulator";
import type { Credentials, RunningServer } from "../test/helpers/binary";
import { CHROMIUM, chromiumAvailable, judgePage, navTo, startDashboard, type DashboardRig } from "../test/helpers/dashboard";

if (!chromiumAvailable) console.warn(`dashboard-messages: ${CHROMIUM} is missing; skipping`);

const EMAIL = "clerk@example.com";
const PASSWORD = "a long enough secret";

describe.skipIf(!chromiumAvailable)("the Messages page", () => {
  let rig: DashboardRig;
  let server: RunningServer;
  let key: Credentials;
  let phone: RunningPhone;
  let deviceId: number;
  let page: Page;
  let problems: string[];

  beforeAll(async () => {
    rig = await startDashboard({ email: EMAIL, password: PASSWORD, role: "member" });
    ({ server, key, page, problems } = rig);
    // Slow enough between states that the page is open before the message is delivered.
    phone = await rig.pairPhone(["--delay", "1500", "--name", "Shop phone"]);
    deviceId = (await server.api("/v1/api/device/list", key)).body.data.devices[0].device_id;
  });

  afterAll(async () => {
    await rig?.stop();
  });

  test("with nothing sent it says what to do", async () => {
    await navTo(page, "Messages");
    expect(await page.locator(".empty").innerText()).toContain("No messages match");
  });

  test("a sent SMS's badge reaches delivered without a reload", async () => {
    const sent = await server.api(SEND_PATH, key, {
      recipient_contact: "+14155552671",
      message: "Your order #12 is ready",
      device_id: deviceId,
    });
    expect(sent.status).toBe(200);
    const id = sent.body.data.notification_id;
    await page.goto(`${server.url}/dashboard/messages`);
    const badge = page.locator(`[data-status-for="${id}"]`);
    expect(await badge.innerText()).toBe("pending");
    let navigations = 0;
    page.on("framenavigated", () => navigations++);
    try {
      await badge.filter({ hasText: "delivered" }).waitFor({ timeout: 20_000 });
    } catch (error) {
      // Say where it stopped: the message's state on the server, the page's badge, the phone's log.
      const detail = (await server.api(`/v1/api/notification/${id}`, key)).body.data;
      throw new Error(`badge "${await badge.innerText()}", server ${detail.status}; phone: ${phone.output()}`, { cause: error });
    }
    expect(navigations).toBe(0);
    expect(await badge.getAttribute("class")).toBe("badge delivered");
    await judgePage(page, "messages");
  });

  test("filters narrow the list and the export carries the same rows", async () => {
    await server.api(SEND_PATH, key, { recipient_contact: "+14155550100", message: 'Another, with a "quote"', device_id: deviceId });
    await page.goto(`${server.url}/dashboard/messages`);
    expect(await page.locator("tbody tr").count()).toBe(2);
    await page.getByLabel("Text contains").fill("order #12");
    await page.getByRole("button", { name: "Filter" }).click();
    expect(await page.locator("tbody tr").count()).toBe(1);
    expect(await page.locator("tbody tr").innerText()).toContain("+14155552671");

    await page.getByLabel("Recipient").fill("not a number");
    await page.getByRole("button", { name: "Filter" }).click();
    expect(await page.getByRole("alert").innerText()).toContain("not a phone number");

    const cookie = (await page.context().cookies()).find((c) => c.name === "pigeon_session")!;
    const csv = await fetch(`${server.url}/dashboard/messages/export.csv?recipient=%2B14155550100`, {
      headers: { cookie: `pigeon_session=${cookie.value}` },
    });
    expect(csv.headers.get("content-type")).toContain("text/csv");
    const lines = (await csv.text()).trim().split("\r\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toStartWith("id,created_at,status,channel");
    expect(lines[1]).toContain('"Another, with a ""quote"""');
    // Without a session the export is not given out.
    const stranger = await fetch(`${server.url}/dashboard/messages/export.csv`, { redirect: "manual" });
    expect(stranger.status).toBe(303);
  });

  test("the detail lists the attempts, and a scheduled message can be cancelled with its credits back", async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString().slice(0, 19).replace("T", " ");
    const scheduled = await server.api(SEND_PATH, key, {
      recipient_contact: "+14155550199",
      message: "Reminder for tomorrow",
      device_id: deviceId,
      schedule_time: later,
    });
    expect(scheduled.status).toBe(200);
    const id = scheduled.body.data.notification_id;
    await page.goto(`${server.url}/dashboard/messages/${id}`);
    expect(await page.getByRole("heading", { name: `Message #${id}` }).isVisible()).toBe(true);
    await judgePage(page, "message-detail");
    await page.getByRole("button", { name: "Cancel this message" }).click();
    expect(await page.getByRole("status").first().innerText()).toContain("cancelled");
    expect(await page.locator(`[data-status-for="${id}"]`).innerText()).toBe("cancelled");
    expect(await page.getByRole("button", { name: "Cancel this message" }).count()).toBe(0);
    const detail = await server.api(`/v1/api/notification/${id}`, key);
    expect(detail.body.data.status).toBe("cancelled");
    // The delivered one shows what its phone reported, step by step.
    const first = (await server.api("/v1/api/notification/list?status=delivered", key)).body.data.notifications[0].notification_id;
    await page.goto(`${server.url}/dashboard/messages/${first}`);
    const attempts = await page.locator("section", { has: page.getByRole("heading", { name: "Attempts and reports" }) }).innerText();
    expect(attempts).toContain("delivered");
  });

  test("an unknown message is a readable 404 page, and nothing else went wrong in the page", async () => {
    const res = await page.goto(`${server.url}/dashboard/messages/999999`);
    expect(res?.status()).toBe(404);
    expect(await page.getByRole("alert").innerText()).toContain("not found");
    // The bad filter (400) and this page (404) were asked for; nothing else may have failed.
    expect(problems.filter((p) => !/status of (400|404)\b/.test(p))).toEqual([]);
  });
});
