// Erasing one person's data from the dashboard, in Chromium against the compiled binary and a
// simulated phone: a contact's "Erase data" and a conversation's button lead to a confirmation page
// (checked for accessibility); "Keep it" erases nothing; the confirmation erases the contact, the
// messages and the conversation, keeps the opt-out in force, and is audited under the user, never
// with the number. The person's data can be downloaded from the same page first.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { waitFor } from "../test/helpers/api";
import type { Credentials, RunningServer } from "../test/helpers/binary";
import { readDb } from "../test/helpers/crash-setup";
import { CHROMIUM, chromiumAvailable, judgePage, navTo, startDashboard, type DashboardRig } from "../test/helpers/dashboard";

if (!chromiumAvailable) console.warn(`dashboard-privacy: ${CHROMIUM} is missing; skipping`);

const EMAIL = "owner@example.com";
const PASSWORD = "a long enough secret";
const ADA = "+14155552671";
const CAROL = "+14155550777";

describe.skipIf(!chromiumAvailable)("erasing a person's data from the dashboard", () => {
  let rig: DashboardRig;
  let server: RunningServer;
  let key: Credentials;
  let page: Page;
  let problems: string[];

  const sentTo = async (phone: string) =>
    (await server.api(`/v1/api/notification/list?recipient=${encodeURIComponent(phone)}`, key)).body.data.pagination.total as number;

  beforeAll(async () => {
    rig = await startDashboard({ email: EMAIL, password: PASSWORD });
    ({ server, key, page, problems } = rig);
    const phone = await rig.pairPhone(["--delay", "200", "--name", "Shop phone", "--inbound", "Please forget me", "--from", CAROL]);
    await waitFor("the received SMS", () => phone.output().includes("posted"), { detail: phone.output });
    expect((await server.api("/v1/api/contact/create", key, { name: "Ada Lovelace", phone: ADA })).status).toBe(200);
    expect((await server.api("/v1/api/sms/send", key, { recipient_contact: ADA, message: "Your order is ready" })).status).toBe(200);
    expect((await server.api("/v1/api/optout/add", key, { phone: ADA, reason: "asked at the counter" })).status).toBe(200);
  });

  afterAll(async () => {
    await rig?.stop();
  });

  test("a contact's Erase data asks first; Keep it erases nothing", async () => {
    await navTo(page, "Contacts");
    await page.getByRole("link", { name: "Erase data about Ada Lovelace" }).click();
    expect(await page.getByRole("heading", { name: `Erase all data about ${ADA}?` }).isVisible()).toBe(true);
    expect(await page.getByRole("link", { name: "Download this person's data first" }).getAttribute("href")).toBe(
      `/dashboard/privacy/export?phone=${encodeURIComponent(ADA)}`,
    );
    await judgePage(page, "privacy-erase");
    await page.getByRole("link", { name: "Keep it" }).click();
    expect(new URL(page.url()).pathname).toBe("/dashboard/contacts");
    expect((await server.api("/v1/api/contact/list", key)).body.data.contacts).toHaveLength(1);
    expect(await sentTo(ADA)).toBe(1);
  });

  test("the download holds the person's data as JSON", async () => {
    const res = await page.request.get(`${server.url}/dashboard/privacy/export?phone=${encodeURIComponent(ADA)}`);
    expect(res.status()).toBe(200);
    expect(res.headers()["content-disposition"]).toContain("attachment");
    const data = await res.json();
    expect(data.phone).toBe(ADA);
    expect(data.contacts[0].name).toBe("Ada Lovelace");
    expect(data.notifications).toHaveLength(1);
    expect(data.opt_out.opted_out).toBe(true);
  });

  test("confirming erases the contact and the messages; the opt-out still holds; the audit names the user, not the number", async () => {
    await page.getByRole("link", { name: "Erase data about Ada Lovelace" }).click();
    await page.getByRole("button", { name: `Erase all data about ${ADA}` }).click();
    expect(new URL(page.url()).pathname).toBe("/dashboard/contacts");
    expect(await page.getByRole("status").first().innerText()).toContain(`All data about ${ADA} erased: 1 message(s)`);
    expect((await server.api("/v1/api/contact/list", key)).body.data.contacts).toHaveLength(0);
    expect(await sentTo(ADA)).toBe(0);
    const refused = await server.api("/v1/api/sms/send", key, { recipient_contact: ADA, message: "Hello again" });
    expect(refused.status).toBe(403);
    expect(refused.body.data.error_code).toBe("recipient_opted_out");
    const audit = readDb(
      rig.dataDir,
      (db) => db.query("SELECT actor, counts FROM erasure_log").all() as { actor: string; counts: string }[],
    );
    expect(audit).toHaveLength(1);
    expect(audit[0].actor).toMatch(/^user:\d+$/);
    expect(JSON.parse(audit[0].counts)).toMatchObject({ contacts: 1, notifications: 1 });
    expect(JSON.stringify(audit)).not.toContain("4155552671");
  });

  test("a conversation's button erases that person's conversation and goes back to the inbox", async () => {
    await navTo(page, "Inbox");
    await page.locator(".threads li", { hasText: CAROL }).getByRole("link").click();
    await page.getByRole("link", { name: `Erase all data about ${CAROL}` }).click();
    await page.getByRole("button", { name: `Erase all data about ${CAROL}` }).click();
    expect(new URL(page.url()).pathname).toBe("/dashboard/inbox");
    expect(await page.getByRole("status").first().innerText()).toContain(`All data about ${CAROL} erased`);
    expect(await page.locator(".threads li", { hasText: CAROL }).count()).toBe(0);
    const threads = (await server.api("/v1/api/thread/list", key)).body.data.threads as { peer: string }[];
    expect(threads.some((t) => t.peer === CAROL)).toBe(false);
  });

  test("a number that is not one is refused on the confirmation page, and nothing failed in the pages", async () => {
    const res = await page.request.get(`${server.url}/dashboard/privacy/erase?phone=12`);
    expect(res.status()).toBe(400);
    expect(problems.filter((p) => !p.includes("400"))).toEqual([]);
  });
});
