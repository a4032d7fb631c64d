// Inbound rules (src/modules/rules) in process, on both back ends, with SMS reported as the app
// reports them: the API refuses what cannot be a rule; a keyword rule replies once within its
// window and never to an opted-out sender; the opt-out keywords come before every rule; forward,
// webhook and tag rules act; two servers whose rules answer each other stop at the limits; business
// hours are read in the workspace's zone; priority, continue and channels decide who acts.
import { afterEach, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { EVENT_CATALOGUE } from "../../src/modules/events/catalogue";
import { waitFor } from "../helpers/api";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { appPhone } from "../helpers/phone";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";

const ADA = RECIPIENT;
const BOB = SECOND_RECIPIENT;
const STAFF = "+14155550999";
const MINUTE = 60_000;

const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

const rule = async (ctx: TestContext, body: Record<string, unknown>) => {
  const reply = await ctx.post("/v1/api/rule/create", body);
  if (reply.status !== 200) throw new Error(reply.text);
  return reply.body.data;
};
const notificationsTo = (ctx: TestContext, to: string) =>
  ctx.sql.all<{ id: number; message: string; device_id: number; sim_number: number | null }>(
    "SELECT id, message, device_id, sim_number FROM notification WHERE recipient = ? ORDER BY id",
    [to],
  );
/** The automatic messages go out after the inbound unit commits: wait until `n` are stored. */
const settleTo = async (ctx: TestContext, to: string, n: number) => {
  await waitFor(`${n} messages to ${to}`, async () => (await notificationsTo(ctx, to)).length >= n, { timeoutMs: 2000 });
  await Bun.sleep(20);
  return notificationsTo(ctx, to);
};
const tested = async (ctx: TestContext, body: Record<string, unknown>) =>
  expectEnvelope(await ctx.post("/v1/api/rule/test", body), 200).data.matches as {
    rule_id: number;
    name: string;
    actions: { action: string; done: boolean; reason: string | null }[];
  }[];

describe("rules: the API", () => {
  test("create, list, get, update, order and delete; refusals name the field", async () => {
    const ctx = await createTestContext();
    const prices = await rule(ctx, { name: "Prices", match: { keyword: "price" }, action: { reply: { text: "See example.com/prices" } } });
    expect(prices).toMatchObject({
      name: "Prices",
      match: { keyword: "PRICE" },
      priority: 10,
      enabled: true,
      continue: false,
      channels: null,
    });
    const hours = await rule(ctx, { name: "Hours", match: { regex: "\\bopen\\b" }, action: { tag: "Asked Hours" } });
    expect(hours).toMatchObject({ priority: 20, action: { tag: "asked hours" } });
    expect((expectEnvelope(await ctx.get("/v1/api/rule/list"), 200).data.rules as { name: string }[]).map((r) => r.name)).toEqual([
      "Prices",
      "Hours",
    ]);
    const ordered = expectEnvelope(await ctx.post("/v1/api/rule/priority", { rule_ids: [hours.rule_id] }), 200).data.rules;
    expect(ordered.map((r: { name: string; priority: number }) => [r.name, r.priority])).toEqual([
      ["Hours", 10],
      ["Prices", 20],
    ]);
    const updated = expectEnvelope(
      await ctx.post("/v1/api/rule/update", { rule_id: prices.rule_id, enabled: false, name: "Price list" }),
      200,
    ).data;
    expect(updated).toMatchObject({ name: "Price list", enabled: false, match: { keyword: "PRICE" } });
    expect(expectEnvelope(await ctx.get(`/v1/api/rule/${prices.rule_id}`), 200).data.name).toBe("Price list");

    const refused = async (body: Record<string, unknown>, status: number, code: string, field?: string) => {
      const data = expectEnvelope(await ctx.post("/v1/api/rule/create", { name: "X", ...body }), status).data;
      expect({ code: data.error_code, field: data.field }).toEqual({ code, field });
    };
    const reply = { reply: { text: "hi" } };
    await refused({ match: { keyword: "a", any: true }, action: reply }, 400, "validation_error", "match");
    await refused({ match: { regex: "(a)\\1" }, action: reply }, 400, "invalid_regex", "match.regex");
    await refused({ match: { regex: "(?<=a)b" }, action: reply }, 400, "invalid_regex", "match.regex");
    await refused({ match: { any: true }, action: {} }, 400, "validation_error", "action");
    await refused(
      { match: { any: true }, action: { reply: { text: "hi", colour: "red" } } },
      400,
      "validation_error",
      "action.reply.colour",
    );
    await refused({ match: { any: true }, action: { forward: { to: "12" } } }, 400, "invalid_phone_number", "action.forward.to");
    await refused({ match: { any: true }, action: { reply: { template_id: 999 } } }, 404, "not_found", "action.reply.template_id");
    await refused({ match: { any: true }, action: { tag: "a<b" } }, 400, "validation_error", "action.tag");
    await refused(
      { match: { any: true }, action: reply, when: { outside_hours: { start: "9", end: "17:00" } } },
      400,
      "validation_error",
      "when.outside_hours.start",
    );
    await refused(
      { match: { any: true }, action: reply, when: { outside_hours: { start: "09:00", end: "17:00", days: ["funday"] } } },
      400,
      "validation_error",
      "when.outside_hours.days",
    );
    await refused(
      { match: { any: true }, action: { webhook: { url: "ftp://example.com/x" } } },
      400,
      "invalid_webhook_url",
      "action.webhook.url",
    );
    await refused({ name: "Hours", match: { any: true }, action: reply }, 409, "duplicate_rule", "name");
    expect(expectEnvelope(await ctx.post("/v1/api/rule/priority", { rule_ids: [999] }), 404).data.error_code).toBe("not_found");
    // Nothing half-stored: still the two rules, and no webhook subscription left by the refused one.
    expect(expectEnvelope(await ctx.get("/v1/api/rule/list"), 200).data.rules).toHaveLength(2);
    expect(expectEnvelope(await ctx.get("/v1/api/webhook/list"), 200).data.webhooks).toHaveLength(0);

    expect(expectEnvelope(await ctx.post("/v1/api/rule/delete", { rule_id: hours.rule_id }), 200).data).toEqual({
      rule_id: hours.rule_id,
      deleted: true,
    });
    expect(expectEnvelope(await ctx.get(`/v1/api/rule/${hours.rule_id}`), 404).data.error_code).toBe("not_found");
  });

  test("a pattern that backtracks for minutes elsewhere matches in linear time; keywords read the first word", async () => {
    const ctx = await createTestContext();
    await rule(ctx, { name: "Nested", match: { regex: "^(a+)+$" }, action: { tag: "a" }, continue: true });
    await rule(ctx, { name: "Stars", match: { regex: ".*.*.*x" }, action: { tag: "x" }, continue: true });
    await rule(ctx, { name: "Price", match: { keyword: ["price", "prices"] }, action: { tag: "p" } });
    // 4,000 a's and a b: a backtracking engine tries 2^4000 ways for the first, 4000^3 for the second.
    expect(await tested(ctx, { body: `${"a".repeat(4000)}b` })).toEqual([]);
    expect((await tested(ctx, { body: "a".repeat(4000) })).map((m) => m.name)).toEqual(["Nested"]);
    expect((await tested(ctx, { body: "Price? how much" })).map((m) => m.name)).toEqual(["Price"]);
    expect((await tested(ctx, { body: "PRICES please" })).map((m) => m.name)).toEqual(["Price"]);
    expect(await tested(ctx, { body: "the price" })).toEqual([]);
    expect(await tested(ctx, { body: "priceless" })).toEqual([]);
  });
});

describe("rules: replies", () => {
  test("a keyword rule replies once within its window through the phone and SIM it came in on, and not to an opted-out sender", async () => {
    const ctx = await createTestContext();
    const phone = await appPhone(ctx);
    await rule(ctx, { name: "Prices", match: { keyword: "PRICE" }, action: { reply: { text: "Our prices: example.com/prices" } } });

    await phone.receive(ADA, "Price?", 2);
    const first = await settleTo(ctx, ADA, 1);
    expect(first).toEqual([
      expect.objectContaining({ message: "Our prices: example.com/prices", device_id: phone.deviceId, sim_number: 2 }),
    ]);
    // Within the 10-minute window: no second reply.
    ctx.clock.advance(5 * MINUTE);
    await phone.receive(ADA, "price");
    await Bun.sleep(30);
    expect(await notificationsTo(ctx, ADA)).toHaveLength(1);
    expect(ctx.logs.some((l) => l.includes('rule "Prices" sent no reply: this rule replied to the sender within the last 600 s'))).toBe(
      true,
    );
    // After it: one more.
    ctx.clock.advance(6 * MINUTE);
    await phone.receive(ADA, "PRICE");
    expect(await settleTo(ctx, ADA, 2)).toHaveLength(2);
    const listed = expectEnvelope(await ctx.get("/v1/api/rule/list"), 200).data.rules[0];
    expect(listed.matched_count).toBe(3);

    // STOP is the opt-out keyword's: confirmed by it alone, no rule hears it; then PRICE gets no reply.
    await rule(ctx, { name: "Anything", match: { any: true }, action: { tag: "wrote" }, priority: 1 });
    await phone.receive(BOB, "STOP");
    const confirmation = await settleTo(ctx, BOB, 1);
    expect(confirmation).toHaveLength(1);
    expect(confirmation[0].message).toContain("unsubscribed");
    expect(expectEnvelope(await ctx.get("/v1/api/contact/list", { query: { tag: "wrote" } }), 200).data.contacts).toEqual([]);
    ctx.clock.advance(MINUTE);
    await phone.receive(BOB, "PRICE");
    await Bun.sleep(30);
    expect(await notificationsTo(ctx, BOB)).toHaveLength(1);
    // The tester says why, for a sender given.
    await ctx.post("/v1/api/rule/delete", { rule_id: (await ctx.get("/v1/api/rule/list")).body.data.rules[0].rule_id });
    expect(await tested(ctx, { body: "price", from: BOB })).toEqual([
      { rule_id: expect.any(Number), name: "Prices", actions: [{ action: "reply", done: false, reason: "the sender opted out" }] },
    ]);
  });

  test("never to one of the workspace's own numbers; at most five a minute to one sender across rules", async () => {
    const ctx = await createTestContext();
    const phone = await appPhone(ctx);
    // A pool member's number is the workspace's own.
    await ctx.post("/v1/api/pool/create", { name: "Ours", members: [{ device_id: phone.deviceId, number: STAFF }] });
    for (let i = 1; i <= 7; i++)
      await rule(ctx, { name: `R${i}`, match: { any: true }, action: { reply: { text: `answer ${i}` } }, continue: true });
    await phone.receive(STAFF, "hello");
    await Bun.sleep(50);
    expect(await notificationsTo(ctx, STAFF)).toHaveLength(0);

    await phone.receive(ADA, "hello");
    const replies = await settleTo(ctx, ADA, 5);
    expect(replies.map((r) => r.message)).toEqual(["answer 1", "answer 2", "answer 3", "answer 4", "answer 5"]);
    const outcome = await tested(ctx, { body: "again", from: ADA });
    expect(outcome[0].actions[0].reason).toBe("this rule replied to the sender within the last 600 s");
  });

  test("a rule with a short window replying does not clear another rule's longer window", async () => {
    const ctx = await createTestContext();
    const phone = await appPhone(ctx);
    await rule(ctx, { name: "Hours", match: { keyword: "HOURS" }, action: { reply: { text: "9 to 5" } }, reply_window_seconds: 3600 });
    await rule(ctx, { name: "Menu", match: { keyword: "MENU" }, action: { reply: { text: "Rye, spelt" } }, reply_window_seconds: 10 });
    await phone.receive(ADA, "hours?");
    await settleTo(ctx, ADA, 1);
    ctx.clock.advance(5 * MINUTE);
    await phone.receive(ADA, "menu?");
    await settleTo(ctx, ADA, 2);
    ctx.clock.advance(5 * MINUTE);
    // Ten minutes into Hours' hour: still no second answer from it.
    await phone.receive(ADA, "hours again?");
    await Bun.sleep(50);
    expect((await notificationsTo(ctx, ADA)).map((n) => n.message)).toEqual(["9 to 5", "Rye, spelt"]);
  });

  test("forwards count in the sender's budget: a flood of texts forwards five a minute, not one each", async () => {
    const ctx = await createTestContext();
    const phone = await appPhone(ctx);
    await rule(ctx, { name: "To staff", match: { any: true }, action: { forward: { to: STAFF } } });
    for (let i = 1; i <= 8; i++) await phone.receive(ADA, `message ${i}`);
    expect((await settleTo(ctx, STAFF, 5)).map((n) => n.message)).toEqual([1, 2, 3, 4, 5].map((i) => `From ${ADA}: message ${i}`));
    await Bun.sleep(50);
    expect(await notificationsTo(ctx, STAFF)).toHaveLength(5);
    expect(
      ctx.logs.some((l) =>
        l.includes('rule "To staff" forwarded nothing: 5 automatic messages went out for the sender in the last minute'),
      ),
    ).toBe(true);
    // A minute on, the sender's messages are forwarded again.
    ctx.clock.advance(MINUTE + 1000);
    await phone.receive(ADA, "message 9");
    expect((await settleTo(ctx, STAFF, 6)).at(-1)!.message).toBe(`From ${ADA}: message 9`);
  });

  test("two servers whose rules answer every message stop at the window: one reply each", async () => {
    const a = await createTestContext();
    const b = await createTestContext();
    const phoneA = await appPhone(a);
    const phoneB = await appPhone(b);
    const numberA = "+14155550101";
    const numberB = "+14155550102";
    await rule(a, { name: "Echo", match: { any: true }, action: { reply: { text: "Thanks, A here" } } });
    await rule(b, { name: "Echo", match: { any: true }, action: { reply: { text: "Thanks, B here" } } });
    // What each sends is carried to the other as an inbound SMS from its number, for 20 rounds.
    let carried = 0;
    await phoneA.receive(numberB, "hello A");
    for (let round = 0; round < 20; round++) {
      for (const [from, toPhone, fromNumber] of [
        [a, phoneB, numberA],
        [b, phoneA, numberB],
      ] as const) {
        const pending = await from.sql.all<{ id: number; message: string }>(
          "SELECT id, message FROM notification WHERE status = 'pending' ORDER BY id",
        );
        for (const n of pending) {
          await from.sql.run("UPDATE notification SET status = 'delivered' WHERE id = ?", [n.id]);
          await toPhone.receive(fromNumber, n.message);
          carried++;
        }
      }
      await Bun.sleep(10);
    }
    expect(carried).toBe(2);
    expect((await notificationsTo(a, numberB)).map((n) => n.message)).toEqual(["Thanks, A here"]);
    expect((await notificationsTo(b, numberA)).map((n) => n.message)).toEqual(["Thanks, B here"]);
  });
});

describe("rules: forward, webhook, tag", () => {
  test("a forward rule texts the staff number; a webhook rule posts the message signed; a tag rule tags the sender", async () => {
    const ctx = await createTestContext();
    const phone = await appPhone(ctx);
    const received: { headers: Headers; body: string }[] = [];
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async (req) => {
        received.push({ headers: req.headers, body: await req.text() });
        return new Response("ok");
      },
    });
    stops.push(() => server.stop(true));
    await rule(ctx, { name: "Urgent", match: { regex: "urgent|asap" }, action: { forward: { to: STAFF } }, continue: true });
    const hook = await rule(ctx, {
      name: "CRM",
      match: { any: true },
      action: { webhook: { url: `http://127.0.0.1:${server.port}/in` }, tag: "Lead" },
    });
    expect(hook.action.webhook).toEqual({
      url: `http://127.0.0.1:${server.port}/in`,
      webhook_id: expect.any(Number),
      secret: expect.stringMatching(/^whsec_/),
    });
    // Its subscription is listed with the others, and gets nothing but the rule's matches.
    const subscription = expectEnvelope(await ctx.get(`/v1/api/webhook/${hook.action.webhook.webhook_id}`), 200).data;
    expect(subscription).toMatchObject({ events: [], description: 'Inbound rule "CRM"' });

    await ctx.post("/v1/api/contact/create", { name: "Ada", phone: ADA, tags: ["Known"] });
    await phone.receive(ADA, "Please call back ASAP");
    const forwarded = await settleTo(ctx, STAFF, 1);
    expect(forwarded[0].message).toBe("From Ada (+14155552671): Please call back ASAP");
    await phone.receive(BOB, "hello there");

    await ctx.services.webhooks.deliverDue();
    expect(received).toHaveLength(2);
    // Delivered side by side: told apart by sender.
    const first = received.find((r) => JSON.parse(r.body).data.message.from === ADA)!;
    const event = JSON.parse(first.body);
    expect(event).toMatchObject({
      type: "rule.matched",
      data: { rule_name: "CRM", message: { from: ADA, body: "Please call back ASAP", channel: "sms", device_id: phone.deviceId } },
    });
    // The example /docs shows has the same fields.
    const documented = EVENT_CATALOGUE.find((e) => e.type === "rule.matched")!.data as { message: object };
    expect(Object.keys(event.data).sort()).toEqual(Object.keys(documented).sort());
    expect(Object.keys(event.data.message).sort()).toEqual(Object.keys(documented.message).sort());
    const [t, v1] = first.headers
      .get("x-pigeon-signature")!
      .split(",")
      .map((p) => p.split("=")[1]);
    expect(v1).toBe(createHmac("sha256", hook.action.webhook.secret).update(`${t}.${first.body}`).digest("hex"));

    // The tag: added to Ada's contact; Bob's contact made, named by his number.
    const tagged = expectEnvelope(await ctx.get("/v1/api/contact/list", { query: { tag: "lead" } }), 200).data.contacts;
    expect(tagged.map((c: { phone: string; name: string; tags: string[] }) => [c.phone, c.name, c.tags])).toEqual([
      [ADA, "Ada", ["known", "lead"]],
      [BOB, BOB, ["lead"]],
    ]);
    // Deleting the rule deletes its subscription.
    await ctx.post("/v1/api/rule/delete", { rule_id: hook.rule_id });
    expect(expectEnvelope(await ctx.get(`/v1/api/webhook/${hook.action.webhook.webhook_id}`), 404).data.error_code).toBe("not_found");
  });
});

describe("rules: a received data SMS", () => {
  test("a webhook rule's message carries data_message; a forward names the port and the byte count", async () => {
    const ctx = await createTestContext();
    const phone = await appPhone(ctx);
    const received: string[] = [];
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async (req) => {
        received.push(await req.text());
        return new Response("ok");
      },
    });
    stops.push(() => server.stop(true));
    await rule(ctx, { name: "To staff", match: { any: true }, action: { forward: { to: STAFF } }, continue: true });
    await rule(ctx, { name: "CRM", match: { any: true }, action: { webhook: { url: `http://127.0.0.1:${server.port}/in` } } });

    // Four bytes to the app's port, 53739 (the only one the app receives on).
    await phone.receiveData(ADA, "AQIDBA==");
    const [forward] = await settleTo(ctx, STAFF, 1);
    expect(forward.message).toBe(`From ${ADA}: [data SMS to port 53739, 4 bytes]`);
    await ctx.services.webhooks.deliverDue();
    expect(received).toHaveLength(1);
    const event = JSON.parse(received[0]);
    expect(event).toMatchObject({ type: "rule.matched", data: { rule_name: "CRM" } });
    expect(event.data.message).toEqual({
      thread_id: expect.any(Number),
      message_id: expect.any(Number),
      channel: "sms",
      from: ADA,
      body: "",
      data_message: { data: "AQIDBA==", port: 53739 },
      received_at: new Date(ctx.clock.now()).toISOString(),
      device_id: phone.deviceId,
    });

    // A text after it: its forward is the text, and its webhook has no data_message.
    await phone.receive(ADA, "and a text");
    expect((await settleTo(ctx, STAFF, 2))[1].message).toBe(`From ${ADA}: and a text`);
    await ctx.services.webhooks.deliverDue();
    expect(received).toHaveLength(2);
    const text = JSON.parse(received[1]).data.message;
    expect(text).toMatchObject({ body: "and a text" });
    expect(text).not.toHaveProperty("data_message");
  });
});

describe("rules: business hours, order, channels", () => {
  test("outside_hours holds outside the open hours in the workspace's zone", async () => {
    const ctx = await createTestContext();
    expectEnvelope(await ctx.post("/v1/api/workspace/settings", { time_zone: "Mars/Olympus" }), 400);
    expect(expectEnvelope(await ctx.post("/v1/api/workspace/settings", { time_zone: "Europe/Berlin" }), 200).data.time_zone).toBe(
      "Europe/Berlin",
    );
    await rule(ctx, {
      name: "Closed",
      match: { any: true },
      when: { outside_hours: { start: "09:00", end: "17:00", days: ["mon", "tue", "wed", "thu", "fri"] } },
      action: { reply: { text: "We are closed" } },
    });
    const at = async (iso: string) => (await tested(ctx, { body: "hi", at: iso })).map((m) => m.name);
    // Wednesday 25 November 2026: Berlin is UTC+1.
    expect(await at("2026-11-25T08:30:00Z")).toEqual([]); // 09:30 in Berlin
    expect(await at("2026-11-25T07:30:00Z")).toEqual(["Closed"]); // 08:30
    expect(await at("2026-11-25T16:00:00Z")).toEqual(["Closed"]); // 17:00
    expect(await at("2026-11-28T12:00:00Z")).toEqual(["Closed"]); // Saturday
  });

  test("the first match wins unless it continues; priority decides the first; channels filter", async () => {
    const ctx = await createTestContext();
    const a = await rule(ctx, { name: "A", match: { keyword: "hi" }, action: { tag: "a" } });
    await rule(ctx, { name: "B", match: { any: true }, action: { tag: "b" } });
    await rule(ctx, { name: "Chat only", match: { any: true }, channels: ["chatapp"], action: { tag: "c" }, priority: 1 });
    const names = async (body: Record<string, unknown>) => (await tested(ctx, body)).map((m) => m.name);
    expect(await names({ body: "hi" })).toEqual(["A"]);
    expect(await names({ body: "hi", channel: "chatapp" })).toEqual(["Chat only"]);
    await ctx.post("/v1/api/rule/update", { rule_id: a.rule_id, continue: true });
    expect(await names({ body: "hi" })).toEqual(["A", "B"]);
    expect(await names({ body: "hello" })).toEqual(["B"]);
  });
});
