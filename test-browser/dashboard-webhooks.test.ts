// The dashboard's Webhooks pages in Chromium against the compiled binary and a receiver on
// loopback: subscribing with two events shows the signing secret once (and deliveries are signed
// with it), a test event appears in the delivery log with the receiver's status code, a failing
// receiver's answer is shown, disable and re-enable work (what waited is delivered then), and
// delete. A second server without PIGEON_ALLOW_PRIVATE_WEBHOOKS refuses a loopback URL with the
// service's message beside the field.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import type { Server } from "bun";
import type { Browser, Page } from "playwright-core";
import { waitFor } from "../test/helpers/api";
import { runCommand, startServer, tempDir, type Credentials, type RunningServer } from "../test/helpers/binary";
import {
  CHROMIUM,
  chromiumAvailable,
  judgePage,
  navTo,
  signInThroughForm,
  startDashboard,
  type DashboardRig,
} from "../test/helpers/dashboard";
import { webhookBody, webhooksBody, type WebhookView } from "../src/dashboard/pages/webhooks";

// A subscription the service marked failing after a day of retries (too slow to reach in a test
// run): both pages say so and offer the re-enable button that the disabled case exercises below.
test("a failing subscription is flagged in the list and offers Re-enable", () => {
  const failing: WebhookView = {
    webhook_id: 7,
    url: "https://example.com/hook",
    events: ["*"],
    description: "",
    status: "failing",
    consecutive_failures: 10,
    failing_since: "2026-11-20T08:00:00.000Z",
    secret_hint: "…abcd",
    created_at: "2026-11-19T08:00:00.000Z",
    updated_at: "2026-11-20T08:00:00.000Z",
  };
  const list = webhooksBody({ webhooks: [failing], eventTypes: ["message.received"], csrf: "c" }).value;
  expect(list).toContain('<span class="badge failing">failing</span>');
  expect(list).toContain("Deliveries failed for a day (since 2026-11-20 08:00:00 UTC); nothing is sent until you re-enable it.");
  expect(list).toContain("all events");
  const one = webhookBody({ w: failing, deliveries: [], page: 1, pages: 1, csrf: "c" }).value;
  expect(one).toMatch(/<input type="hidden" name="status" value="active"><button class="secondary" type="submit">Re-enable<\/button>/);
  expect(one).not.toContain(">Disable<");
});

if (!chromiumAvailable) console.warn(`dashboard-webhooks: ${CHROMIUM} is missing; skipping`);

const EMAIL = "owner@example.com";
const PASSWORD = "a long enough secret";

interface Received {
  type: string;
  signature: string;
  body: string;
}

describe.skipIf(!chromiumAvailable)("the Webhooks pages", () => {
  let rig: DashboardRig;
  let server: RunningServer;
  let strict: RunningServer;
  let key: Credentials;
  let receiver: Server<undefined>;
  // What the receiver answers next, and what it got.
  let answer = 200;
  const received: Received[] = [];
  let browser: Browser;
  let page: Page;
  let problems: string[];
  let secret = "";

  beforeAll(async () => {
    receiver = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(request) {
        received.push({
          type: request.headers.get("x-pigeon-event-type") ?? "",
          signature: request.headers.get("x-pigeon-signature") ?? "",
          body: await request.text(),
        });
        return new Response(answer === 200 ? "ok" : "receiver is down for maintenance", { status: answer });
      },
    });
    rig = await startDashboard({ email: EMAIL, password: PASSWORD, env: { PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1" } });
    ({ server, key, browser, page, problems } = rig);
    // A second server with the default guard, for the refused loopback URL.
    const strictDir = tempDir();
    expect(
      (await runCommand(rig.bin, ["users", "create", "--email", EMAIL, "--password", PASSWORD], { PIGEON_DATA_DIR: strictDir })).code,
    ).toBe(0);
    strict = await startServer(rig.bin, { PIGEON_DATA_DIR: strictDir });
  });

  afterAll(async () => {
    await rig?.stop();
    await strict?.stop("SIGKILL");
    receiver?.stop(true);
  });

  const hookUrl = () => `http://127.0.0.1:${receiver.port}/hooks/pigeon`;
  const apiHook = async () => (await server.api("/v1/api/webhook/list", key)).body.data.webhooks[0];

  test("with no webhook the page says what to do, and a subscription without events is refused beside the events", async () => {
    await navTo(page, "Webhooks");
    expect(await page.locator(".empty").innerText()).toContain("No webhook yet — subscribe a URL above");
    await judgePage(page, "webhooks-empty");
    await page.getByLabel("URL that receives the events").fill(hookUrl());
    const answered = page.waitForResponse((r) => r.url().endsWith("/dashboard/webhooks") && r.request().method() === "POST");
    await page.getByRole("button", { name: "Subscribe" }).click();
    expect((await answered).status()).toBe(400);
    expect(await page.locator("fieldset #w-events-error").innerText()).toBe("Choose at least one event.");
    // What was typed stays.
    expect(await page.getByLabel("URL that receives the events").inputValue()).toBe(hookUrl());
    expect((await server.api("/v1/api/webhook/list", key)).body.data.webhooks).toEqual([]);
  });

  test("subscribing with two events shows the secret once, and the list shows the subscription", async () => {
    await page.getByRole("group", { name: "Events" }).getByLabel("notification.delivered").check();
    await page.getByRole("group", { name: "Events" }).getByLabel("message.received").check();
    await page.getByLabel("Description (optional)").fill("Shop backend");
    await page.getByRole("button", { name: "Subscribe" }).click();
    await page.waitForURL(`${server.url}/dashboard/webhooks`);
    secret = (await page.locator("#new-secret").innerText()).trim();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9]{32}$/);
    expect(await page.getByRole("status").first().innerText()).toBe(`Subscribed ${hookUrl()}.`);
    const row = page.locator("tbody tr", { hasText: hookUrl() });
    expect(await row.innerText()).toContain("notification.delivered, message.received");
    expect(await row.locator(".badge.active").count()).toBe(1);
    expect(await apiHook()).toMatchObject({
      url: hookUrl(),
      events: ["notification.delivered", "message.received"],
      description: "Shop backend",
      status: "active",
    });
    await judgePage(page, "webhooks-created");
    await page.reload();
    expect(await page.locator("#new-secret").count()).toBe(0);
    expect(await page.content()).not.toContain(secret);
  });

  test("a test event reaches the receiver signed with that secret and shows in the log with its status code", async () => {
    await page.getByRole("link", { name: hookUrl() }).click();
    expect(await page.locator(".empty").innerText()).toContain("Nothing delivered yet — send a test event");
    await page.getByRole("button", { name: "Send a test event" }).click();
    expect(await page.getByRole("status").first().innerText()).toMatch(
      /^Test event delivered: the receiver answered HTTP 200 in \d+ ms\.$/,
    );
    const got = received.at(-1)!;
    expect(got.type).toBe("webhook.test");
    const [t, v1] = got.signature.split(",").map((p) => p.split("=")[1]);
    expect(v1).toBe(createHmac("sha256", secret).update(`${t}.${got.body}`).digest("hex"));
    const row = page.locator("table.log tbody tr").first();
    expect(await row.locator("td[data-label=Event]").innerText()).toContain("webhook.test");
    expect(await row.locator("td[data-label=Answer]").innerText()).toBe("HTTP 200");
    expect((await row.locator("td[data-label=Attempts]").innerText()).trim()).toBe("1");
    expect(await row.locator(".badge.delivered").count()).toBe(1);
    await judgePage(page, "webhook-delivered");
  });

  test("a failing receiver's answer is shown; disabled and re-enabled, what waited is delivered", async () => {
    answer = 503;
    await page.getByRole("button", { name: "Send a test event" }).click();
    const alert = await page.getByRole("alert").first().innerText();
    expect(alert).toBe("Test event not delivered: HTTP 503: receiver is down for maintenance. It will be retried like any delivery.");
    const row = page.locator("table.log tbody tr").first();
    expect(await row.locator("td[data-label=Answer]").innerText()).toContain("HTTP 503");
    expect(await row.locator("td[data-label=Answer]").innerText()).toContain("receiver is down for maintenance");
    expect(await row.locator(".badge.pending").count()).toBe(1);
    expect(await page.locator("table").first().innerText()).toContain("1 failed attempt in a row");
    expect((await apiHook()).consecutive_failures).toBe(1);
    await judgePage(page, "webhook-failing");

    await page.getByRole("button", { name: "Disable" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe("Disabled: events wait until you re-enable it.");
    expect(await page.locator("table").first().locator(".badge.disabled").count()).toBe(1);
    expect((await apiHook()).status).toBe("disabled");

    // The receiver works again; re-enabling sends the failed test event now instead of in 30 s.
    answer = 200;
    const before = received.length;
    await page.getByRole("button", { name: "Re-enable" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe("Re-enabled: events that waited are delivered now.");
    expect(await apiHook()).toMatchObject({ status: "active", consecutive_failures: 0 });
    await waitFor("the retried test event", () => received.length > before, { timeoutMs: 10_000 });
    await waitFor("the log to show it delivered", async () => {
      await page.reload();
      return (await page.locator("table.log tbody tr").first().locator(".badge.delivered").count()) === 1;
    });
    const retried = page.locator("table.log tbody tr").first();
    expect((await retried.locator("td[data-label=Attempts]").innerText()).split("\n")[0].trim()).toBe("2");
    expect(await retried.locator("td[data-label=Answer]").innerText()).toBe("HTTP 200");
    await retried.getByText("Every attempt").click();
    expect(await retried.locator("ol").innerText()).toMatch(/HTTP 503[\s\S]*HTTP 200/);
  });

  test("delete removes the subscription and the list is empty again", async () => {
    await page.getByRole("button", { name: "Delete this webhook" }).click();
    await page.waitForURL(`${server.url}/dashboard/webhooks`);
    expect(await page.getByRole("status").first().innerText()).toContain(`Deleted the webhook to ${hookUrl()}`);
    expect(await page.locator(".empty").innerText()).toContain("No webhook yet");
    expect((await server.api("/v1/api/webhook/list", key)).body.data.webhooks).toEqual([]);
  });

  test("without PIGEON_ALLOW_PRIVATE_WEBHOOKS a loopback URL is refused with the service's message beside the URL", async () => {
    const other = await (await browser.newContext({ viewport: { width: 1366, height: 900 } })).newPage();
    await signInThroughForm(other, strict.url, EMAIL, PASSWORD);
    await other.goto(`${strict.url}/dashboard/webhooks`);
    await other.getByLabel("URL that receives the events").fill(hookUrl());
    await other.getByRole("group", { name: "Events" }).getByLabel("All events, also ones added later").check();
    await other.getByRole("button", { name: "Subscribe" }).click();
    expect(await other.locator("#w-url-error").innerText()).toBe("Webhook url resolves to a private or local address (127.0.0.1)");
    expect(await other.getByLabel("URL that receives the events").getAttribute("aria-invalid")).toBe("true");
    // The choice stays ticked for the next try.
    expect(await other.getByLabel("All events, also ones added later").isChecked()).toBe(true);
    await judgePage(other, "webhooks-refused");
    await other.close();
  });

  test("nothing failed in the pages but the refused forms", () => {
    expect(problems.filter((p) => !/status of 400\b/.test(p))).toEqual([]);
  });
});
