// Pictures people send, in Chromium against the compiled binary and two simulated phones: an MMS
// with a PNG shows in the Inbox and in its conversation as an image (axe-clean, with a text
// alternative), served by the dashboard under the session with the same headers as the API; an
// MMS whose part is a hostile SVG (a <script>, an onload, a request to a loopback listener) is a
// download link, and opening its URL downloads it: no script of it runs, nothing it asks for is
// fetched.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { MMS_PICTURE_PNG } from "../src/cli/simulate-phone/reports";
import { waitFor } from "../test/helpers/api";
import type { Credentials, RunningServer } from "../test/helpers/binary";
import { CHROMIUM, chromiumAvailable, judgePage, navTo, startDashboard, type DashboardRig } from "../test/helpers/dashboard";

if (!chromiumAvailable) console.warn(`dashboard-mms: ${CHROMIUM} is missing; skipping`);

const PICTURE_FROM = "+14155550190";
const DRAWING_FROM = "+14155550191";
const PNG = Buffer.from(MMS_PICTURE_PNG, "base64");

describe.skipIf(!chromiumAvailable)("MMS pictures in the dashboard", () => {
  let rig: DashboardRig;
  let server: RunningServer;
  let key: Credentials;
  let page: Page;
  let problems: string[];
  let dir: string;
  /** Every request the hostile SVG could make lands here. */
  const heard: string[] = [];
  const listener = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      heard.push(new URL(request.url).pathname);
      return new Response("ok");
    },
  });
  const svg = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40" onload="window.pwned='onload';fetch('http://127.0.0.1:${listener.port}/onload')">`,
    `<script>window.pwned='script';new Image().src='http://127.0.0.1:${listener.port}/script';</script>`,
    `<image href="http://127.0.0.1:${listener.port}/image" width="10" height="10"/><rect width="40" height="40" fill="red"/></svg>`,
  ].join("");

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "pigeon-mms-browser-"));
    writeFileSync(join(dir, "drawing.svg"), svg);
    rig = await startDashboard({ email: "owner@example.com", password: "a long enough secret" });
    ({ server, key, page, problems } = rig);
    const picture = await rig.pairPhone(["--name", "Front/phone", "--mms", "Our table", "--from", PICTURE_FROM, "--delay", "50"]);
    const drawing = await rig.pairPhone([
      "--name",
      "Back/phone",
      "--mms",
      "A drawing",
      "--mms-file",
      join(dir, "drawing.svg"),
      "--from",
      DRAWING_FROM,
      "--delay",
      "50",
    ]);
    for (const [phone, from] of [
      [picture, PICTURE_FROM],
      [drawing, DRAWING_FROM],
    ] as const)
      await waitFor("the downloaded MMS", () => phone.output().includes(`downloaded MMS from ${from} posted`), { detail: phone.output });
  });

  afterAll(async () => {
    await rig?.stop();
    listener.stop(true);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("the Inbox and the conversation show the picture inline, with its text alternative, axe-clean", async () => {
    await navTo(page, "Inbox");
    const thumb = page.locator(".threads li", { hasText: PICTURE_FROM }).locator("img.thumb");
    await thumb.waitFor();
    expect(await thumb.getAttribute("alt")).toBe(`Picture from ${PICTURE_FROM}: picture.png`);
    // The bytes came and the browser drew them: an 8×8 picture.
    await waitFor("the thumbnail to load", () => thumb.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth === 8));
    // The drawing's thread has no thumbnail: an SVG is never shown as a picture.
    expect(await page.locator(".threads li", { hasText: DRAWING_FROM }).locator("img").count()).toBe(0);
    await judgePage(page, "inbox-mms");

    await page.locator(".threads li", { hasText: PICTURE_FROM }).getByRole("link").click();
    const image = page.locator(".bubble.inbound img.attachment");
    await image.waitFor();
    expect(await image.getAttribute("alt")).toBe(`Picture from ${PICTURE_FROM}: picture.png`);
    await waitFor("the picture to load", () => image.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth === 8));
    await judgePage(page, "conversation-mms");

    // Its route serves the API's bytes and headers, under the session.
    const src = (await image.getAttribute("src"))!;
    expect(src).toMatch(/^\/dashboard\/inbox\/\d+\/message\/\d+\/attachment\/\d+$/);
    const served = await page.context().request.get(`${server.url}${src}`);
    expect(served.status()).toBe(200);
    expect(Buffer.from(await served.body()).equals(PNG)).toBe(true);
    expect(served.headers()["content-type"]).toBe("image/png");
    expect(served.headers()["x-content-type-options"]).toBe("nosniff");
    expect(served.headers()["content-security-policy"]).toBe("default-src 'none'; sandbox");
    // Without the session the dashboard's route serves nothing.
    const anonymous = await fetch(`${server.url}${src}`, { redirect: "manual" });
    expect(anonymous.status).not.toBe(200);
  });

  test("a hostile SVG is a download link; opening its URL downloads it and nothing of it runs", async () => {
    await page.goto(`${server.url}/dashboard/inbox`);
    await page.locator(".threads li", { hasText: DRAWING_FROM }).getByRole("link").click();
    const link = page.locator(".bubble.inbound a.attachment");
    await link.waitFor();
    expect(await link.innerText()).toContain("drawing.svg");
    expect(await page.locator(".bubble.inbound img").count()).toBe(0);
    await judgePage(page, "conversation-svg");
    const href = (await link.getAttribute("href"))!;

    // Opened as a page, through the dashboard's route and through the API's (with the key's headers).
    const thread = (await server.api("/v1/api/thread/list", key)).body.data.threads.find((t: { peer: string }) => t.peer === DRAWING_FROM);
    const [message] = (await server.api(`/v1/api/thread/${thread.thread_id}/messages`, key)).body.data.messages;
    const apiUrl = message.attachments[0].url as string;
    expect(message.attachments[0].served_as).toBe("application/octet-stream");
    const apiPage = await page
      .context()
      .browser()!
      .newContext({
        extraHTTPHeaders: { authorization: `Bearer ${key.api_key}`, "x-api-secret": key.api_secret },
      });
    const other = await apiPage.newPage();
    for (const [tab, url] of [
      [page, `${server.url}${href}`],
      [other, `${server.url}${apiUrl}`],
    ] as const) {
      const download = tab.waitForEvent("download");
      await tab.goto(url).catch((error: Error) => expect(error.message).toContain("Download is starting"));
      const file = await download;
      expect(file.suggestedFilename()).toBe("drawing.svg");
      expect(Buffer.from(await Bun.file((await file.path())!).arrayBuffer()).toString()).toBe(svg);
    }
    // Embedded the ways a page could try (an <img>, an <iframe>, an <object>), it still never runs.
    await page.evaluate((url) => {
      for (const tag of ["img", "iframe", "object"]) {
        const el = document.createElement(tag);
        el.setAttribute(tag === "object" ? "data" : "src", url);
        document.body.append(el);
      }
    }, href);
    await Bun.sleep(1500);
    for (const tab of [page, other]) expect(await tab.evaluate(() => (window as unknown as { pwned?: string }).pwned)).toBeUndefined();
    expect(heard).toEqual([]);
    await apiPage.close();
    // The only failures the console saw are the embedded SVG's (the browser refuses to show it).
    expect(problems.filter((p) => !p.includes("/attachment/"))).toEqual([]);
  });
});
