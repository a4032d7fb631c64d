// The Email page in Chromium against the compiled binary with its SMTP listener on: reached from
// the menu, judged for accessibility at both sizes, a refused address shown beside its field, the
// settings saved and read back through the API, and a secret address made (the token shown once)
// that the listener then takes mail for, without a password, from an allowed sender.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import type { Credentials, RunningServer } from "../test/helpers/binary";
import { CHROMIUM, chromiumAvailable, judgePage, navTo, startDashboard, type DashboardRig } from "../test/helpers/dashboard";
import { mailText, smtplibSession, stepOf } from "../test/helpers/smtp-judge";

if (!chromiumAvailable) console.warn(`dashboard-email: ${CHROMIUM} is missing; skipping`);

describe.skipIf(!chromiumAvailable)("the Email page", () => {
  let rig: DashboardRig;
  let server: RunningServer;
  let key: Credentials;
  let page: Page;

  beforeAll(async () => {
    rig = await startDashboard({ email: "owner@example.com", password: "a long enough secret", env: { PIGEON_SMTP_PORT: "0" } });
    ({ server, key, page } = rig);
  });

  afterAll(async () => {
    await rig?.stop();
  });

  test("reached from the menu, it says mail is taken; refused values sit beside their field", async () => {
    await navTo(page, "Email");
    expect(await page.locator("h1").innerText()).toBe("Email");
    const smtpPort = /smtp on [^:\s]+:(\d+)/.exec(server.output())?.[1];
    expect(await page.locator("#email-status + p").innerText()).toContain(`The server takes mail: SMTP on port ${smtpPort}.`);
    await judgePage(page, "email");
    await page.getByLabel("Forward every received message to").fill("not-an-address");
    await page.getByRole("button", { name: "Save email settings" }).click();
    await expect(page.locator("#e-forward-error").innerText()).resolves.toContain("is not an email address");
    expect(await page.getByLabel("Forward every received message to").getAttribute("aria-invalid")).toBe("true");
    await judgePage(page, "email-refused");
  });

  test("saved settings are what the API reads; a secret address made here takes mail from an allowed sender", async () => {
    await page.getByLabel("Forward every received message to").fill("desk@shop.example");
    await page.getByLabel("Senders allowed without signing in").fill("panel@alarm.example");
    await page.getByLabel("The subject", { exact: true }).check();
    await page.getByRole("button", { name: "Save email settings" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe("Email settings saved.");
    const api = (await server.api("/v1/api/email/settings", key)).body.data;
    expect(api).toMatchObject({ content: "subject", senders: ["panel@alarm.example"], forward_to: ["desk@shop.example"] });

    await page.getByRole("button", { name: "Make a secret address" }).click();
    const shown = await page.locator("body").innerText();
    const token = /(s[A-Za-z0-9]{31})\+15551234567@your-domain/.exec(shown)?.[1];
    expect(token).toBeDefined();
    await judgePage(page, "email-secret");

    const port = Number(/smtp on [^:\s]+:(\d+)/.exec(server.output())?.[1]);
    const steps = await smtplibSession({
      port,
      tls: "none",
      from: "panel@alarm.example",
      to: [`${token}+14155552671@sms.example`],
      message: mailText({ from: "panel@alarm.example", to: "x", subject: "Zone 2 open", body: "details" }),
    });
    // No device is paired: the send is refused for that, which shows the address was opened.
    expect(stepOf(steps, "mail")?.code).toBe(250);
    expect(stepOf(steps, "rcpt")?.text).not.toContain("Relaying denied");
  });
});
