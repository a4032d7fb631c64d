// Retention and received MMS attachments: a prune past the cut-off removes the attachments' bytes
// kept before it (the inbound message stays, naming what it lost with the reason `retention`), a
// finished send in the same thread goes without taking the picture along, a dry run counts the
// same without removing, and what was kept after the cut-off stays byte for byte. On both back ends.
import { describe, expect, test } from "bun:test";
import { smsSender } from "../helpers/api";
import { createTestContext } from "../helpers/context";
import { getBytes, mmsPart, mmsPhone, PNG, threadOf } from "../helpers/mms";
import { RECIPIENT } from "../helpers/numbers";

const ADA = RECIPIENT;
const DAY = 86_400_000;
const send = smsSender({ recipient_contact: ADA, message: "Thanks for the photo" });

describe("retention and MMS attachments", () => {
  test("a prune removes the pictures kept before the cut-off, keeps their message and says why; newer ones stay", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const phone = await mmsPhone(ctx);
    await phone.download(ADA, "Old photo", [mmsPart(1, "image/png", "old.png", PNG)]);
    // A finished send in the same thread, from the same day.
    const sent = await send(ctx, {});
    await ctx.services.state.transition(sent, "sent", { detail: "test" });
    await ctx.services.state.transition(sent, "delivered", { detail: "test" });
    ctx.clock.advance(40 * DAY);
    await phone.download(ADA, "New photo", [mmsPart(1, "image/png", "new.png", PNG)]);
    const before = (await threadOf(ctx, ADA))!;
    const [fresh, old] = before.messages.filter((m: { direction: string }) => m.direction === "inbound");
    const oldUrl = old.attachments[0].url as string;
    expect((await getBytes(ctx, oldUrl)).status).toBe(200);

    const cutOff = ctx.clock.now() - 30 * DAY;
    const dry = await ctx.services.retention.prune(cutOff, { dryRun: true });
    expect(dry.attachments).toBe(1);
    expect(Number((await ctx.sql.get<{ n: number }>("SELECT count(*) AS n FROM thread_attachment"))!.n)).toBe(2);

    const report = await ctx.services.retention.prune(cutOff);
    expect({ attachments: report.attachments, notifications: report.notifications, threads: report.threads }).toEqual({
      attachments: 1,
      notifications: 1,
      threads: 0,
    });
    const after = (await threadOf(ctx, ADA))!;
    // The send went; both MMS stay, the old one without its picture and saying so.
    expect(after.messages.map((m: { body: string }) => m.body)).toEqual(["New photo", "Old photo"]);
    expect(after.messages[1].attachments).toEqual([]);
    expect(after.messages[1].attachments_dropped).toEqual([
      { part_id: 1, content_type: "image/png", name: "old.png", size: PNG.length, reason: "retention" },
    ]);
    expect((await getBytes(ctx, oldUrl)).status).toBe(404);
    const kept = await getBytes(ctx, fresh.attachments[0].url);
    expect(kept.status).toBe(200);
    expect(kept.bytes.equals(PNG)).toBe(true);

    // Again: nothing more to remove.
    expect((await ctx.services.retention.prune(cutOff)).attachments).toBe(0);
  });
});
