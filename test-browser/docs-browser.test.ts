// /docs in a real headless Chromium: the UI renders every operation and asks nothing of the
// internet. Needs Debian's chromium (.ci/run installs it); without it this file says so and skips.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { isolatedBinary, startServer, tempDir, type RunningServer } from "../test/helpers/binary";

const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available) console.warn(`docs-browser: ${CHROMIUM} is missing (apt-get install chromium); skipping the browser check`);

describe.skipIf(!available)("the docs UI in a browser", () => {
  let server: RunningServer;
  let browser: Browser;

  beforeAll(async () => {
    server = await startServer(isolatedBinary(), { PIGEON_DATA_DIR: tempDir() });
    browser = await chromium.launch({
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
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop("SIGKILL");
  });

  test("renders every documented operation from the binary alone, with no request leaving the server", async () => {
    const page = await browser.newPage();
    const elsewhere: string[] = [];
    page.on("request", (r) => {
      if (!r.url().startsWith(server.url) && !r.url().startsWith("data:")) elsewhere.push(r.url());
    });
    await page.goto(`${server.url}/docs`, { waitUntil: "networkidle" });
    await page.waitForSelector(".opblock", { timeout: 20_000 });
    const spec = await (await server.fetch("/openapi.json")).json();
    const operations = Object.entries(spec.paths as Record<string, object>).flatMap(([path, methods]) =>
      Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
    );
    // With this many operations the UI keeps only those near the viewport in the page: scroll to
    // the end and collect each operation as it comes into view.
    const seen = new Set<string>();
    for (let step = 0; step < 400; step++) {
      const shown = await page.$$eval(".opblock", (blocks) =>
        blocks.map(
          (b) =>
            `${b.querySelector(".opblock-summary-method")?.textContent?.trim()} ${b.querySelector("[data-path]")?.getAttribute("data-path")}`,
        ),
      );
      for (const op of shown) seen.add(op);
      const atEnd = await page.evaluate(() => window.scrollY + window.innerHeight >= document.body.scrollHeight - 2);
      if (atEnd) break;
      await page.mouse.wheel(0, 600);
      await page.waitForTimeout(30);
    }
    expect([...seen].sort()).toEqual([...operations].sort());
    expect(await page.locator(".info .title").first().innerText()).toContain("Pigeon API");
    expect(elsewhere).toEqual([]);
  });

  test("the Authorize button and the sending operations come first, the guide folded under the intro", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const elsewhere: string[] = [];
    page.on("request", (r) => {
      if (!r.url().startsWith(server.url) && !r.url().startsWith("data:")) elsewhere.push(r.url());
    });
    await page.goto(`${server.url}/docs`, { waitUntil: "networkidle" });
    await page.waitForSelector(".opblock", { timeout: 20_000 });
    const authorize = await page.locator("button.authorize").first().boundingBox();
    expect(authorize).not.toBeNull();
    expect(authorize!.y).toBeLessThan(900);
    expect(await page.locator(".opblock-tag").first().getAttribute("data-tag")).toBe("Sending");
    const first = await page.locator(".opblock").first().boundingBox();
    expect(first!.y).toBeLessThan(1800);
    expect(await page.locator(".opblock .opblock-summary-path").first().innerText()).toContain("/send");
    // The guide is still there for whoever opens it.
    await page.locator(".info summary").first().click();
    expect(await page.locator(".info").first().innerText()).toContain("error_code");
    expect(elsewhere).toEqual([]);
  });
});
