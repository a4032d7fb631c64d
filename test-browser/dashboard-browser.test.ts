// The dashboard in Debian's headless Chromium against the compiled binary: the one-time setup link,
// sign-in and its throttle, API keys (secret shown once, rotate, disable, enable) and sign-out, with
// axe-core judging every page and screenshots at a desktop and a phone size written to
// test-artifacts/screenshots (ignored by git). Skips, saying so, without /usr/bin/chromium.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { isolatedBinary, startServer, tempDir, type RunningServer } from "../test/helpers/binary";
import { CHROMIUM, chromiumAvailable as available, judgePage, launchChromium, navTo, watchProblems } from "../test/helpers/dashboard";

if (!available) console.warn(`dashboard-browser: ${CHROMIUM} is missing (apt-get install chromium); skipping the browser checks`);
const EMAIL = "owner@example.com";
const PASSWORD = "correct horse battery";

describe.skipIf(!available)("the dashboard in a browser", () => {
  let server: RunningServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: string[] = [];

  beforeAll(async () => {
    server = await startServer(isolatedBinary(), { PIGEON_DATA_DIR: tempDir() });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
    page = await context.newPage();
    problems = watchProblems(page, server.url);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop("SIGKILL");
  });

  const judge = (name: string) => judgePage(page, name);

  test("/ leads to the dashboard, which asks a stranger to sign in", async () => {
    await page.goto(`${server.url}/`);
    expect(new URL(page.url()).pathname).toBe("/dashboard/sign-in");
    await expect(page.getByRole("heading", { name: "Sign in" }).isVisible()).resolves.toBe(true);
    const res = await fetch(`${server.url}/dashboard/sign-in`);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    await judge("sign-in");
  });

  test("the setup link printed at first start makes the owner, signs them in, and works once", async () => {
    const link = /Finish setting up the dashboard[^:]*: (\S+)/.exec(server.output())?.[1];
    expect(link).toBeDefined();
    await page.goto(link!);
    await judge("setup");
    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await page.getByLabel("Password again").fill(PASSWORD);
    await page.getByRole("button", { name: "Create my user" }).click();
    await page.waitForURL(`${server.url}/dashboard`);
    await expect(page.getByRole("heading", { name: "Overview" }).isVisible()).resolves.toBe(true);
    expect(await page.locator("header.top").innerText()).toContain(EMAIL);
    await judge("overview");
    const cookie = (await context.cookies()).find((c) => c.name === "pigeon_session")!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/dashboard" });
    // A second use of the link is refused.
    const again = await fetch(link!);
    expect(again.status).toBe(410);
  });

  test("a key is created with its secret shown once, rotated, disabled and enabled", async () => {
    await navTo(page, "API keys");
    await page.getByLabel("Name").fill("Shop website");
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = (await page.locator("#new-secret").innerText()).trim();
    const key = (await page.locator("section.card code").first().innerText()).trim();
    expect(secret).toMatch(/^sk_/);
    await judge("keys");
    const creds = { api_key: key, api_secret: secret };
    expect((await server.api("/v1/api/device/list", creds)).status).toBe(200);

    // Shown once: a reload no longer has it.
    await page.reload();
    expect(await page.locator("#new-secret").count()).toBe(0);
    const row = page.locator("tr", { hasText: "Shop website" });
    expect(await row.innerText()).toContain(secret.slice(-4));

    await page.getByRole("button", { name: "Rotate Shop website" }).click();
    const rotated = (await page.locator("#new-secret").innerText()).trim();
    expect(rotated).not.toBe(secret);
    expect((await server.api("/v1/api/device/list", creds)).status).toBe(401);
    const fresh = { api_key: key, api_secret: rotated };
    expect((await server.api("/v1/api/device/list", fresh)).status).toBe(200);

    await page.getByRole("button", { name: "Disable Shop website" }).click();
    expect(await page.locator("tr", { hasText: "Shop website" }).locator(".badge").innerText()).toBe("disabled");
    const disabled = await server.api("/v1/api/device/list", fresh);
    expect(disabled.status).toBe(403);
    expect(disabled.body.data.error_code).toBe("key_disabled");
    await page.getByRole("button", { name: "Enable Shop website" }).click();
    expect(await page.locator("tr", { hasText: "Shop website" }).locator(".badge").innerText()).toBe("active");
    expect((await server.api("/v1/api/device/list", fresh)).status).toBe(200);
  });

  test("the Twilio-compatible credentials: made with the token shown once; an incoming-message URL refused beside the field, then cleared", async () => {
    await navTo(page, "API keys");
    await page.getByRole("button", { name: "Create Twilio credentials" }).click();
    const token = (await page.locator("#new-secret").innerText()).trim();
    expect(token).toMatch(/^[0-9a-f]{32}$/);
    const sid = (await page.locator("#twilio-account-sid").innerText()).trim();
    expect(sid).toMatch(/^AC[0-9a-f]{32}$/);
    await judge("keys-twilio");
    // The token works as Twilio's Basic credentials.
    const auth = `Basic ${Buffer.from(`${sid}:${token}`).toString("base64")}`;
    expect((await fetch(`${server.url}/2010-04-01/Accounts/${sid}/Messages.json`, { headers: { authorization: auth } })).status).toBe(200);
    // This server may not call its own host: refused beside the field, what was typed kept.
    await page.getByLabel("Incoming-message URL").fill("http://127.0.0.1/sms/in");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("resolves to a private or local address").waitFor();
    expect(await page.getByLabel("Incoming-message URL").inputValue()).toBe("http://127.0.0.1/sms/in");
    await judge("keys-twilio-error");
    // The refusal is answered 400 on purpose, which the browser logs: that one line is expected.
    const logged = problems.findIndex((p) => /status of 400\b/.test(p));
    expect(logged).toBeGreaterThanOrEqual(0);
    problems.splice(logged, 1);
    await page.getByLabel("Incoming-message URL").fill("");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Incoming-message URL cleared.").waitFor();
    expect(await page.locator("#new-secret").count()).toBe(0);
  });

  test("a form posted without the page's CSRF token changes nothing", async () => {
    const cookie = (await context.cookies()).find((c) => c.name === "pigeon_session")!;
    const res = await fetch(`${server.url}/dashboard/keys`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: `pigeon_session=${cookie.value}`, "content-type": "application/x-www-form-urlencoded" },
      body: "name=Forged",
    });
    expect(res.status).toBe(403);
    await page.reload();
    expect(await page.locator("tr", { hasText: "Forged" }).count()).toBe(0);
  });

  test("signing out ends the session on the server", async () => {
    const cookie = (await context.cookies()).find((c) => c.name === "pigeon_session")!;
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/dashboard\/sign-in/);
    expect(await page.getByRole("status").innerText()).toContain("signed out");
    // The old cookie, replayed, no longer opens a page.
    const replay = await fetch(`${server.url}/dashboard`, { redirect: "manual", headers: { cookie: `pigeon_session=${cookie.value}` } });
    expect(replay.status).toBe(303);
    expect(replay.headers.get("location")).toBe("/dashboard/sign-in");
  });

  test("a wrong password is refused, and after five attempts even the right one must wait", async () => {
    for (let i = 0; i < 5; i++) {
      await page.getByLabel("Email").fill(EMAIL);
      await page.getByLabel("Password").fill(`wrong password ${i}`);
      await page.getByRole("button", { name: "Sign in" }).click();
      expect(await page.getByRole("alert").innerText()).toBe("Wrong email or password.");
    }
    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    expect(await page.getByRole("alert").innerText()).toMatch(/Too many sign-in attempts\. Wait \d+ seconds/);
    expect(new URL(page.url()).pathname).toBe("/dashboard/sign-in");
    expect((await context.cookies()).some((c) => c.name === "pigeon_session" && c.value)).toBe(false);
  });

  test("nothing was blocked, failed or fetched from elsewhere on any page", () => {
    expect(problems).toEqual([]);
  });
});
