// Twilio-style posts, judged by the real `twilio` package: every status callback and every
// incoming-message post must pass `twilio.validateRequest` (Twilio's own signature check), and a
// TwiML answer written with the package's `MessagingResponse` must reach the sender through the
// device and SIM the message came in on. Both back ends.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import twilio from "twilio";
import { expectEnvelope, type TestContext } from "../helpers/context";
import type { FakeCloud } from "../helpers/fake-cloud";
import { startTwilioRig, type TwilioRig } from "../helpers/twilio-rig";
import { appPhone } from "../helpers/phone";
import { parseTwiml } from "../../src/modules/twilio/twiml";
import { RECIPIENT, SECOND_RECIPIENT, CLOUD_NUMBER } from "../helpers/numbers";

const ADA = RECIPIENT;
const BOB = SECOND_RECIPIENT;

interface Posted {
  path: string;
  url: string;
  signature: string | null;
  params: Record<string, string>;
}

/** A receiver on a loopback port: it records each form post and answers with what the test scripted for its path. */
async function startReceiver() {
  const posted: Posted[] = [];
  const answers = new Map<string, { status: number; body: string; type?: string }[]>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const params = Object.fromEntries(new URLSearchParams(await req.text()));
      posted.push({ path: url.pathname, url: req.url, signature: req.headers.get("x-twilio-signature"), params });
      const next = answers.get(url.pathname)?.shift() ?? { status: 204, body: "" };
      return new Response(next.body || null, { status: next.status, headers: { "content-type": next.type ?? "text/xml" } });
    },
  });
  const base = `http://127.0.0.1:${server.port}`;
  return {
    base,
    posted,
    /** The next answers of `path`, in order (after them: 204, no body). */
    answer(path: string, ...list: { status: number; body: string; type?: string }[]) {
      answers.set(path, [...(answers.get(path) ?? []), ...list]);
    },
    of: (path: string) => posted.filter((p) => p.path === path),
    stop: () => server.stop(true),
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

let rig: TwilioRig;
let ctx: TestContext;
let server: ReturnType<typeof Bun.serve>;
let fake: FakeCloud;
let receiver: Receiver;
let sid = "";
let token = "";

function client() {
  const c = twilio(sid, token);
  c.api.baseUrl = `http://127.0.0.1:${server.port}`;
  return c;
}
/** Every post so far, checked the way a Twilio customer's server checks them. */
function expectSigned(list: Posted[]) {
  expect(list.length).toBeGreaterThan(0);
  for (const p of list) expect(twilio.validateRequest(token, p.signature ?? "", p.url, p.params)).toBe(true);
}
const deliverPosts = () => ctx.services.twilio.posts.deliverDue();
const notificationsTo = (to: string) =>
  ctx.sql.all<{ id: number; message: string; device_id: number; sim_number: number | null }>(
    "SELECT id, message, device_id, sim_number FROM notification WHERE recipient = ? ORDER BY id",
    [to],
  );

beforeAll(async () => {
  rig = await startTwilioRig();
  ({ ctx, server, fake, sid, token } = rig);
  receiver = await startReceiver();
});
afterAll(() => {
  rig?.stop();
  receiver?.stop();
});

describe("status callbacks", () => {
  test("each change of status is posted as Twilio posts it, signed so that twilio.validateRequest accepts it", async () => {
    const url = `${receiver.base}/status/one?shop=7`;
    const m = await client().messages.create({ to: ADA, from: CLOUD_NUMBER, body: "Your order shipped", statusCallback: url });
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(1);
    const providerSid = [...fake.messages.keys()].at(-1)!;
    expect((await fake.callback(providerSid, "delivered")).status).toBe(200);
    // One at a time, in order: "delivered" goes once "sent" is made.
    expect(await deliverPosts()).toBe(1);
    expect(await deliverPosts()).toBe(1);
    const posts = receiver.of("/status/one");
    expectSigned(posts);
    expect(posts.map((p) => p.params.MessageStatus)).toEqual(["sent", "delivered"]);
    expect(posts[1].params).toEqual({
      AccountSid: sid,
      ApiVersion: "2010-04-01",
      From: CLOUD_NUMBER,
      MessageSid: m.sid,
      MessageStatus: "delivered",
      SmsSid: m.sid,
      SmsStatus: "delivered",
      To: ADA,
    });
    // Made once: nothing is left to post.
    expect(await deliverPosts()).toBe(0);
    expect(receiver.of("/status/one")).toHaveLength(2);
  });

  test("a message's callbacks keep their order: one refused holds the later ones until it is made", async () => {
    receiver.answer("/status/order", { status: 500, body: "busy" });
    const url = `${receiver.base}/status/order`;
    const m = await client().messages.create({ to: ADA, from: CLOUD_NUMBER, body: "In order", statusCallback: url });
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(1);
    const providerSid = [...fake.messages.keys()].at(-1)!;
    expect((await fake.callback(providerSid, "delivered")).status).toBe(200);
    // Both are due at once; "sent" is refused: "delivered" waits behind it, not past it.
    expect(await deliverPosts()).toBe(1);
    expect(receiver.of("/status/order").map((p) => p.params.MessageStatus)).toEqual(["sent"]);
    expect(await deliverPosts()).toBe(0);
    ctx.clock.advance(31_000);
    expect(await deliverPosts()).toBe(1);
    expect(await deliverPosts()).toBe(1);
    const posts = receiver.of("/status/order");
    expectSigned(posts);
    expect(posts.map((p) => [p.params.MessageSid, p.params.MessageStatus])).toEqual([
      [m.sid, "sent"],
      [m.sid, "sent"],
      [m.sid, "delivered"],
    ]);
  });

  test("a failed message's callback carries Twilio's error code; a callback refused is tried again later", async () => {
    receiver.answer("/status/two", { status: 500, body: "busy" });
    fake.failNext(400, 21211, "The 'To' number is not a valid phone number.");
    const m = await client().messages.create({ to: BOB, from: CLOUD_NUMBER, body: "Hi", statusCallback: `${receiver.base}/status/two` });
    await ctx.services.dispatcher.dispatchDue();
    expect(await deliverPosts()).toBe(1);
    expect(receiver.of("/status/two")).toHaveLength(1);
    // Not due again until the first step of the ladder has passed.
    expect(await deliverPosts()).toBe(0);
    ctx.clock.advance(31_000);
    expect(await deliverPosts()).toBe(1);
    const posts = receiver.of("/status/two");
    expectSigned(posts);
    expect(posts.map((p) => [p.params.MessageSid, p.params.MessageStatus])).toEqual([
      [m.sid, "failed"],
      [m.sid, "failed"],
    ]);
    expect(posts[1].params.ErrorCode).toMatch(/^\d{5}$/);
  });

  test("a StatusCallback Pigeon may not call is refused with 21609 and nothing is sent", async () => {
    const before = (await notificationsTo(ADA)).length;
    for (const bad of ["not a url", "ftp://example.com/cb"]) {
      const e = await client()
        .messages.create({ to: ADA, body: "x", statusCallback: bad })
        .catch((error: { status: number; code: number }) => error);
      expect(e).toMatchObject({ status: 400, code: 21609 });
    }
    expect(await notificationsTo(ADA)).toHaveLength(before);
  });
});

describe("incoming messages and TwiML replies", () => {
  let phone: Awaited<ReturnType<typeof appPhone>>;
  beforeAll(async () => {
    phone = await appPhone(ctx);
    const set = expectEnvelope(await ctx.post("/v1/api/twilio/incoming", { url: `${receiver.base}/in` }), 200).data;
    expect(set).toMatchObject({ account_sid: sid, incoming_url: `${receiver.base}/in`, pools: [] });
  });

  test("a received SMS is posted signed; the TwiML answer goes back to the sender through the phone and SIM it came in on", async () => {
    const reply = new twilio.twiml.MessagingResponse();
    reply.message("Thanks, we open at 9 & close at 5.");
    reply.message({ to: BOB }, "Ada wrote in");
    receiver.answer("/in", { status: 200, body: reply.toString() });

    await phone.receive(ADA, "When do you open?", 2);
    expect(await deliverPosts()).toBe(1);
    const [post] = receiver.of("/in");
    expectSigned([post]);
    expect(post.params).toMatchObject({ From: ADA, Body: "When do you open?", AccountSid: sid, SmsStatus: "received", NumMedia: "0" });
    expect(post.params.MessageSid).toMatch(/^SMf[0-9a-f]{31}$/);
    expect(await notificationsTo(ADA)).toContainEqual(
      expect.objectContaining({ message: "Thanks, we open at 9 & close at 5.", device_id: phone.deviceId, sim_number: 2 }),
    );
    expect((await notificationsTo(BOB)).at(-1)).toMatchObject({ message: "Ada wrote in", device_id: phone.deviceId });
    // The MessageSid reads back through the Messages API as the received message.
    const received = await client().messages(post.params.MessageSid).fetch();
    expect(received).toMatchObject({ direction: "inbound", status: "received", from: ADA, body: "When do you open?" });
    // Posted once, replied once.
    expect(await deliverPosts()).toBe(0);
    expect((await notificationsTo(ADA)).filter((n) => n.message.startsWith("Thanks"))).toHaveLength(1);
  });

  test("opt-outs win: STOP is posted too, and the TwiML answer to it is not sent", async () => {
    const carol = "+14155552673";
    receiver.answer("/in", { status: 200, body: "<Response><Message>Sorry to see you go</Message></Response>" });
    await phone.receive(carol, "STOP");
    expect(await deliverPosts()).toBe(1);
    expect(receiver.of("/in").at(-1)!.params.Body).toBe("STOP");
    await Bun.sleep(20);
    expect((await notificationsTo(carol)).map((n) => n.message)).not.toContain("Sorry to see you go");
    expect(ctx.logs.some((l) => l.includes(`no reply to ${carol}, who opted out`))).toBe(true);
  });

  test("a data SMS is not posted: Twilio's form has no place for its bytes; the next text is", async () => {
    const dan = "+14155552675";
    const before = receiver.of("/in").length;
    await phone.receiveData(dan, "AQIDBA==");
    // It is in the sender's thread, so it was taken in; nothing waits to be posted about it.
    const thread = await ctx.sql.get<{ n: number }>(
      "SELECT count(*) AS n FROM thread_message m JOIN thread t ON t.id = m.thread_id WHERE t.peer = ? AND m.direction = 'inbound'",
      [dan],
    );
    expect(thread?.n).toBe(1);
    expect(await deliverPosts()).toBe(0);
    expect(receiver.of("/in")).toHaveLength(before);
    await phone.receive(dan, "and a text");
    expect(await deliverPosts()).toBe(1);
    expect(receiver.of("/in")).toHaveLength(before + 1);
    expect(receiver.of("/in").at(-1)!.params).toMatchObject({ From: dan, Body: "and a text" });
  });

  test("a pool's URL takes its members' messages, with the pool as MessagingServiceSid; clearing it falls back to the workspace's", async () => {
    const pool = expectEnvelope(
      await ctx.post("/v1/api/pool/create", { name: "Front desk", members: [{ device_id: phone.deviceId, number: "+15550001111" }] }),
      200,
    ).data;
    expectEnvelope(await ctx.post("/v1/api/twilio/incoming", { url: `${receiver.base}/pool`, pool_id: pool.pool_id }), 200);
    await phone.receive(BOB, "Hello desk");
    expect(await deliverPosts()).toBe(1);
    const [post] = receiver.of("/pool");
    expectSigned([post]);
    expect(post.params).toMatchObject({
      To: "+15550001111",
      From: BOB,
      MessagingServiceSid: `MG${pool.pool_id.toString(16).padStart(32, "0")}`,
    });

    const settings = expectEnvelope(await ctx.post("/v1/api/twilio/incoming", { url: null, pool_id: pool.pool_id }), 200).data;
    expect(settings.pools).toEqual([]);
    await phone.receive(BOB, "Hello again");
    expect(await deliverPosts()).toBe(1);
    expect(receiver.of("/in").at(-1)!.params.Body).toBe("Hello again");
  });

  test("bad settings: an address Pigeon may not call, another workspace's pool, unknown fields", async () => {
    expect(expectEnvelope(await ctx.post("/v1/api/twilio/incoming", { url: "file:///etc/passwd" }), 400).data.error_code).toBe(
      "invalid_webhook_url",
    );
    expect(
      expectEnvelope(await ctx.post("/v1/api/twilio/incoming", { url: `${receiver.base}/x`, pool_id: 999_999 }), 404).data.error_code,
    ).toBe("not_found");
    expect(expectEnvelope(await ctx.post("/v1/api/twilio/incoming", { url: `${receiver.base}/x`, extra: 1 }), 400).data.error_code).toBe(
      "validation_error",
    );
    // Nothing half-way: the workspace's URL is still the one set before.
    expect(expectEnvelope(await ctx.get("/v1/api/twilio/settings"), 200).data.incoming_url).toBe(`${receiver.base}/in`);
  });

  test("erasing a number removes the posts about it still waiting", async () => {
    const dave = "+14155552674";
    await phone.receive(dave, "Forget me");
    const erased = expectEnvelope(await ctx.post("/v1/api/privacy/erase", { phone: dave }), 200).data.erased;
    expect(erased.webhook_deliveries).toBeGreaterThanOrEqual(1);
    expect(await deliverPosts()).toBe(0);
    expect(receiver.posted.some((p) => p.params.From === dave)).toBe(false);
  });
});

describe("TwiML as Pigeon reads it", () => {
  test("Message text, Body, entities, CDATA and the to attribute; what is not acted on is named", () => {
    expect(
      parseTwiml(
        `<?xml version="1.0" encoding="UTF-8"?><!-- hi --><Response><Message to="+14155552671">A &amp; B &#169;</Message>` +
          `<Message><Body><![CDATA[<b>raw</b>]]></Body><Media>https://x/y.png</Media></Message><Redirect>/next</Redirect></Response>`,
      ),
    ).toEqual({
      replies: [
        { to: RECIPIENT, body: "A & B ©" },
        { to: null, body: "<b>raw</b>" },
      ],
      ignored: ["<Media>", "<Redirect>"],
    });
    expect(parseTwiml("<Response/>")).toEqual({ replies: [], ignored: [] });
    expect(parseTwiml("<Response></Response>")).toEqual({ replies: [], ignored: [] });
    expect(parseTwiml("Thanks!")).toBeNull();
    expect(parseTwiml("<Html><Message>x</Message></Html>")).toBeNull();
    expect(parseTwiml("<Response><Message>unclosed")).toBeNull();
  });

  // A reading that scanned ahead from each '<' would take tens of seconds on these 64 KB (past the test's limit).
  test("a hostile answer is read in one pass: 64 KB of open tags, or of '<' with no '>'", () => {
    expect(parseTwiml(`<Response>${"<Message ".repeat(7000)}`)).toBeNull();
    expect(parseTwiml(`<Response>${"<".repeat(64_000)}`)).toBeNull();
    expect(parseTwiml(`<Response><Message a${"b".repeat(64_000)}>x</Message></Response>`)).toEqual({
      replies: [{ to: null, body: "x" }],
      ignored: [],
    });
  }, 3000);
});
