// Bulk sends from a CSV file in the dashboard, in Chromium against the compiled binary and a
// simulated phone: headers that name the fields map by themselves; others get one labelled choice
// per field; the preview shows the first messages, the total and every row that would fail with
// its line; sending accepts the good rows once (a second submit sends nothing).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { tempDir, type Credentials, type RunningServer } from "../test/helpers/binary";
import { CHROMIUM, chromiumAvailable, judgePage, startDashboard, type DashboardRig } from "../test/helpers/dashboard";

if (!chromiumAvailable) console.warn(`dashboard-bulk: ${CHROMIUM} is missing; skipping`);

const EMAIL = "owner@example.com";
const PASSWORD = "a long enough secret";

describe.skipIf(!chromiumAvailable)("bulk sends from a CSV file", () => {
  let rig: DashboardRig;
  const files = tempDir("pigeon-csv-");
  let server: RunningServer;
  let key: Credentials;
  let page: Page;
  let problems: string[];

  const csvFile = (name: string, text: string) => {
    const path = join(files, name);
    writeFileSync(path, text);
    return path;
  };
  const messages = async () =>
    (await server.api("/v1/api/notification/list?limit=100", key)).body.data.notifications as { recipient: string; message: string }[];

  beforeAll(async () => {
    rig = await startDashboard({ email: EMAIL, password: PASSWORD });
    ({ server, key, page, problems } = rig);
    await rig.pairPhone(["--delay", "100", "--name", "Bulk/phone"]);
  });

  afterAll(async () => {
    await rig?.stop();
  });

  test("a 3-row CSV whose headers name the fields: preview, then three messages, once", async () => {
    await page.goto(`${server.url}/dashboard/send`);
    await page.getByRole("link", { name: "Bulk from a CSV file" }).click();
    await judgePage(page, "bulk-upload");
    await page
      .getByLabel("CSV file")
      .setInputFiles(csvFile("three.csv", 'phone,name,order\n+14155550101,Ada,A-1\n+14155550102,Bob,B-2\n+14155550103,"Cy, Jr.",C-3\n'));
    await page.getByLabel("Text (with {{name}} or any column as {{column}})").fill("Hi {{name}}, order {{order}} is ready.");
    await page.getByRole("button", { name: "Upload and preview" }).click();
    expect(await page.getByRole("heading", { name: "Check before sending" }).isVisible()).toBe(true);
    const first = await page.locator("section", { has: page.getByRole("heading", { name: "The first messages" }) }).innerText();
    expect(first).toContain("Hi Ada, order A-1 is ready.");
    expect(first).toContain("Hi Cy, Jr., order C-3 is ready.");
    expect(await page.locator(".stat", { hasText: "Will be sent" }).innerText()).toContain("3");
    await judgePage(page, "bulk-preview");
    expect(await messages()).toHaveLength(0);
    const form = page.locator('form[action="/dashboard/bulk/send"]');
    const fields = {
      _csrf: await form.locator('input[name="_csrf"]').inputValue(),
      draft: await form.locator('input[name="draft"]').inputValue(),
    };
    await page.getByRole("button", { name: "Send 3 messages" }).click();
    expect(await page.getByRole("status").first().innerText()).toContain("3 messages accepted in 1 request");
    const sent = await messages();
    expect(sent.map((m) => m.message).sort()).toEqual([
      "Hi Ada, order A-1 is ready.",
      "Hi Bob, order B-2 is ready.",
      "Hi Cy, Jr., order C-3 is ready.",
    ]);
    // The same form posted again (a double click, a resubmitted page) sends nothing more.
    const again = await page.request.post(`${server.url}/dashboard/bulk/send`, { form: fields, maxRedirects: 0 });
    expect(again.status()).toBe(303);
    await page.goto(`${server.url}${again.headers().location}`);
    expect(await page.getByRole("alert").first().innerText()).toContain("already sent");
    expect(await messages()).toHaveLength(3);
  });

  test("other headers are matched by hand, and bad rows are named with their line and reason", async () => {
    await page.goto(`${server.url}/dashboard/bulk`);
    await page
      .getByLabel("CSV file")
      .setInputFiles(csvFile("mapped.csv", "Mobile No,Customer,Code\n+14155550201,Dee,D-4\nnot a number,Eve,E-5\n+14155550203,Fay,F-6\n"));
    await page.getByLabel("Text (with {{name}} or any column as {{column}})").fill("Hello {{name}}, your code is {{code}}");
    await page.getByRole("button", { name: "Upload and preview" }).click();
    expect(await page.getByRole("heading", { name: "Match the columns" }).isVisible()).toBe(true);
    await judgePage(page, "bulk-mapping");
    await page.getByLabel("Column for the phone number").selectOption({ label: "Mobile No" });
    await page.getByLabel("Column for the name (optional)").selectOption({ label: "Customer" });
    await page.getByLabel("Column for {{code}}").selectOption({ label: "Code" });
    await page.getByRole("button", { name: "Preview" }).click();
    const failing = await page.locator("section", { has: page.getByRole("heading", { name: "Rows that will not be sent" }) }).innerText();
    expect(failing).toContain("3");
    expect(failing).toContain("Invalid phone number");
    await page.getByRole("button", { name: "Send 2 messages" }).click();
    expect(await page.getByRole("status").first().innerText()).toContain("2 messages accepted");
    const texts = (await messages()).map((m) => m.message);
    expect(texts).toContain("Hello Dee, your code is D-4");
    expect(texts).toContain("Hello Fay, your code is F-6");
    expect(texts).toHaveLength(5);
  });

  test("a file that is not CSV, or has no data, is refused on the form", async () => {
    await page.goto(`${server.url}/dashboard/bulk`);
    await page.getByLabel("CSV file").setInputFiles(csvFile("open.csv", 'phone,name\n"+14155550301,Gus\n'));
    await page.getByLabel("Text (with {{name}} or any column as {{column}})").fill("Hi");
    await page.getByRole("button", { name: "Upload and preview" }).click();
    expect(await page.getByRole("alert").innerText()).toContain("not valid CSV");
    await page.getByLabel("CSV file").setInputFiles(csvFile("empty.csv", "phone,name\n"));
    await page.getByLabel("Text (with {{name}} or any column as {{column}})").fill("Hi");
    await page.getByRole("button", { name: "Upload and preview" }).click();
    expect(await page.getByRole("alert").innerText()).toContain("at least one row");
    expect(problems.filter((p) => !/status of 400\b/.test(p))).toEqual([]);
  });
});
