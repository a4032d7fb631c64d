// Safe sending in the dashboard, in Chromium against the compiled binary: the Opt-outs page (its
// empty state, opting a number out by hand with a refused number beside its field, opting it back
// in, the history and its filter, a CSV import whose report counts what was added, already out and
// failed), the Safe sending settings (quiet hours, keywords, replies and failover saved, reloaded
// and read back through the API; refused values beside their fields, nothing saved), and a
// contact's time zone and "Opted out" badge on the Contacts page.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import type { Credentials, RunningServer } from "../test/helpers/binary";
import { CHROMIUM, chromiumAvailable, judgePage, navTo, startDashboard, type DashboardRig } from "../test/helpers/dashboard";

if (!chromiumAvailable) console.warn(`dashboard-safety: ${CHROMIUM} is missing; skipping`);

const EMAIL = "owner@example.com";
const PASSWORD = "a long enough secret";

interface Entry {
  phone: string;
  action: "opted_out" | "opted_in";
  source: string;
  reason: string | null;
}

describe.skipIf(!chromiumAvailable)("the Opt-outs and Safe sending pages", () => {
  let rig: DashboardRig;
  let server: RunningServer;
  let key: Credentials;
  let page: Page;
  let problems: string[];

  /** The API's opt-out list: the numbers suppressed now, or the whole audit. */
  const apiList = async (active: boolean) => {
    const res = await server.api(`/v1/api/optout/list?limit=100${active ? "&active=true" : ""}`, key);
    expect(res.status).toBe(200);
    return res.body.data.entries as Entry[];
  };
  const apiSettings = async () => (await server.api("/v1/api/workspace/settings", key)).body.data;
  /** The rows of a table as their cells' text. */
  const rowsOf = async (selector: string) =>
    (await page.locator(`${selector} tbody tr`).allInnerTexts()).map((r) => r.split("\t").map((c) => c.trim()));

  beforeAll(async () => {
    rig = await startDashboard({ email: EMAIL, password: PASSWORD });
    ({ server, key, page, problems } = rig);
  });

  afterAll(async () => {
    await rig?.stop();
  });

  test("with no opt-out the page says what the list is and how numbers get on it", async () => {
    await navTo(page, "Opt-outs");
    expect(await page.locator("h1").innerText()).toBe("Opt-outs");
    expect(await page.locator(".empty").innerText()).toContain("No one has opted out. People who text STOP");
    await judgePage(page, "optouts-empty");
  });

  test("a number that is not one is refused beside its field; a good one is opted out and the API agrees", async () => {
    await page.getByLabel("Phone").fill("12345");
    await page.getByLabel("Reason (optional)").fill("asked at the counter");
    await page.getByRole("button", { name: "Opt out", exact: true }).click();
    expect(await page.locator("#o-phone-error").innerText()).toContain('Invalid phone number "12345"');
    expect(await page.getByLabel("Phone").getAttribute("aria-describedby")).toContain("o-phone-error");
    expect(await page.getByLabel("Reason (optional)").inputValue()).toBe("asked at the counter");
    expect(await apiList(true)).toEqual([]);
    await judgePage(page, "optouts-error");

    await page.getByLabel("Phone").fill("+1 415 555 2671");
    await page.getByRole("button", { name: "Opt out", exact: true }).click();
    expect(await page.getByRole("status").first().innerText()).toBe(
      "+14155552671 opted out: sends to it are refused until it opts back in.",
    );
    const rows = await rowsOf("#active");
    expect(rows).toHaveLength(1);
    expect(rows[0].slice(0, 3)).toEqual(["+14155552671", "dashboard", "asked at the counter"]);
    expect(await apiList(true)).toMatchObject([
      { phone: "+14155552671", action: "opted_out", source: "dashboard", reason: "asked at the counter" },
    ]);
    await judgePage(page, "optouts-active");
  });

  test("opting it back in takes it off the list; the history shows both changes, newest first", async () => {
    await page.getByRole("button", { name: "Opt back in +14155552671" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe("+14155552671 opted back in: it can be texted again.");
    expect(await page.locator("#active").count()).toBe(0);
    expect(await page.locator(".empty").innerText()).toContain("No one has opted out");
    expect(await apiList(true)).toEqual([]);

    await page.getByRole("link", { name: "History" }).click();
    const rows = await rowsOf("#audit");
    expect(rows.map((r) => r.slice(1, 4))).toEqual([
      ["+14155552671", "opted in", "dashboard"],
      ["+14155552671", "opted out", "dashboard"],
    ]);
    expect((await apiList(false)).map((e) => [e.action, e.source])).toEqual([
      ["opted_in", "dashboard"],
      ["opted_out", "dashboard"],
    ]);
    await judgePage(page, "optouts-history");
  });

  test("CSV import: good rows are opted out, one already out is counted, the bad line is reported", async () => {
    await page.goto(`${server.url}/dashboard/optouts/import`);
    await judgePage(page, "optouts-import");
    const file = ["phone,reason", "+442071838750,wrong number", "not-a-phone,typo", "+33142685300,"].join("\r\n");
    await page.getByLabel("CSV file").setInputFiles({ name: "optouts.csv", mimeType: "text/csv", buffer: Buffer.from(file) });
    await page.getByRole("button", { name: "Import opt-outs" }).click();
    expect(await page.locator("#report-title + p").innerText()).toBe("2 numbers opted out, 0 already opted out, 1 row failed.");
    const rejected = await rowsOf("#rejected");
    expect(rejected).toHaveLength(1);
    expect(rejected[0][0]).toBe("3");
    expect(rejected[0][1]).toBe("not-a-phone,typo");
    expect(rejected[0][2]).toContain('Invalid phone number "not-a-phone"');
    await judgePage(page, "optouts-import-report");
    const active = await apiList(true);
    expect(active.map((e) => [e.phone, e.source, e.reason]).sort()).toEqual([
      ["+33142685300", "import", null],
      ["+442071838750", "import", "wrong number"],
    ]);

    // Without a header line the number is the first cell; a number already out is counted, not added.
    await page
      .getByLabel("CSV file")
      .setInputFiles({ name: "more.csv", mimeType: "text/csv", buffer: Buffer.from("+442071838750\n+81335812111,moved away\n") });
    await page.getByRole("button", { name: "Import opt-outs" }).click();
    expect(await page.locator("#report-title + p").innerText()).toBe("1 number opted out, 1 already opted out, 0 rows failed.");
    expect((await apiList(true)).map((e) => e.phone).sort()).toEqual(["+33142685300", "+442071838750", "+81335812111"]);
  });

  test("the history filters by number, and a filter that is not a number is refused beside it", async () => {
    await page.goto(`${server.url}/dashboard/optouts?view=audit`);
    await page.getByLabel("Changes of the number").fill("nope");
    await page.getByRole("button", { name: "Filter" }).click();
    expect(await page.locator("#a-phone-error").innerText()).toContain('Invalid phone number "nope"');
    await page.getByLabel("Changes of the number").fill("+44 20 7183 8750");
    await page.getByRole("button", { name: "Filter" }).click();
    const rows = await rowsOf("#audit");
    expect(rows.map((r) => r[1])).toEqual(["+442071838750"]);
    expect(await page.getByRole("status").first().innerText()).toBe("1 change for +442071838750");
  });

  test("settings: quiet hours and a custom opt-out word are saved, shown again on reload and in the API", async () => {
    await navTo(page, "Safe sending");
    expect(await page.getByLabel("No quiet hours").isChecked()).toBe(true);
    expect(await page.getByLabel("Opt-out words").inputValue()).toBe("STOP, STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT");
    await judgePage(page, "safety-settings");

    await page.getByLabel("No quiet hours").uncheck();
    await page.getByLabel("From").fill("21:00");
    await page.getByLabel("Until").fill("08:00");
    await page.getByLabel("Opt-out words").fill("STOP, STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT,\narret");
    await page.getByLabel("Reply to help").fill("Text STOP to stop, or call 555-0100.");
    await page.getByLabel("First route").selectOption("cloud");
    await page.getByLabel("Second route").selectOption("phone");
    await page.getByRole("button", { name: "Save settings" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe("Safe-sending settings saved.");

    await page.reload();
    expect(await page.getByLabel("No quiet hours").isChecked()).toBe(false);
    expect(await page.getByLabel("From").inputValue()).toBe("21:00");
    expect(await page.getByLabel("Until").inputValue()).toBe("08:00");
    expect(await page.getByLabel("Opt-out words").inputValue()).toBe("STOP, STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT, ARRET");
    expect(await page.getByLabel("First route").inputValue()).toBe("cloud");
    expect(await page.getByLabel("Third route").inputValue()).toBe("");
    const saved = await apiSettings();
    expect(saved).toMatchObject({
      quiet_hours: { start: "21:00", end: "08:00" },
      opt_out_keywords: ["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "ARRET"],
      opt_in_keywords: ["START", "UNSTOP", "YES"],
      help_reply: "Text STOP to stop, or call 555-0100.",
      default_routes: ["cloud", "phone"],
    });
  });

  test("settings: a missing time, a word in two lists and a route named twice are refused beside their fields; nothing is saved", async () => {
    const before = await apiSettings();
    await page.goto(`${server.url}/dashboard/safety`);
    await page.getByLabel("From").fill("");
    await page.getByRole("button", { name: "Save settings" }).click();
    expect(await page.locator("#s-quiet-start-error").innerText()).toContain('From: must be a 24-hour time "HH:MM"');
    expect(await page.getByLabel("From").getAttribute("aria-invalid")).toBe("true");
    // What was typed stays on the page.
    expect(await page.getByLabel("Until").inputValue()).toBe("08:00");
    expect(await page.getByLabel("Opt-out words").inputValue()).toContain("ARRET");
    await judgePage(page, "safety-settings-error");
    expect(await apiSettings()).toEqual(before);

    await page.getByLabel("From").fill("08:00");
    await page.getByRole("button", { name: "Save settings" }).click();
    expect(await page.locator("#s-quiet-error").innerText()).toBe(
      "From and Until are the same time; choose different times, or tick No quiet hours.",
    );
    expect(await page.getByLabel("Until").getAttribute("aria-describedby")).toContain("s-quiet-error");
    expect(await apiSettings()).toEqual(before);

    await page.getByLabel("From").fill("22:00");
    await page.getByLabel("Opt-out words").fill("STOP, START");
    await page.getByRole("button", { name: "Save settings" }).click();
    expect(await page.locator("#s-optout-words-error").innerText()).toBe(
      '"START" is in both Opt-out words and Opt-in words; a word can mean one thing only.',
    );
    expect(await page.locator("#s-optin-words-error").innerText()).toContain('"START" is in both');
    expect(await apiSettings()).toEqual(before);

    await page.getByLabel("Opt-out words").fill("STOP");
    await page.getByLabel("Second route").selectOption("cloud");
    await page.getByRole("button", { name: "Save settings" }).click();
    expect(await page.locator("#s-routes-error").innerText()).toContain('route "cloud" is named twice');
    expect(await apiSettings()).toEqual(before);

    // "No quiet hours" turns them off whatever the times say.
    await page.goto(`${server.url}/dashboard/safety`);
    await page.getByLabel("No quiet hours").check();
    await page.getByRole("button", { name: "Save settings" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe("Safe-sending settings saved.");
    expect(await apiSettings()).toEqual({ ...before, quiet_hours: null });
  });

  test("contacts: a time zone that is not one is refused beside it; an opted-out number carries a badge", async () => {
    await page.goto(`${server.url}/dashboard/contacts/new`);
    await page.getByLabel("Name").fill("Grace Hopper");
    await page.getByLabel("Phone").fill("+442071838750");
    await page.getByLabel("Time zone (optional)").fill("Mars/Olympus_Mons");
    await page.getByRole("button", { name: "Create contact" }).click();
    expect(await page.locator("#c-timezone-error").innerText()).toContain('"Mars/Olympus_Mons" is not an IANA time zone name');
    expect(await page.getByLabel("Time zone (optional)").getAttribute("aria-invalid")).toBe("true");
    await judgePage(page, "contact-timezone-error");
    expect((await server.api("/v1/api/contact/list?limit=100", key)).body.data.contacts).toEqual([]);

    await page.getByLabel("Time zone (optional)").fill("Europe/London");
    await page.getByRole("button", { name: "Create contact" }).click();
    await page.getByRole("link", { name: "New contact" }).click();
    await page.getByLabel("Name").fill("Ada Lovelace");
    await page.getByLabel("Phone").fill("+14155552671");
    await page.getByRole("button", { name: "Create contact" }).click();
    const contacts = (await server.api("/v1/api/contact/list?limit=100", key)).body.data.contacts as {
      name: string;
      timezone: string | null;
      opted_out: boolean;
    }[];
    expect(contacts.map((c) => [c.name, c.timezone, c.opted_out]).sort()).toEqual([
      ["Ada Lovelace", null, false],
      ["Grace Hopper", "Europe/London", true],
    ]);
    const rows = await rowsOf("table");
    expect(rows.find((r) => r[0] === "Grace Hopper")?.[1]).toBe("+442071838750 Opted out");
    expect(rows.find((r) => r[0] === "Ada Lovelace")?.[1]).toBe("+14155552671");
    await judgePage(page, "contacts-opted-out");

    // The time zone is kept on edit, and the Opt-outs list names the contact.
    await page.getByRole("link", { name: "Edit Grace Hopper" }).click();
    expect(await page.getByLabel("Time zone (optional)").inputValue()).toBe("Europe/London");
    await page.goto(`${server.url}/dashboard/optouts`);
    expect(await page.locator("#active").innerText()).toContain("+442071838750 (Grace Hopper)");
  });

  test("nothing went wrong in the browser beyond the refused forms' 400s", () => {
    expect(problems.filter((p) => !/status of 400\b/.test(p))).toEqual([]);
  });
});
