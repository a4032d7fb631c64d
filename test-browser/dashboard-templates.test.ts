// The dashboard's Templates pages in Chromium against the compiled binary: creating an SMS template
// with variables (and the service's refusals beside their fields), editing it, deleting it after the
// confirmation page, and chat-app templates synced from the fake platform shown read-only with their
// platform status and language, refused by the server when an edit or delete is posted anyway.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import type { Credentials, RunningServer } from "../test/helpers/binary";
import { CHROMIUM, chromiumAvailable, judgePage, navTo, startDashboard, type DashboardRig } from "../test/helpers/dashboard";
import { bakeryWaba, startFakeChatApp, type FakeChatApp } from "../test/helpers/fake-chatapp";

if (!chromiumAvailable) console.warn(`dashboard-templates: ${CHROMIUM} is missing; skipping`);

const EMAIL = "owner@example.com";
const PASSWORD = "a long enough secret";

interface ApiTemplate {
  template_id: number;
  name: string;
  code: string;
  body: string;
  channel: string;
  status: string;
  variables: string[];
  is_system: number;
  language: string | null;
}

describe.skipIf(!chromiumAvailable)("the Templates pages", () => {
  let rig: DashboardRig;
  let fake: FakeChatApp;
  let server: RunningServer;
  let key: Credentials;
  let page: Page;
  let problems: string[];

  const apiTemplates = async () => (await server.api("/v1/api/template/list?limit=100", key)).body.data.templates as ApiTemplate[];
  const own = async () => (await apiTemplates()).filter((t) => t.is_system === 0 && t.channel === "sms");

  beforeAll(async () => {
    fake = startFakeChatApp({
      appSecret: "dash-app-secret",
      wabas: [
        bakeryWaba([
          {
            name: "pedido_pronto",
            language: "pt_BR",
            status: "PENDING",
            components: [{ type: "BODY", text: "Olá {{1}}, seu pedido está pronto." }],
          },
        ]),
      ],
    });
    rig = await startDashboard({
      email: EMAIL,
      password: PASSWORD,
      env: { PIGEON_CHATAPP_GRAPH_URL: fake.url, PIGEON_CHATAPP_APP_SECRET: "dash-app-secret", PIGEON_CHATAPP_VERIFY_TOKEN: "dash-verify" },
    });
    ({ server, key, page, problems } = rig);
  });

  afterAll(async () => {
    await rig?.stop();
    fake?.stop();
  });

  test("before any template of its own the page says how to make one; system templates have no edit button", async () => {
    await navTo(page, "Templates");
    expect(await page.locator(".notice").innerText()).toContain("make your own with New template");
    const system = (await apiTemplates()).filter((t) => t.is_system === 1);
    expect(system.length).toBeGreaterThan(0);
    const row = page.locator("tr", { hasText: system[0].code });
    expect(await row.innerText()).toContain("system template, read-only");
    expect(await row.getByRole("link", { name: /Edit|Delete/ }).count()).toBe(0);
    await judgePage(page, "templates-system");
  });

  test("a template with variables is created; the code is made from the name", async () => {
    await page.getByRole("link", { name: "New template" }).click();
    await judgePage(page, "template-new");
    await page.getByLabel("Name").fill("Pickup notice");
    await page.getByLabel("Body").fill("Hi {{name}}, order {{order_id}} is ready for {{name}}.");
    await page.getByRole("button", { name: "Create template" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe(
      'Template "Pickup notice" created with code PICKUP_NOTICE and variables name, order_id.',
    );
    expect(await own()).toEqual([
      expect.objectContaining({ name: "Pickup notice", code: "PICKUP_NOTICE", variables: ["name", "order_id"], status: "active" }),
    ]);
    const row = page.locator("tr", { hasText: "PICKUP_NOTICE" });
    expect(await row.innerText()).toContain("name, order_id");
    expect(await row.getByRole("link", { name: "Edit Pickup notice" }).count()).toBe(1);
    await judgePage(page, "templates");
  });

  test("the service's refusals appear beside their fields: a broken variable, a taken code", async () => {
    await page.getByRole("link", { name: "New template" }).click();
    await page.getByLabel("Name").fill("Second");
    await page.getByLabel("Code (optional)").fill("PICKUP_NOTICE");
    await page.getByLabel("Body").fill("Hello {{first name}}");
    await page.getByRole("button", { name: "Create template" }).click();
    expect(await page.locator("#t-body-error").innerText()).toContain("{{first name}} is not allowed");
    expect(await page.getByLabel("Body").getAttribute("aria-invalid")).toBe("true");
    await judgePage(page, "template-new-error");
    await page.getByLabel("Body").fill("Hello {{first_name}}");
    await page.getByRole("button", { name: "Create template" }).click();
    expect(await page.locator("#t-code-error").innerText()).toContain("Template code PICKUP_NOTICE is already used");
    expect(await page.getByLabel("Name").inputValue()).toBe("Second");
    expect(await own()).toHaveLength(1);
  });

  test("editing changes the body, its variables and the status", async () => {
    await page.goto(`${server.url}/dashboard/templates`);
    await page.getByRole("link", { name: "Edit Pickup notice" }).click();
    expect(await page.getByLabel("Body").inputValue()).toBe("Hi {{name}}, order {{order_id}} is ready for {{name}}.");
    await page.getByLabel("Body").fill("Order {{order_id}} is ready at {{shop}}.");
    await page.getByLabel("Status").selectOption("disabled");
    await page.getByRole("button", { name: "Save template" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe('Template "Pickup notice" saved.');
    expect((await own())[0]).toMatchObject({
      body: "Order {{order_id}} is ready at {{shop}}.",
      variables: ["order_id", "shop"],
      status: "disabled",
      code: "PICKUP_NOTICE",
    });
    expect(await page.locator("tr", { hasText: "PICKUP_NOTICE" }).locator(".badge").innerText()).toBe("disabled");
  });

  test("delete asks first, and only the confirmation deletes", async () => {
    await page.getByRole("link", { name: "Delete Pickup notice" }).click();
    expect(await page.getByRole("heading", { level: 2 }).innerText()).toBe('Delete "Pickup notice"?');
    await judgePage(page, "template-delete");
    await page.getByRole("link", { name: "Keep it" }).click();
    expect(await own()).toHaveLength(1);
    await page.getByRole("link", { name: "Delete Pickup notice" }).click();
    await page.getByRole("button", { name: "Delete template" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe('Template "Pickup notice" deleted.');
    expect(await own()).toHaveLength(0);
    expect(await page.locator("tr", { hasText: "PICKUP_NOTICE" }).count()).toBe(0);
  });

  test("chat-app templates are listed read-only with their platform status and language, and the server refuses changes", async () => {
    expect((await server.api("/v1/api/chatapp/connect", key, { access_token: "good-token" })).status).toBe(200);
    await page.goto(`${server.url}/dashboard/templates`);
    const platform = page.locator("tr", { hasText: "managed on the platform" });
    const approved = platform.filter({ hasText: "order_ready" });
    const pending = platform.filter({ hasText: "pedido_pronto" });
    expect(await approved.innerText()).toContain("en_US");
    expect(await approved.locator(".badge").innerText()).toBe("active");
    expect(await pending.innerText()).toContain("pt_BR");
    expect(await pending.locator(".badge").innerText()).toBe("pending");
    expect(await pending.innerText()).toContain("managed on the platform, read-only");
    expect(await platform.count()).toBe(2);
    expect(await platform.getByRole("link", { name: /Edit|Delete/ }).count()).toBe(0);
    await judgePage(page, "templates-chatapp");

    const chatapp = (await apiTemplates()).find((t) => t.name === "order_ready" && t.channel !== "sms")!;
    const csrf = (await page.locator('meta[name="csrf-token"]').getAttribute("content"))!;
    const edit = await page.request.get(`${server.url}/dashboard/templates/${chatapp.template_id}/edit`);
    expect(edit.status()).toBe(403);
    expect(await edit.text()).toContain("managed on the chat-app platform and cannot be changed here");
    const posted = await page.request.post(`${server.url}/dashboard/templates/${chatapp.template_id}`, {
      form: { _csrf: csrf, name: "hijack", body: "x" },
    });
    expect(posted.status()).toBe(403);
    const deleted = await page.request.post(`${server.url}/dashboard/templates/${chatapp.template_id}/delete`, { form: { _csrf: csrf } });
    expect(deleted.status()).toBe(403);
    expect((await apiTemplates()).find((t) => t.template_id === chatapp.template_id)).toMatchObject({
      name: "order_ready",
      status: "active",
    });
  });

  test("nothing failed in the pages but the refused forms", () => {
    expect(problems.filter((p) => !/status of (400|409)\b/.test(p))).toEqual([]);
  });
});
