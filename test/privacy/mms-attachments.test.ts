// One person's data includes the pictures they sent: the export carries each kept MMS attachment
// with its bytes in base64, and the erasure removes the attachments with their conversation (the
// URL answers 404 after), counting them; another number's attachments stay. On both back ends.
import { describe, expect, test } from "bun:test";
import { createTestContext, expectEnvelope } from "../helpers/context";
import { getBytes, mmsPart, mmsPhone, PNG, threadOf } from "../helpers/mms";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";

const ADA = RECIPIENT;
const BOB = SECOND_RECIPIENT;

describe("privacy and MMS attachments", () => {
  test("the export carries a picture's bytes; the erasure removes it with the conversation and leaves another's", async () => {
    const ctx = await createTestContext();
    const phone = await mmsPhone(ctx);
    const note = Buffer.from("ticket 42");
    await phone.download(ADA, "My ticket", [mmsPart(1, "image/png", "ticket.png", PNG), mmsPart(2, "text/plain", null, note)]);
    ctx.clock.advance(1000);
    await phone.download(BOB, "Bob's", [mmsPart(1, "image/png", "bob.png", PNG)]);
    const ada = (await threadOf(ctx, ADA))!;
    const bob = (await threadOf(ctx, BOB))!;
    const adaUrl = ada.messages[0].attachments[0].url as string;

    const exported = expectEnvelope(await ctx.get("/v1/api/privacy/export", { query: { phone: ADA } }), 200).data;
    const [message] = exported.threads[0].messages;
    expect(message.attachments).toEqual([
      {
        id: ada.messages[0].attachments[0].attachment_id,
        partId: 1,
        contentType: "image/png",
        name: "ticket.png",
        size: PNG.length,
        data_base64: PNG.toString("base64"),
      },
      {
        id: ada.messages[0].attachments[1].attachment_id,
        partId: 2,
        contentType: "text/plain",
        name: null,
        size: note.length,
        data_base64: note.toString("base64"),
      },
    ]);
    // Only the number's own: Bob's picture is not in Ada's export.
    expect(JSON.stringify(exported)).not.toContain("bob.png");

    const erased = expectEnvelope(await ctx.post("/v1/api/privacy/erase", { phone: ADA }), 200).data;
    expect(erased.erased.attachments).toBe(2);
    expect(erased.erased.thread_messages).toBe(1);
    expect((await getBytes(ctx, adaUrl)).status).toBe(404);
    expect(await threadOf(ctx, ADA)).toBeNull();
    const left = await ctx.sql.all<{ name: string }>("SELECT name FROM thread_attachment ORDER BY id");
    expect(left.map((r) => r.name)).toEqual(["bob.png"]);
    const bobs = await getBytes(ctx, bob.messages[0].attachments[0].url);
    expect(bobs.status).toBe(200);
    expect(bobs.bytes.equals(PNG)).toBe(true);
    // The audit counts them, never the number.
    const [audit] = await ctx.sql.all<{ counts: string }>("SELECT counts FROM erasure_log");
    expect(JSON.parse(audit.counts).attachments).toBe(2);
  });
});
