// The dashboard's Devices pages in Chromium against the compiled binary: pairing `pigeon
// simulate-phone` with the URL and token the page shows while the page waits and then says
// "Paired" by itself; the list with presence and the phone's reported health; renaming, pacing with
// its errors, and deactivating.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import type { Credentials, RunningServer } from "../test/helpers/binary";
import { CHROMIUM, chromiumAvailable, judgePage, navTo, startDashboard, type DashboardRig } from "../test/helpers/dashboard";
import { startSimulator, type RunningPhone } from "../test/helpers/simulator";

if (!chromiumAvailable) console.warn(`dashboard-devices: ${CHROMIUM} is missing; skipping`);

const EMAIL = "owner@example.com";
const PASSWORD = "a long enough secret";

describe.skipIf(!chromiumAvailable)("the Devices pages", () => {
  let rig: DashboardRig;
  let server: RunningServer;
  let key: Credentials;
  let phone: RunningPhone | null = null;
  let page: Page;
  let problems: string[];

  beforeAll(async () => {
    rig = await startDashboard({ email: EMAIL, password: PASSWORD });
    ({ server, key, page, problems } = rig);
  });

  afterAll(async () => {
    // Paired by hand below (with what the page shows), so not one of the rig's phones.
    phone?.proc.kill("SIGKILL");
    await rig?.stop();
  });

  test("with no device the page says to pair one", async () => {
    await navTo(page, "Devices");
    expect(await page.locator(".notice").innerText()).toContain("No phone yet — pair one");
    await judgePage(page, "devices-empty");
  });

  test("a phone paired with what the page shows appears there without a reload", async () => {
    await page.getByRole("link", { name: "Pair a phone" }).click();
    const url = (await page.locator("#pair-url").innerText()).trim();
    const token = (await page.locator("#pair-token").innerText()).trim();
    expect(url).toBe(`${server.url}/mobile/v1`);
    expect(await page.locator("figure.qr svg").count()).toBe(1);
    expect(await page.locator("#pair-status").innerText()).toContain("Waiting for your phone");
    await judgePage(page, "devices-pair");
    phone = await startSimulator(rig.bin, [
      "--server",
      url,
      "--token",
      token,
      "--name",
      "Shop/phone",
      "--sims",
      "2",
      "--ping",
      "1",
      "--battery",
      "9",
    ]);
    await page.locator("#pair-status").filter({ hasText: "Paired: Shop/phone" }).waitFor({ timeout: 15_000 });
  });

  test("the list shows it online with the health its pings report", async () => {
    await navTo(page, "Devices");
    const row = page.locator("tr", { hasText: "Shop/phone" });
    expect(await row.locator(".badge.online").count()).toBe(1);
    // A 9 % battery off the charger, reported by the phone's ping.
    for (let i = 0; i < 40 && !(await row.innerText()).includes("battery 9 %"); i++) {
      await page.waitForTimeout(250);
      await page.reload();
    }
    expect(await row.innerText()).toContain("battery 9 %");
    await judgePage(page, "devices");
  });

  test("rename and pacing are saved, a bad value is refused next to the form, and it can be deactivated", async () => {
    await page.getByRole("link", { name: "Shop/phone" }).click();
    expect(await page.locator("table").first().innerText()).toContain("SIM 2");
    await page.getByLabel("Pause between SMS from (seconds)").fill("9");
    await page.getByLabel("to (seconds)").fill("3");
    await page.getByRole("button", { name: "Save" }).click();
    expect(await page.getByRole("alert").first().innerText()).toContain("must not exceed");
    await page.getByLabel("Name", { exact: true }).fill("Front desk");
    await page.getByLabel("Pause between SMS from (seconds)").fill("2");
    await page.getByLabel("to (seconds)").fill("4");
    await page.getByRole("button", { name: "Save" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe("Saved.");
    const device = (await server.api("/v1/api/device/list", key)).body.data.devices[0];
    expect(device).toMatchObject({ name: "Front desk", send_interval_min: 2, send_interval_max: 4 });
    await judgePage(page, "device");
    await page.getByRole("button", { name: "Deactivate" }).click();
    expect((await server.api("/v1/api/device/list", key)).body.data.devices[0].status).toBe("inactive");
    await page.getByRole("button", { name: "Activate" }).click();
    expect((await server.api("/v1/api/device/list", key)).body.data.devices[0].status).toBe("active");
  });

  test("nothing failed in the pages but the refused form", () => {
    expect(problems.filter((p) => !/status of 400\b/.test(p))).toEqual([]);
  });
});
