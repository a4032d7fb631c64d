// The dashboard's Credits and Account pages in Chromium against the compiled binary: the owner tops
// up (a bad amount refused beside the field) and sees it in the ledger; the owner adds a member
// (errors beside the email and password) who can then sign in; a member sees neither form and a
// forged post of either is refused 403 with nothing changed; the month's SMS usage counts a message
// sent through a simulated phone.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { runCommand, type Credentials, type RunningServer } from "../test/helpers/binary";
import {
  CHROMIUM,
  chromiumAvailable,
  judgePage,
  navTo,
  signInThroughForm,
  startDashboard,
  watchProblems,
  type DashboardRig,
} from "../test/helpers/dashboard";

if (!chromiumAvailable) console.warn(`dashboard-account: ${CHROMIUM} is missing; skipping`);

const EMAIL = "owner@example.com";
const PASSWORD = "a long enough secret";
const MEMBER = "clerk@example.com";
const MEMBER_PASSWORD = "the clerk's own secret";

describe.skipIf(!chromiumAvailable)("the Credits and Account pages", () => {
  let rig: DashboardRig;
  let bin: string;
  let dataDir: string;
  let server: RunningServer;
  let key: Credentials;
  let browser: Browser;
  let page: Page;
  let member: Page;
  let problems: string[];

  beforeAll(async () => {
    rig = await startDashboard({ email: EMAIL, password: PASSWORD });
    ({ bin, dataDir, server, key, browser, page, problems } = rig);
    await rig.pairPhone(["--name", "Desk phone"]);
  });
  afterAll(async () => {
    await rig?.stop();
  });
  const balance = async () => (await server.api("/v1/api/stats/credits", key)).body.data.balance as number;
  /** Posts a form as the page's browser (its cookies), with the CSRF token the page carries. */
  async function forge(p: Page, path: string, form: Record<string, string>) {
    const csrf = (await p.locator('meta[name="csrf-token"]').getAttribute("content"))!;
    return p.request.post(`${server.url}${path}`, { form: { _csrf: csrf, ...form }, maxRedirects: 0 });
  }

  test("the owner tops up, a bad amount is refused beside the field, and the ledger shows both moves", async () => {
    await navTo(page, "Credits");
    expect(await page.locator("#balance").innerText()).toBe("0");
    expect(await page.locator(".empty").innerText()).toContain("No entries yet. Top up above");
    await judgePage(page, "credits-empty");

    await page.getByLabel("Credits to add").fill("0");
    await page.getByRole("button", { name: "Add credits" }).click();
    expect(await page.locator("#c-amount-error").innerText()).toContain("Enter a whole number of credits other than 0");
    expect(await page.getByLabel("Credits to add").getAttribute("aria-invalid")).toBe("true");

    await page.getByLabel("Credits to add").fill("500");
    await page.getByLabel("Note (optional)").fill("Invoice 2026-11");
    await page.getByRole("button", { name: "Add credits" }).click();
    await page.waitForURL(`${server.url}/dashboard/credits`);
    expect(await page.getByRole("status").first().innerText()).toBe("Added 500 credits; the balance is 500.");
    expect(await page.locator("#balance").innerText()).toBe("500");
    expect(await balance()).toBe(500);

    // Taking off more than there is: the service's rule, in words, beside the amount.
    await page.getByLabel("Credits to add").fill("-600");
    await page.getByRole("button", { name: "Add credits" }).click();
    expect(await page.locator("#c-amount-error").innerText()).toBe("The balance cannot go below zero (it would be -100).");
    expect(await balance()).toBe(500);

    await page.getByLabel("Credits to add").fill("-20");
    await page.getByLabel("Note (optional)").fill("Correction");
    await page.getByRole("button", { name: "Add credits" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe("Took off 20 credits; the balance is 480.");
    const rows = page.locator("tbody tr");
    expect(await rows.count()).toBe(2);
    expect(await rows.nth(0).innerText()).toMatch(/adjustment\s+-20\s+Correction/);
    expect(await rows.nth(1).innerText()).toMatch(/top-up\s+\+500\s+Invoice 2026-11/);
    await judgePage(page, "credits");
  });

  test("the ledger pages: 25 entries a page, the oldest on the last", async () => {
    for (let i = 1; i <= 24; i++)
      expect((await forge(page, "/dashboard/credits", { amount: "1", note: `Small top-up ${i}` })).status()).toBe(303);
    await page.reload();
    expect(await page.getByRole("status").first().innerText()).toBe("Added 1 credit; the balance is 504.");
    expect(await page.locator("#balance").innerText()).toBe("504");
    expect(await page.locator("tbody tr").count()).toBe(25);
    expect(await page.locator("tbody tr").first().innerText()).toContain("Small top-up 24");
    expect(await page.getByRole("link", { name: "Newer entries" }).count()).toBe(0);
    await page.getByRole("link", { name: "Older entries" }).click();
    expect(await page.locator("tbody tr").count()).toBe(1);
    expect(await page.locator("tbody tr").innerText()).toContain("Invoice 2026-11");
    expect(await page.getByRole("link", { name: "Older entries" }).count()).toBe(0);
    await page.getByRole("link", { name: "Newer entries" }).click();
    expect(await page.locator("tbody tr").count()).toBe(25);
  });

  test("the account shows the plan, and the month's usage counts a sent SMS", async () => {
    await navTo(page, "Account");
    expect(await page.locator("#plan-title").innerText()).toBe("Plan: Owner (unlimited)");
    expect(await page.locator("#sms-usage").innerText()).toBe("0 SMS this month; the plan has no monthly limit.");
    const sent = await server.api("/v1/api/sms/send", key, { recipient_contact: "+14155550123", message: "Your table is ready" });
    expect(sent.status).toBe(200);
    await page.reload();
    expect(await page.locator("#sms-usage").innerText()).toBe("1 SMS this month; the plan has no monthly limit.");
    expect(await page.getByRole("region", { name: "Workspaces" }).innerText()).toContain("Default");
    expect(await page.locator(".empty").innerText()).toContain("Only you so far");
    // On a plan with a monthly allowance the page counts against it (and back for the tests after).
    expect((await runCommand(bin, ["accounts", "set-plan", "1", "--plan", "free"], { PIGEON_DATA_DIR: dataDir })).code).toBe(0);
    await page.reload();
    expect(await page.locator("#plan-title").innerText()).toBe("Plan: Free");
    expect(await page.locator("#sms-usage").innerText()).toBe("1 of 10 SMS this month.");
    expect(await page.locator("meter").getAttribute("value")).toBe("1");
    await judgePage(page, "account-free-plan");
    expect((await runCommand(bin, ["accounts", "set-plan", "1", "--plan", "owner"], { PIGEON_DATA_DIR: dataDir })).code).toBe(0);
  });

  test("the owner adds a member: errors beside the password and the email, then the member is listed", async () => {
    await page.getByLabel("Email").fill(MEMBER);
    await page.getByLabel("Password", { exact: true }).fill("short");
    // The browser's own minlength check would stop the form; the server's is the one under test.
    await page.locator("#m-password").evaluate((e) => e.removeAttribute("minlength"));
    await page.getByRole("button", { name: "Add member" }).click();
    expect(await page.locator("#m-password-error").innerText()).toBe("The password needs at least 10 characters.");
    expect(await page.getByLabel("Email").inputValue()).toBe(MEMBER);

    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password", { exact: true }).fill(MEMBER_PASSWORD);
    await page.getByRole("button", { name: "Add member" }).click();
    expect(await page.locator("#m-email-error").innerText()).toBe(`A user with the email ${EMAIL} already exists.`);

    await page.getByLabel("Email").fill(MEMBER);
    await page.getByLabel("Password", { exact: true }).fill(MEMBER_PASSWORD);
    await page.getByLabel("Role").selectOption("member");
    await page.getByRole("button", { name: "Add member" }).click();
    await page.waitForURL(`${server.url}/dashboard/account`);
    expect(await page.getByRole("status").first().innerText()).toContain(`Added ${MEMBER} as member.`);
    const row = page.locator("tbody tr", { hasText: MEMBER });
    expect(await row.locator("td[data-label=Role]").innerText()).toBe("member");
    await judgePage(page, "account");
  });

  test("the member signs in and sees no top-up or member form; forged posts are refused 403", async () => {
    member = await (await browser.newContext({ viewport: { width: 1366, height: 900 } })).newPage();
    const memberProblems = watchProblems(member, server.url);
    await signInThroughForm(member, server.url, MEMBER, MEMBER_PASSWORD);
    expect(await member.locator("header .who").innerText()).toContain(`${MEMBER} (member)`);

    await navTo(member, "Credits");
    expect(await member.locator("#balance").innerText()).toBe("504");
    expect(await member.getByLabel("Credits to add").count()).toBe(0);
    expect(await member.locator("main").innerText()).toContain("Only an owner of the account can add credits");
    await judgePage(member, "credits-member");
    const topUp = await forge(member, "/dashboard/credits", { amount: "1000", note: "free money" });
    expect(topUp.status()).toBe(403);
    expect(await topUp.text()).toContain("Only an owner of the account can add credits.");
    expect(await balance()).toBe(504);

    await navTo(member, "Account");
    expect(await member.locator("#add-title").count()).toBe(0);
    expect(await member.locator("main").innerText()).toContain(EMAIL);
    await judgePage(member, "account-member");
    const add = await forge(member, "/dashboard/account/members", {
      email: "intruder@example.com",
      password: "a long enough secret",
      role: "owner",
    });
    expect(add.status()).toBe(403);
    await member.reload();
    expect(await member.locator("main").innerText()).not.toContain("intruder@example.com");
    expect(memberProblems).toEqual([]);
    await member.close();
  });

  test("nothing failed in the owner's pages but the refused forms", () => {
    expect(problems.filter((p) => !/status of (400|409)\b/.test(p))).toEqual([]);
  });
});
