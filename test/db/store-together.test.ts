// Requests that arrive together: on PostgreSQL a key's concurrent requests are admitted in one
// call (src/http/rate-limit/shared.ts) and its concurrent sends without an Idempotency-Key are stored
// in one unit of work (sending.acceptTogether), both through src/lib/batcher.ts. Whatever the
// batching, the answers must be those of the same requests coming one by one: each reply names its
// own message, and the per-minute limit, the credits and the monthly allowance are each used up
// exactly, never passed. Runs on both back ends (SQLite stores a request a unit).
import { describe, expect, test } from "bun:test";
import { createBatcher } from "../../src/lib/batcher";
import { createTestContext } from "../helpers/context";
import { RECIPIENT } from "../helpers/numbers";

const fake = { url: "http://127.0.0.1:9", accountSid: "AC1", authToken: "t" };

describe("createBatcher", () => {
  test("the first ask runs alone; asks that come while it runs share the next run, in order; a failed run fails only its own", async () => {
    const runs: number[][] = [];
    let release: () => void = () => {};
    const batch = createBatcher<number, string>(async (asks) => {
      runs.push(asks);
      if (runs.length === 1) await new Promise<void>((r) => (release = r));
      if (asks.includes(13)) throw new Error("unlucky");
      return asks.map((a) => `answer ${a}`);
    });
    const first = batch("k", 1);
    const waiting = [batch("k", 2), batch("k", 3), batch("k", 4)];
    const other = batch("other", 9);
    expect(await other).toBe("answer 9");
    release();
    expect(await first).toBe("answer 1");
    expect(await Promise.all(waiting)).toEqual(["answer 2", "answer 3", "answer 4"]);
    expect(runs).toEqual([[1], [9], [2, 3, 4]]);
    await expect(batch("k", 13)).rejects.toThrow("unlucky");
    expect(await batch("k", 5)).toBe("answer 5");
  });
});

describe("concurrent sends of one key", () => {
  test("each reply is its own request's, and credits for 25 of 40 sends are used up exactly", async () => {
    const ctx = await createTestContext();
    await ctx.cloudDevice(fake);
    await ctx.topUp(25);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => ctx.post("/v1/api/sms/send", { recipient_contact: RECIPIENT, message: `message ${i}` })),
    );
    const accepted = answers.filter((a) => a.status === 200);
    expect(accepted).toHaveLength(25);
    for (const a of answers.filter((a) => a.status !== 200)) {
      expect(a.status).toBe(402);
      expect(a.body.data.error_code).toBe("insufficient_credits");
    }
    answers.forEach((a, i) => {
      if (a.status === 200) expect(a.body.data.message).toBe(`message ${i}`);
    });
    // Each reply's notification is the one it names, with its own text.
    for (const [i, a] of answers.entries()) {
      if (a.status !== 200) continue;
      const row = await ctx.sql.get<{ message: string }>("SELECT message FROM notification WHERE id = ?", [a.body.data.notification_id]);
      expect(row?.message).toBe(`message ${i}`);
    }
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(0);
    expect((await ctx.sql.get<{ n: number }>("SELECT count(*) AS n FROM notification"))?.n).toBe(25);
  });

  test("a plan's monthly allowance of 10 SMS holds against 25 sends at once", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    await ctx.services.accounts.setAccountPlan(ctx.account.id, "free");
    const answers = await Promise.all(
      Array.from({ length: 25 }, (_, i) => ctx.post("/v1/api/sms/send", { recipient_contact: RECIPIENT, message: `m${i}` })),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(10);
    expect(answers.filter((a) => a.status === 402).map((a) => a.body.data.error_code)).toEqual(Array(15).fill("free_tier_exhausted"));
  });

  test("a per-minute limit of 15 admits exactly 15 of 40 requests, each told what was left after it", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 15 });
    // A key of its own: the phone's pairing above counted against the context's key.
    const key = await ctx.services.accounts.createKey("burst", ctx.workspace.id);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => ctx.post("/v1/api/sms/send", { recipient_contact: RECIPIENT, message: `m${i}` }, { key })),
    );
    const admitted = answers.filter((a) => a.status === 200);
    expect(admitted).toHaveLength(15);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(25);
    const remaining = admitted.map((a) => Number(a.headers.get("x-ratelimit-remaining"))).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 15 }, (_, i) => i));
  });

  test("with room for all of them, 40 requests at once are each told what was left after it", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 100 });
    const key = await ctx.services.accounts.createKey("burst", ctx.workspace.id);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => ctx.post("/v1/api/sms/send", { recipient_contact: RECIPIENT, message: `m${i}` }, { key })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(40).fill(200));
    const remaining = answers.map((a) => Number(a.headers.get("x-ratelimit-remaining"))).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 40 }, (_, i) => 60 + i));
  });
});
