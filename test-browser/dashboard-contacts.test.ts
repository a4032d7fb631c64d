// The dashboard's Contacts pages in Chromium against the compiled binary: the empty state, creating
// with a refused phone beside its field, search, editing, deleting after the confirmation page, a CSV
// import whose report names each rejected line and why (and stores nothing of those lines), and the
// CSV export of every contact.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import type { Page } from "playwright-core";
import { parseCsv } from "../src/lib/csv";
import type { Credentials, RunningServer } from "../test/helpers/binary";
import { CHROMIUM, chromiumAvailable, judgePage, navTo, startDashboard, type DashboardRig } from "../test/helpers/dashboard";

if (!chromiumAvailable) console.warn(`dashboard-contacts: ${CHROMIUM} is missing; skipping`);

const EMAIL = "owner@example.com";
const PASSWORD = "a long enough secret";

describe.skipIf(!chromiumAvailable)("the Contacts pages", () => {
  let rig: DashboardRig;
  let server: RunningServer;
  let key: Credentials;
  let page: Page;
  let problems: string[];

  /** Every contact of the workspace, as the API lists them. */
  const apiContacts = async () =>
    (await server.api("/v1/api/contact/list?limit=100", key)).body.data.contacts as {
      contact_id: number;
      name: string;
      phone: string;
      email: string | null;
      type: string | null;
    }[];

  beforeAll(async () => {
    rig = await startDashboard({ email: EMAIL, password: PASSWORD });
    ({ server, key, page, problems } = rig);
  });

  afterAll(async () => {
    await rig?.stop();
  });

  test("with no contact the page says how to add some", async () => {
    await navTo(page, "Contacts");
    expect(await page.locator(".empty").innerText()).toContain("No contacts yet. Add one with New contact, or import a CSV file");
    await judgePage(page, "contacts-empty");
  });

  test("a bad phone is refused beside its field; a good contact is created", async () => {
    await page.getByRole("link", { name: "New contact" }).click();
    await page.getByLabel("Name").fill("Ada Lovelace");
    await page.getByLabel("Phone").fill("12345");
    await page.getByLabel("Email (optional)").fill("ada@example.com");
    await page.getByLabel("Type").selectOption({ index: 1 });
    await page.getByRole("button", { name: "Create contact" }).click();
    // The error is tied to the phone input, and what was typed is still there.
    expect(await page.locator("#c-phone-error").innerText()).toContain('Invalid phone number "12345"');
    expect(await page.getByLabel("Phone").getAttribute("aria-describedby")).toContain("c-phone-error");
    expect(await page.getByLabel("Phone").getAttribute("aria-invalid")).toBe("true");
    expect(await page.getByLabel("Name").inputValue()).toBe("Ada Lovelace");
    await judgePage(page, "contact-form-error");
    await page.getByLabel("Phone").fill("+1 415 555 2671");
    await page.getByRole("button", { name: "Create contact" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe("Contact Ada Lovelace created.");
    const [ada] = await apiContacts();
    expect(ada).toMatchObject({ name: "Ada Lovelace", phone: "+14155552671", email: "ada@example.com" });
    expect(ada.type).not.toBeNull();
  });

  test("a second contact with the same phone is refused as a duplicate", async () => {
    await page.getByRole("link", { name: "New contact" }).click();
    await page.getByLabel("Name").fill("Someone else");
    await page.getByLabel("Phone").fill("+14155552671");
    await page.getByRole("button", { name: "Create contact" }).click();
    expect(await page.locator("#c-phone-error").innerText()).toContain("already exists");
    expect(await apiContacts()).toHaveLength(1);
  });

  test("CSV import: good rows are created, each bad line is reported with what it held and why", async () => {
    await page.goto(`${server.url}/dashboard/contacts/import`);
    await judgePage(page, "contacts-import");
    const file = [
      "Phone,NAME,Email,Type,Note",
      "+442071838750,Grace Hopper,grace@example.com,,first",
      "",
      "not-a-phone,Bad Phone,,,",
      "+14155552671,Ada Again,,,",
      "+33142685300,,,,no name",
      '+4930901820,"Alan ""the"" Turing",alan@example,,bad email',
      "+61293744000,Dup In File,,,",
      "+61293744000,Dup In File 2,,,",
      "+81335812111,Kay Type,,nosuchtype,",
      '+353873456789,"Linus,',
      'Multiline",,,',
    ].join("\r\n");
    await page.getByLabel("CSV file").setInputFiles({ name: "contacts.csv", mimeType: "text/csv", buffer: Buffer.from(file) });
    await page.getByRole("button", { name: "Import contacts" }).click();
    expect(await page.locator("#report-title + p").innerText()).toBe("3 contacts imported, 6 rows rejected.");
    const rows = await page.locator("#rejected tbody tr").allInnerTexts();
    const byLine = Object.fromEntries(
      rows.map((r) => {
        const [line, held, why] = r.split("\t");
        return [line.trim(), { held: held.trim(), why: why.trim() }];
      }),
    );
    // Line numbers as an editor shows them: the blank line 3 counts.
    expect(Object.keys(byLine)).toEqual(["4", "5", "6", "7", "9", "10"]);
    expect(byLine["4"].why).toContain('Invalid phone number "not-a-phone"');
    expect(byLine["4"].held).toContain("not-a-phone,Bad Phone");
    expect(byLine["5"].why).toContain("already exists");
    expect(byLine["6"].why).toBe("Name: must not be blank");
    expect(byLine["7"].why).toContain('Invalid email address "alan@example"');
    expect(byLine["7"].held).toContain('"Alan ""the"" Turing"');
    expect(byLine["9"].why).toContain("already exists");
    expect(byLine["10"].why).toContain('unknown contact type "nosuchtype"');
    await judgePage(page, "contacts-import-report");
    // Nothing of a rejected line was stored; the existing contact was left as it was.
    const all = await apiContacts();
    expect(all.map((c) => c.name).sort()).toEqual(["Ada Lovelace", "Dup In File", "Grace Hopper", "Linus,\nMultiline"]);
    expect(all.find((c) => c.phone === "+14155552671")!.name).toBe("Ada Lovelace");
    expect(all.find((c) => c.name === "Grace Hopper")!.email).toBe("grace@example.com");
  });

  test("a file without a phone column is refused with what it has", async () => {
    await page.goto(`${server.url}/dashboard/contacts/import`);
    await page
      .getByLabel("CSV file")
      .setInputFiles({ name: "x.csv", mimeType: "text/csv", buffer: Buffer.from("name,mobile\nBob,+14155550000\n") });
    await page.getByRole("button", { name: "Import contacts" }).click();
    expect(await page.getByRole("alert").first().innerText()).toContain("phone is missing (it has: name, mobile)");
    expect(await apiContacts()).toHaveLength(4);
  });

  test("search finds by part of the name and by digits of the phone", async () => {
    await navTo(page, "Contacts");
    await judgePage(page, "contacts");
    await page.getByLabel("Name, phone or email contains").fill("hopper");
    await page.getByRole("button", { name: "Search" }).click();
    expect(await page.locator("tbody tr").allInnerTexts()).toHaveLength(1);
    expect(await page.locator("tbody").innerText()).toContain("Grace Hopper");
    expect(await page.getByRole("status").first().innerText()).toBe('1 contact matches "hopper"');
    await page.getByLabel("Name, phone or email contains").fill("415 555");
    await page.getByRole("button", { name: "Search" }).click();
    expect(await page.locator("tbody").innerText()).toContain("Ada Lovelace");
    expect(await page.locator("tbody").innerText()).not.toContain("Grace Hopper");
    await page.getByLabel("Name, phone or email contains").fill("nobody-like-this");
    await page.getByRole("button", { name: "Search" }).click();
    expect(await page.locator(".empty").innerText()).toContain("No contact matches");
    await judgePage(page, "contacts-search-empty");
  });

  test("editing saves through the service, and a taken phone is refused beside the field", async () => {
    await navTo(page, "Contacts");
    await page.getByRole("link", { name: "Edit Grace Hopper" }).click();
    await page.getByLabel("Phone").fill("+14155552671");
    await page.getByRole("button", { name: "Save contact" }).click();
    expect(await page.locator("#c-phone-error").innerText()).toContain("already exists");
    await judgePage(page, "contact-edit-error");
    await page.getByLabel("Phone").fill("+442071838751");
    await page.getByLabel("Name").fill("Rear Admiral Grace Hopper");
    await page.getByLabel("Email (optional)").fill("");
    await page.getByRole("button", { name: "Save contact" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe("Contact Rear Admiral Grace Hopper saved.");
    expect((await apiContacts()).find((c) => c.phone === "+442071838751")).toMatchObject({
      name: "Rear Admiral Grace Hopper",
      email: null,
    });
  });

  test("delete asks first, and only the confirmation deletes", async () => {
    await page.getByRole("link", { name: "Delete Dup In File" }).click();
    expect(await page.getByRole("heading", { level: 2 }).innerText()).toBe("Delete Dup In File?");
    await judgePage(page, "contact-delete");
    await page.getByRole("link", { name: "Keep it" }).click();
    expect(await apiContacts()).toHaveLength(4);
    await page.getByRole("link", { name: "Delete Dup In File" }).click();
    await page.getByRole("button", { name: "Delete contact" }).click();
    expect(await page.getByRole("status").first().innerText()).toBe("Contact Dup In File deleted.");
    expect((await apiContacts()).map((c) => c.name)).not.toContain("Dup In File");
  });

  test("the export holds every contact, and imports back as duplicates only", async () => {
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Export CSV" }).click()]);
    const text = readFileSync((await download.path())!, "utf8");
    const [header, ...rows] = parseCsv(text);
    expect(header).toEqual(["name", "phone", "email", "type"]);
    const expected = (await apiContacts()).map((c) => [c.name, c.phone, c.email ?? "", c.type ?? ""]);
    expect(rows).toEqual(expected);
    expect(rows.map((r) => r[0])).toContain("Linus,\nMultiline");
    // The export is a valid import: each of its rows is already a contact.
    await page.goto(`${server.url}/dashboard/contacts/import`);
    await page.getByLabel("CSV file").setInputFiles({ name: "back.csv", mimeType: "text/csv", buffer: Buffer.from(text) });
    await page.getByRole("button", { name: "Import contacts" }).click();
    expect(await page.locator("#report-title + p").innerText()).toBe(`0 contacts imported, ${rows.length} rows rejected.`);
  });

  test("nothing failed in the pages but the refused forms", () => {
    expect(problems.filter((p) => !/status of (400|409)\b/.test(p))).toEqual([]);
  });
});
