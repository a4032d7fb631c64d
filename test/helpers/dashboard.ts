// Driving the dashboard in Debian's headless Chromium: launch, sign in through the form, and judge
// a page (axe-core: no serious or critical violation; nothing wider than a phone; screenshots at
// 1366×900 and 390×844 in test-artifacts/screenshots, which git ignores).
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import AxeBuilder from "@axe-core/playwright";
import { expect } from "bun:test";
import { chromium, type Browser, type Page } from "playwright-core";
import { isolatedBinary, runCommand, startServer, tempDir, type Credentials, type RunningServer } from "./binary";
import { startSimulator, type RunningPhone } from "./simulator";

export const CHROMIUM = "/usr/bin/chromium";
export const chromiumAvailable = existsSync(CHROMIUM);
const SHOTS = join(import.meta.dir, "../../test-artifacts/screenshots");

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/** Collects what should never happen on a page: script errors, blocked resources, requests elsewhere. */
export function watchProblems(page: Page, origin: string): string[] {
  const problems: string[] = [];
  // (A refused sign-in is answered 401 or 429 on purpose; the browser logs those statuses.)
  page.on("console", (m) => m.type() === "error" && !/status of (401|429)\b/.test(m.text()) && problems.push(`console: ${m.text()}`));
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("request", (r) => !r.url().startsWith(origin) && !r.url().startsWith("data:") && problems.push(`request to ${r.url()}`));
  return problems;
}

export async function signInThroughForm(page: Page, origin: string, email: string, password: string): Promise<void> {
  await page.goto(`${origin}/dashboard/sign-in`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${origin}/dashboard`);
}

/**
 * Follows a link of the main navigation as a person would: on a phone the Menu button first, then
 * the link's group (a disclosure), then the link.
 */
export async function navTo(page: Page, label: string): Promise<void> {
  const nav = page.getByRole("navigation", { name: "Main" });
  const link = nav.getByRole("link", { name: label, exact: true });
  if (!(await link.isVisible())) {
    const menu = nav.getByRole("button", { name: "Menu" });
    if ((await menu.isVisible()) && (await menu.getAttribute("aria-expanded")) !== "true") await menu.click();
    const group = nav.locator("details", { has: page.locator(`a:text-is("${label}")`) });
    if ((await group.count()) > 0 && !(await group.evaluate((d) => (d as HTMLDetailsElement).open))) await group.locator("summary").click();
  }
  await link.click();
}

/** Accessibility and layout at both sizes, and the screenshots. */
export async function judgePage(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  expect({ page: name, violations: bad }).toEqual({ page: name, violations: [] });
  const size = page.viewportSize() ?? { width: 1366, height: 900 };
  await page.setViewportSize({ width: 1366, height: 900 });
  await page.screenshot({ path: join(SHOTS, `${name}-1366.png`), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(SHOTS, `${name}-390.png`), fullPage: true });
  // Nothing wider than the phone's screen (the culprits named when something is).
  const wide = await page.evaluate(() =>
    document.documentElement.scrollWidth > innerWidth
      ? Array.from(document.querySelectorAll("body *"))
          .filter((e) => e.getBoundingClientRect().right > innerWidth + 1)
          .slice(0, 5)
          .map((e) => `${e.tagName.toLowerCase()}.${e.className}`)
      : [],
  );
  expect({ page: name, wide }).toEqual({ page: name, wide: [] });
  await page.setViewportSize(size);
}

/** What a dashboard browser test runs against: the binary, a signed-in page, and what it started. */
export interface DashboardRig {
  bin: string;
  dataDir: string;
  server: RunningServer;
  /** The API key the first start printed. */
  key: Credentials;
  browser: Browser;
  page: Page;
  problems: string[];
  /** Pairs `pigeon simulate-phone` (with `args`) using the workspace's pairing token; stopped with the rig. */
  pairPhone(args: string[]): Promise<RunningPhone>;
  stop(): Promise<void>;
}

/**
 * The compiled binary on a fresh data directory with a dashboard user (made by `pigeon users
 * create` before the first start), Chromium with a 1366×900 page, and that user signed in.
 */
export async function startDashboard(opts: {
  email: string;
  password: string;
  role?: "owner" | "member";
  env?: Record<string, string>;
}): Promise<DashboardRig> {
  const bin = isolatedBinary();
  const dataDir = tempDir();
  const made = await runCommand(
    bin,
    ["users", "create", "--email", opts.email, "--password", opts.password, "--role", opts.role ?? "owner"],
    { PIGEON_DATA_DIR: dataDir },
  );
  expect({ code: made.code, stderr: made.stderr }).toEqual({ code: 0, stderr: "" });
  const server = await startServer(bin, { PIGEON_DATA_DIR: dataDir, ...opts.env });
  const key = server.initialKey!;
  const browser = await launchChromium();
  const page = await (await browser.newContext({ viewport: { width: 1366, height: 900 } })).newPage();
  const problems = watchProblems(page, server.url);
  await signInThroughForm(page, server.url, opts.email, opts.password);
  const phones: RunningPhone[] = [];
  return {
    bin,
    dataDir,
    server,
    key,
    browser,
    page,
    problems,
    async pairPhone(args) {
      const pairing = (await server.api("/v1/api/device/pairing", key)).body.data;
      const phone = await startSimulator(bin, ["--server", pairing.server_url, "--token", pairing.pairing_token, ...args]);
      phones.push(phone);
      return phone;
    },
    async stop() {
      for (const phone of phones) phone.proc.kill("SIGKILL");
      await browser.close();
      await server.stop("SIGKILL");
    },
  };
}
