// A received MMS's parts, kept and served back: the phone's mms:downloaded as the app writes it,
// each part's bytes checked alone, the caps, the API's answer for each kind of part (inline only
// for the short list, a download of bytes for anything else), tenancy, and the metrics.
//
// The judge is the app's own payload class, written out here from its Kotlin source
// (capcom6/android-sms-gateway at 0cdc5d8, app/src/main/java/me/capcom/smsgateway/modules/):
//
//   webhooks/payload/MmsDownloadedPayload.kt
//     class MmsDownloadedPayload(messageId: String, sender: String, recipient: String?, simNumber: Int?,
//       val body: String?, val subject: String?, val attachments: List<Attachment>, val receivedAt: Date,
//     ) : MessageEventPayload(messageId, sender, recipient, simNumber, sender) {
//       class Attachment(val partId: Long, val contentType: String, val name: String?, val size: Long?, val data: String?)
//     }
//   webhooks/payload/MessageEventPayload.kt: messageId, sender, recipient, simNumber, phoneNumber (= sender)
//   receiver/MmsContentReader.kt: data = Base64.encodeToString(bytes, Base64.NO_WRAP), null when the
//     part cannot be read; size from the provider's file descriptor, null when unknown; the
//     content type as the provider stores it (parameters included)
//
// Gson (the app's serializer, without serializeNulls) leaves a null field out of the JSON.
import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { MMS_PICTURE_PNG } from "../../src/cli/simulate-phone/reports";
import { isBase64 } from "../../src/modules/threads/attachments";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { postPhoneWebhook, registerAppPhone } from "../helpers/phone";
import { RECIPIENT } from "../helpers/numbers";
import type { CreatedKey } from "../../src/modules/accounts/service";

const ADA = RECIPIENT;
const PNG = Buffer.from(MMS_PICTURE_PNG, "base64");
const SVG = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" onload="window.pwned=1"><script>window.pwned=2</script><rect width="9" height="9"/></svg>',
);

/** One part as MmsDownloadedPayload.Attachment: partId, contentType, name?, size?, data?. */
interface AppAttachment {
  partId: number;
  contentType: string;
  name?: string | null;
  size?: number | null;
  data?: string | null;
}

/** A field left out when null, as Gson writes it. */
const gson = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined));

/** MmsDownloadedPayload as the app serializes it. */
function mmsDownloaded(p: {
  messageId: string;
  sender: string;
  body?: string | null;
  subject?: string | null;
  attachments: AppAttachment[];
  receivedAt: Date;
}) {
  return gson({
    messageId: p.messageId,
    sender: p.sender,
    recipient: "+15550009999",
    simNumber: 1,
    phoneNumber: p.sender,
    body: p.body ?? null,
    subject: p.subject ?? null,
    attachments: p.attachments.map((a) => gson({ ...a })),
    receivedAt: p.receivedAt.toISOString(),
  });
}

/** A part of `bytes` as MmsContentReader reads it. */
const part = (partId: number, contentType: string, name: string | null, bytes: Buffer): AppAttachment => ({
  partId,
  contentType,
  name,
  size: bytes.length,
  data: bytes.toString("base64"),
});

async function phone(ctx: TestContext) {
  const reg = await registerAppPhone(ctx, "Phone", { "user-agent": "me.capcom.smsgateway/1.68.0" });
  let n = 0;
  return {
    async post(event: string, payload: Record<string, unknown>) {
      const body = JSON.stringify({ id: `evt-${++n}`, webhookId: "w", event, deviceId: reg.id, payload });
      return (await postPhoneWebhook(ctx, reg.signingKey, body)).status;
    },
  };
}

/** The thread messages of ADA's thread, newest first. */
async function messagesOf(ctx: TestContext) {
  const thread = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads.find((t: { peer: string }) => t.peer === ADA);
  return expectEnvelope(await ctx.get(`/v1/api/thread/${thread.thread_id}/messages`), 200).data.messages;
}

/** GET of an attachment's URL with a key: status, headers and the bytes. */
async function fetchBytes(ctx: TestContext, url: string, key: CreatedKey) {
  const res = await ctx.app.handle(
    new Request(`http://localhost${url}`, { headers: { authorization: `Bearer ${key.api_key}`, "x-api-secret": key.api_secret } }),
  );
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

describe("a received MMS's attachments", () => {
  test("the app's mms:downloaded: pictures and text kept and served byte for byte, hostile types as downloads, bad parts refused alone", async () => {
    const ctx = await createTestContext();
    await ctx.post("/v1/api/webhook/create", { url: "https://hooks.example.com/in", events: ["message.mms_downloaded"] });
    const p = await phone(ctx);
    const at = new Date(ctx.clock.now());
    // The headers first, as the WAP push brings them; then the content.
    expect(
      await p.post("mms:received", {
        messageId: "T1",
        sender: ADA,
        transactionId: "T1",
        subject: "Our table",
        size: 9000,
        receivedAt: at.toISOString(),
      }),
    ).toBe(204);
    const text = Buffer.from("See you at 8 — Ada", "utf8");
    const payload = mmsDownloaded({
      messageId: "41",
      sender: ADA,
      body: "Photo of the table",
      subject: "Our table",
      receivedAt: at,
      attachments: [
        part(11, "image/png", "table.png", PNG),
        part(12, "text/plain; charset=utf-8", null, text),
        part(13, "image/svg+xml", "drawing.svg", SVG),
        // Not base64 at all, then base64 whose bytes are not as many as its size says, then no bytes.
        { partId: 14, contentType: "image/jpeg", name: "broken.jpg", size: 3, data: "not*base64" },
        { partId: 15, contentType: "image/jpeg", name: "short.jpg", size: 99, data: PNG.toString("base64") },
        { partId: 16, contentType: "video/mp4", name: "clip.mp4", size: null, data: null },
      ],
    });
    // What the app sends: no null field (Gson), the attachment without bytes has no data key.
    expect(Object.keys(payload.attachments as object[])).toHaveLength(6);
    expect((payload.attachments as Record<string, unknown>[])[5]).toEqual({ partId: 16, contentType: "video/mp4", name: "clip.mp4" });
    expect(await p.post("mms:downloaded", payload)).toBe(204);

    const [message] = await messagesOf(ctx);
    expect(message.body).toBe("Photo of the table");
    expect(message.mms.downloaded).toBe(true);
    expect(message.attachments.map((a: Record<string, unknown>) => [a.part_id, a.content_type, a.served_as, a.name, a.size])).toEqual([
      [11, "image/png", "image/png", "table.png", PNG.length],
      [12, "text/plain; charset=utf-8", "text/plain; charset=utf-8", null, text.length],
      [13, "image/svg+xml", "application/octet-stream", "drawing.svg", SVG.length],
    ]);
    expect(message.attachments_dropped).toEqual([
      { part_id: 14, content_type: "image/jpeg", name: "broken.jpg", size: 3, reason: "invalid_base64" },
      { part_id: 15, content_type: "image/jpeg", name: "short.jpg", size: 99, reason: "size_mismatch" },
      { part_id: 16, content_type: "video/mp4", name: "clip.mp4", size: null, reason: "no_data" },
    ]);

    const [png, txt, svg] = message.attachments as { url: string; attachment_id: number }[];
    expect(png.url).toMatch(new RegExp(`^/v1/api/thread/\\d+/message/${message.message_id}/attachment/${png.attachment_id}$`));
    const picture = await fetchBytes(ctx, png.url, ctx.key);
    expect(picture.status).toBe(200);
    expect(picture.bytes.equals(PNG)).toBe(true);
    expect(picture.headers.get("content-type")).toBe("image/png");
    expect(picture.headers.get("content-disposition")).toBe(`inline; filename="table.png"; filename*=UTF-8''table.png`);
    expect(picture.headers.get("x-content-type-options")).toBe("nosniff");
    expect(picture.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");

    const note = await fetchBytes(ctx, txt.url, ctx.key);
    expect(note.bytes.toString("utf8")).toBe("See you at 8 — Ada");
    expect(note.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(note.headers.get("content-disposition")).toStartWith(`inline; filename="attachment-${txt.attachment_id}"`);

    // An SVG (script and onload inside) is never served as an image: bytes, as a download.
    const drawing = await fetchBytes(ctx, svg.url, ctx.key);
    expect(drawing.bytes.equals(SVG)).toBe(true);
    expect(drawing.headers.get("content-type")).toBe("application/octet-stream");
    expect(drawing.headers.get("content-disposition")).toStartWith('attachment; filename="drawing.svg"');
    expect(drawing.headers.get("x-content-type-options")).toBe("nosniff");
    expect(drawing.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");

    // The event says what it carries: each kept part with its URL, and each dropped one with its reason.
    const [event] = (await ctx.sql.all<{ data: string }>("SELECT data FROM event WHERE type = 'message.mms_downloaded'")).map((r) =>
      JSON.parse(r.data),
    );
    expect(event.thread_message_id).toBe(message.message_id);
    expect(event.attachments.map((a: { url: string }) => a.url)).toEqual([png.url, txt.url, svg.url]);
    expect(event.attachments_dropped.map((d: { part_id: number; reason: string }) => [d.part_id, d.reason])).toEqual([
      [14, "invalid_base64"],
      [15, "size_mismatch"],
      [16, "no_data"],
    ]);
    // A re-post of the same download (the app retries) keeps nothing twice.
    expect(await p.post("mms:downloaded", payload)).toBe(204);
    expect(Number((await ctx.sql.get<{ n: number }>("SELECT count(*) AS n FROM thread_attachment"))!.n)).toBe(3);
  });

  test("tenancy: another workspace's key, and ids that do not belong together, get 404", async () => {
    const ctx = await createTestContext();
    const p = await phone(ctx);
    const at = new Date(ctx.clock.now());
    await p.post(
      "mms:downloaded",
      mmsDownloaded({ messageId: "1", sender: ADA, attachments: [part(1, "image/png", "a.png", PNG)], receivedAt: at }),
    );
    await p.post(
      "mms:downloaded",
      mmsDownloaded({
        messageId: "2",
        sender: ADA,
        attachments: [part(1, "image/png", "b.png", PNG)],
        receivedAt: new Date(at.getTime() + 1000),
      }),
    );
    const [second, first] = await messagesOf(ctx);
    const url = first.attachments[0].url as string;
    expect((await fetchBytes(ctx, url, ctx.key)).status).toBe(200);
    const other = await ctx.otherWorkspace();
    const foreign = await fetchBytes(ctx, url, other.key);
    expect(foreign.status).toBe(404);
    expect(JSON.parse(foreign.bytes.toString()).data.error_code).toBe("not_found");
    // The first message's attachment asked for under the second message.
    const crossed = url.replace(`/message/${first.message_id}/`, `/message/${second.message_id}/`);
    expect((await fetchBytes(ctx, crossed, ctx.key)).status).toBe(404);
    expect((await fetchBytes(ctx, url.replace(/\/thread\/\d+\//, "/thread/999/"), ctx.key)).status).toBe(404);
    expect((await fetchBytes(ctx, `${url.replace(/\d+$/, "0")}`, ctx.key)).status).toBe(400);
  });

  test("the caps: past the message's or the workspace's, a part is dropped with its reason and the text stays", async () => {
    const ctx = await createTestContext({
      config: { mmsCaps: { perMessageBytes: 100, perWorkspaceBytes: 140 }, metricsToken: "metrics-token-0123456789" },
    });
    const p = await phone(ctx);
    const sixty = (fill: number) => Buffer.alloc(60, fill);
    const at = ctx.clock.now();
    await p.post(
      "mms:downloaded",
      mmsDownloaded({
        messageId: "1",
        sender: ADA,
        body: "Two pictures",
        attachments: [
          part(1, "image/png", "one.png", sixty(1)),
          part(2, "image/png", "two.png", sixty(2)),
          part(3, "image/png", "tiny.png", Buffer.alloc(30, 3)),
        ],
        receivedAt: new Date(at),
      }),
    );
    await p.post(
      "mms:downloaded",
      mmsDownloaded({
        messageId: "2",
        sender: ADA,
        body: "Another",
        attachments: [part(1, "image/png", "three.png", sixty(4))],
        receivedAt: new Date(at + 1000),
      }),
    );
    const [second, first] = await messagesOf(ctx);
    // 60 kept; 60 more would pass the message's 100; 30 still fits.
    expect(first.body).toBe("Two pictures");
    expect(first.attachments.map((a: { name: string }) => a.name)).toEqual(["one.png", "tiny.png"]);
    expect(first.attachments_dropped).toEqual([
      { part_id: 2, content_type: "image/png", name: "two.png", size: 60, reason: "message_cap" },
    ]);
    // The workspace holds 90; 60 more would pass its 140.
    expect(second.body).toBe("Another");
    expect(second.attachments).toEqual([]);
    expect(second.attachments_dropped.map((d: { reason: string }) => d.reason)).toEqual(["workspace_cap"]);
    // The metrics: 210 bytes came, 90 kept and 120 dropped; 90 stored.
    const page = (await ctx.get("/metrics", { key: null, headers: { authorization: "Bearer metrics-token-0123456789" } })).text;
    expect(page).toContain('pigeon_mms_attachment_received_bytes_total{outcome="kept"} 90');
    expect(page).toContain('pigeon_mms_attachment_received_bytes_total{outcome="dropped"} 120');
    expect(page).toContain("pigeon_mms_attachment_stored_bytes 90");
  });

  test("a part of megabytes arrives whole (the phone's webhook takes it), and base64 is checked strictly", async () => {
    const ctx = await createTestContext();
    const p = await phone(ctx);
    const big = randomBytes(4_000_000);
    const payload = mmsDownloaded({
      messageId: "9",
      sender: ADA,
      attachments: [part(1, "video/mp4", "clip.mp4", big)],
      receivedAt: new Date(ctx.clock.now()),
    });
    // More than the 1 MiB every other route takes.
    expect(JSON.stringify(payload).length).toBeGreaterThan(5_000_000);
    expect(await p.post("mms:downloaded", payload)).toBe(204);
    const [message] = await messagesOf(ctx);
    expect(message.attachments_dropped).toEqual([]);
    const served = await fetchBytes(ctx, message.attachments[0].url, ctx.key);
    expect(served.headers.get("content-type")).toBe("video/mp4");
    expect(served.bytes.equals(big)).toBe(true);

    for (const good of ["", "AAAA", "AA==", "AAA=", "ab+/", big.toString("base64")])
      expect({ good, ok: isBase64(good) }).toEqual({ good, ok: true });
    for (const bad of ["A", "AA=", "A===", "AA=A", "AAAA\n", "AAAA ", "-_AA", "AAé=", "====", "=AAA"])
      expect({ bad, ok: isBase64(bad) }).toEqual({ bad, ok: false });
  });
});
