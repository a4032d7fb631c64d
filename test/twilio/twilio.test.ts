// Twilio's Messages API, judged by the real `twilio` npm package (6.x) pointed at Pigeon on a
// loopback port: credentials, create (plain, from a cloud number, through a pool, scheduled),
// fetch, list across pages, cancel, and Twilio's errors, on both back ends.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { expectEnvelope, type TestContext } from "../helpers/context";
import { startTwilioRig, twilioRefusal, type TwilioRig } from "../helpers/twilio-rig";
import { RECIPIENT, SECOND_RECIPIENT, CLOUD_NUMBER } from "../helpers/numbers";

let rig: TwilioRig;
let ctx: TestContext;
let sid = "";
let token = "";
let cloudId = 0;

/** A Twilio client whose API domain is this server. */
const client = (user: string, password: string, accountSid?: string) => rig.client(user, password, accountSid);
const refusal = twilioRefusal;

beforeAll(async () => {
  rig = await startTwilioRig();
  ({ ctx, sid, token } = rig);
  cloudId = rig.cloudId;
  await ctx.phone("Shop phone");
});
afterAll(() => {
  rig?.stop();
});

describe("Twilio's Messages API", () => {
  test("credentials: an AC SID and a 32-hex-digit token, the same until rotated", async () => {
    expect(sid).toMatch(/^AC[0-9a-f]{32}$/);
    expect(token).toMatch(/^[0-9a-f]{32}$/);
    expect(await ctx.services.twilio.credentials(ctx.workspace.id)).toMatchObject({ account_sid: sid, auth_token: token });
  });

  test("create and fetch: Twilio's message resource, read back by the library", async () => {
    const c = client(sid, token);
    const m = await c.messages.create({ to: RECIPIENT, body: "Your order is ready" });
    expect(m.sid).toMatch(/^SM[0-9a-f]{32}$/);
    expect(m).toMatchObject({
      accountSid: sid,
      to: RECIPIENT,
      body: "Your order is ready",
      status: "queued",
      numSegments: "1",
      direction: "outbound-api",
    });
    expect(m.dateCreated).toBeInstanceOf(Date);
    expect(m.uri).toBe(`/2010-04-01/Accounts/${sid}/Messages/${m.sid}.json`);
    const again = await c.messages(m.sid).fetch();
    expect(again).toMatchObject({ sid: m.sid, body: "Your order is ready", to: RECIPIENT });
    // It is Pigeon's notification: the API shows it too.
    const id = Number.parseInt(m.sid.slice(2), 16);
    expect(expectEnvelope(await ctx.get(`/v1/api/notification/${id}`), 200).data.message).toBe("Your order is ready");
  });

  test("From picks the cloud number; MessagingServiceSid a pool; an API key and secret work as Twilio API keys do", async () => {
    const c = client(sid, token);
    const viaCloud = await c.messages.create({ to: SECOND_RECIPIENT, body: "From the cloud", from: CLOUD_NUMBER });
    expect(viaCloud.from).toBe(CLOUD_NUMBER);
    const pool = expectEnvelope(await ctx.post("/v1/api/pool/create", { name: "Cloud only", members: [{ device_id: cloudId }] }), 200).data;
    const mg = pool.messaging_service_sid;
    expect(mg).toBe(`MG${pool.pool_id.toString(16).padStart(32, "0")}`);
    const viaPool = await client(ctx.key.api_key, ctx.key.api_secret, sid).messages.create({
      to: "+14155552673",
      body: "Pooled",
      messagingServiceSid: mg,
    });
    expect(viaPool.from).toBe(CLOUD_NUMBER);
    // Through a Messaging Service, Twilio answers accepted; read again, the message is queued.
    expect([viaPool.status, viaPool.messagingServiceSid]).toEqual(["accepted", mg]);
    expect((await c.messages(viaPool.sid).fetch()).status).toBe("queued");
    expect(await refusal(c.messages.create({ to: "+14155552673", body: "x", from: "+19995550000" }))).toEqual({ status: 400, code: 21606 });
    // A pool member's number stands for its device and SIM: From picks both.
    const phone = (await ctx.phone("Two SIMs")).device_id;
    expect(
      (await ctx.post("/v1/api/pool/create", { name: "SIM 2", members: [{ device_id: phone, sim_number: 2, number: "+14155550177" }] }))
        .status,
    ).toBe(200);
    const viaSim = await c.messages.create({ to: "+14155552676", body: "From the second SIM", from: "+14155550177" });
    const n = expectEnvelope(await ctx.get(`/v1/api/notification/${Number.parseInt(viaSim.sid.slice(2), 16)}`), 200).data;
    expect([n.device_id, n.sim_number]).toEqual([phone, 2]);
  });

  test("scheduled with SendAt, then canceled, then deleted; a queued one is not deleted", async () => {
    const c = client(sid, token);
    const m = await c.messages.create({
      to: "+14155552674",
      body: "Tomorrow's reminder",
      sendAt: new Date(ctx.clock.now() + 3_600_000),
      scheduleType: "fixed",
    });
    expect(m.status).toBe("scheduled");
    const canceled = await c.messages(m.sid).update({ status: "canceled" });
    expect(canceled.status).toBe("canceled");
    expect(await refusal(c.messages(m.sid).update({ status: "canceled" }))).toMatchObject({ status: 400 });
    // Done, it can be deleted: it is gone from the API, Twilio's and Pigeon's alike.
    expect(await c.messages(m.sid).remove()).toBe(true);
    expect(await refusal(c.messages(m.sid).fetch())).toEqual({ status: 404, code: 20404 });
    expect((await ctx.get(`/v1/api/notification/${Number.parseInt(m.sid.slice(2), 16)}`)).status).toBe(404);
    // One still on its way is not deleted.
    const waiting = await c.messages.create({ to: "+14155552675", body: "Still queued" });
    expect(await refusal(c.messages(waiting.sid).remove())).toEqual({ status: 400, code: 20009 });
    expect((await c.messages(waiting.sid).fetch()).status).toBe("queued");
  });

  test("list pages as Twilio pages: every message once, newest first, across pages of 3", async () => {
    const c = client(sid, token);
    for (let i = 0; i < 7; i++) await c.messages.create({ to: "+14155559000", body: `Batch ${i}` });
    const listed = await c.messages.list({ to: "+14155559000", pageSize: 3 });
    expect(listed.map((m) => m.body)).toEqual([6, 5, 4, 3, 2, 1, 0].map((i) => `Batch ${i}`));
    const page = await c.messages.page({ to: "+14155559000", pageSize: 3 });
    expect(page.instances).toHaveLength(3);
    const second = await page.nextPage();
    expect(second?.instances.map((m) => m.body)).toEqual(["Batch 3", "Batch 2", "Batch 1"]);
  });

  test("Twilio's errors: code, status and message as its library reads them", async () => {
    const c = client(sid, token);
    expect(await refusal(c.messages.create({ to: RECIPIENT, body: "" }))).toEqual({ status: 400, code: 21602 });
    expect(await refusal(c.messages.create({ to: "12", body: "hi" }))).toEqual({ status: 400, code: 21211 });
    expect(await refusal(client(sid, "0".repeat(32)).messages.create({ to: RECIPIENT, body: "hi" }))).toEqual({
      status: 401,
      code: 20003,
    });
    // Another account's SID in the path: not found, as Twilio answers.
    expect(await refusal(client(ctx.key.api_key, ctx.key.api_secret, `AC${"1".repeat(32)}`).messages.list({ limit: 1 }))).toEqual({
      status: 404,
      code: 20404,
    });
    expect(await refusal(c.messages(`SM${"f".repeat(32)}`).fetch())).toEqual({ status: 404, code: 20404 });
    await ctx.post("/v1/api/optout/add", { phone: "+14155550111" });
    expect(await refusal(c.messages.create({ to: "+14155550111", body: "hi" }))).toEqual({ status: 400, code: 21610 });
  });
});
