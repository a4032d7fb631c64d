// The dashboard's Rules page in Chromium against the compiled binary: a rule without an action is
// refused beside the field, then rules are made with the form (a webhook rule's secret shown once);
// typing in the tester updates its live region as you type, without leaving the page, and without
// a script its Test button answers with the whole page; a rule moves up, is disabled and enabled,
// and is deleted after its confirmation. axe-core judges every page on a desktop and a 390 px phone.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import type { Credentials, RunningServer } from "../test/helpers/binary";
import {
  CHROMIUM,
  chromiumAvailable,
  judgePage,
  navTo,
  signInThroughForm,
  startDashboard,
  type DashboardRig,
} from "../test/helpers/dashboard";

if (!chromiumAvailable) console.warn(`dashboard-rules: ${CHROMIUM} is missing; skipping`);

const EMAIL = "owner@example.com";
const PASSWORD = "a long enough secret";
const HOOK = "http://127.0.0.1:9/rule";

describe.skipIf(!chromiumAvailable)("the Rules page", () => {
  let rig: DashboardRig;
  let server: RunningServer;
  let key: Credentials;
  let page: Page;
  let problems: string[];

  const apiRules = async () =>
    (await server.api("/v1/api/rule/list", key)).body.data.rules as { name: string; enabled: boolean; action: Record<string, unknown> }[];
  const result = () => page.locator("#test-result");
  /** Types as a person does, a key at a time, and waits for the live region to say `expected`. */
  async function typeAndSee(text: string, expected: string) {
    const message = page.getByLabel("Message", { exact: true });
    await message.fill("");
    await message.pressSequentially(text, { delay: 40 });
    await result().filter({ hasText: expected }).waitFor({ timeout: 5000 });
  }

  beforeAll(async () => {
    rig = await startDashboard({ email: EMAIL, password: PASSWORD, env: { PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1" } });
    ({ server, key, page, problems } = rig);
  });

  afterAll(async () => {
    await rig?.stop();
  });

  test("with no rule the page says how to start; a rule without an action is refused beside the field", async () => {
    await navTo(page, "Rules");
    expect(new URL(page.url()).pathname).toBe("/dashboard/rules");
    expect(await page.locator(".empty").innerText()).toContain("No rule yet.");
    await judgePage(page, "rules-empty");

    await page.getByLabel("Name", { exact: true }).fill("Prices");
    await page.getByLabel("Keywords or pattern").fill("price cost");
    const answered = page.waitForResponse((r) => r.url().endsWith("/dashboard/rules") && r.request().method() === "POST");
    await page.getByRole("button", { name: "Create rule" }).click();
    expect((await answered).status()).toBe(400);
    expect(await page.locator("#r-action-error").innerText()).toBe(
      "Give the rule something to do: a reply, a webhook URL, a number to forward to, a tag or an email address.",
    );
    // What was typed stays.
    expect(await page.getByLabel("Name", { exact: true }).inputValue()).toBe("Prices");
    expect(await apiRules()).toEqual([]);
    await judgePage(page, "rules-refused");
  });

  test("rules are made with the form and listed in order; a webhook rule's secret is shown once", async () => {
    await page.getByLabel("Reply with").fill("Our prices: example.com/prices");
    await page.getByLabel("Tag the sender's contact").fill("asked-price");
    await page.getByRole("button", { name: "Create rule" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe('Rule "Prices" created: it is tried after the rules before it.');

    await page.getByLabel("Name", { exact: true }).fill("Orders");
    await page.getByLabel("Match", { exact: true }).selectOption("regex");
    await page.getByLabel("Keywords or pattern").fill("order\\s+\\d+");
    await page.getByRole("group", { name: "Channels it hears" }).getByLabel("Chat app").uncheck();
    await page.getByLabel("Post it to a webhook URL").fill(HOOK);
    await page.getByRole("button", { name: "Create rule" }).click();
    expect(await page.getByRole("heading", { name: "Webhook signing secret" }).isVisible()).toBe(true);
    const secret = await page.locator("#new-secret").innerText();
    expect(secret).toStartWith("whsec_");

    const rules = await apiRules();
    expect(rules.map((r) => r.name)).toEqual(["Prices", "Orders"]);
    expect(rules[1]).toMatchObject({ channels: ["sms"], match: { regex: "order\\s+\\d+" }, action: { webhook: { url: HOOK } } });
    await judgePage(page, "rules");
    await page.reload();
    expect(await page.locator("#new-secret").count()).toBe(0);
    const rows = page.locator("table.rules tbody tr");
    expect(await rows.locator('td[data-label="Rule"] strong').allInnerTexts()).toEqual(["Prices", "Orders"]);
  });

  test("the tester's live region follows what is typed, without leaving the page", async () => {
    expect(await result().getAttribute("aria-live")).toBe("polite");
    expect(await result().innerText()).toBe("Type a message to see which rules it would set off.");
    const asked: string[] = [];
    page.on("request", (r) => r.url().endsWith("/dashboard/rules/test") && asked.push(r.headers()["hx-request"] ?? ""));

    await typeAndSee("Price?", "1 rule would act");
    expect(await result().innerText()).toContain("Prices");
    expect(await result().innerText()).toContain("Replies “Our prices: example.com/prices”");
    // Asked by htmx (not once per key: the delay waits for a pause), and the page stayed.
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.length).toBeLessThan("Price?".length);
    expect(new Set(asked)).toEqual(new Set(["true"]));
    expect(new URL(page.url()).pathname).toBe("/dashboard/rules");

    await typeAndSee("order 42 arrived?", "Orders");
    expect(await result().innerText()).toContain(`Posts to ${HOOK}`);
    // "Orders" hears SMS only.
    await page.getByLabel("Channel", { exact: true }).selectOption("chatapp");
    await result().filter({ hasText: "No rule matches." }).waitFor({ timeout: 5000 });
    await page.getByLabel("Channel", { exact: true }).selectOption("sms");

    await typeAndSee("STOP", "opt-out keyword");
    await typeAndSee("hello", "No rule matches.");
    await page.getByLabel("Sender (optional)").fill("nope");
    await typeAndSee("price", "Invalid phone number");
    await page.getByLabel("Sender (optional)").fill("");
    await typeAndSee("price", "1 rule would act");
    await judgePage(page, "rules-tested");
  });

  test("without a script the Test button answers with the whole page and the result", async () => {
    const context = await rig.browser.newContext({ viewport: { width: 390, height: 844 }, javaScriptEnabled: false });
    try {
      const bare = await context.newPage();
      await signInThroughForm(bare, server.url, EMAIL, PASSWORD);
      await bare.goto(`${server.url}/dashboard/rules`);
      await bare.getByLabel("Message", { exact: true }).fill("cost please");
      await bare.getByRole("button", { name: "Test", exact: true }).click();
      expect(new URL(bare.url()).pathname).toBe("/dashboard/rules/test");
      expect(await bare.locator("#test-result").innerText()).toContain("1 rule would act");
      expect(await bare.getByLabel("Message", { exact: true }).inputValue()).toBe("cost please");
    } finally {
      await context.close();
    }
  });

  test("a rule moves up, is disabled and enabled again", async () => {
    await page.goto(`${server.url}/dashboard/rules`);
    await page.getByRole("button", { name: "Move up rule Orders" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe('Rule "Orders" is now tried 1st.');
    expect((await apiRules()).map((r) => r.name)).toEqual(["Orders", "Prices"]);
    expect(await page.locator('table.rules td[data-label="Rule"] strong').allInnerTexts()).toEqual(["Orders", "Prices"]);

    await page.getByRole("button", { name: "Disable rule Prices" }).click();
    expect((await apiRules()).find((r) => r.name === "Prices")?.enabled).toBe(false);
    expect(await page.locator("tr", { hasText: "Prices" }).locator(".badge").innerText()).toBe("disabled");
    await typeAndSee("price", "No rule matches.");
    await page.getByRole("button", { name: "Enable rule Prices" }).click();
    expect((await apiRules()).find((r) => r.name === "Prices")?.enabled).toBe(true);
  });

  test("deleting asks first: Keep it keeps the rule, the confirmation deletes it", async () => {
    await page.getByRole("link", { name: "Delete rule Orders" }).click();
    expect(await page.getByRole("heading", { name: 'Delete "Orders"?' }).isVisible()).toBe(true);
    await judgePage(page, "rule-delete");
    await page.getByRole("link", { name: "Keep it" }).click();
    expect((await apiRules()).map((r) => r.name)).toEqual(["Orders", "Prices"]);
    await page.getByRole("link", { name: "Delete rule Orders" }).click();
    await page.getByRole("button", { name: "Delete rule" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe('Rule "Orders" deleted.');
    expect((await apiRules()).map((r) => r.name)).toEqual(["Prices"]);
    // Its webhook subscription went with it.
    expect((await server.api("/v1/api/webhook/list", key)).body.data.webhooks).toEqual([]);
  });

  test("nothing failed in the pages", () => {
    // (The form sent back without an action is answered 400 on purpose; the browser logs it.)
    expect(problems.filter((p) => !p.includes("status of 400"))).toEqual([]);
  });
});
