// Approval as the compatible APIs' own clients see it: the published `twilio` library reads a send
// by a key that needs approval as "accepted" until a person approves it, then queued and on; the
// `android-sms-gateway` client reads it as Pending, then Failed when a person rejects it. Neither
// client was written by us, so the status mapping is judged by what they parse. Both back ends.
import { afterEach, describe, expect, test } from "bun:test";
import Client, { ProcessState } from "android-sms-gateway";
import { createTestContext, expectEnvelope } from "../helpers/context";
import { startFakeCloud, type FakeCloud } from "../helpers/fake-cloud";
import { RECIPIENT } from "../helpers/numbers";
import { inProcessHttpClient } from "../helpers/smsgate-client";
import { startTwilioRig, type TwilioRig } from "../helpers/twilio-rig";

let rig: TwilioRig | null = null;
let fake: FakeCloud | null = null;
afterEach(() => {
  rig?.stop();
  rig = null;
  fake?.stop();
  fake = null;
});

describe("approval through the compatible APIs' clients", () => {
  test("twilio: accepted while it waits, queued once approved, and sent once", async () => {
    rig = await startTwilioRig();
    const { ctx } = rig;
    // The account SID and auth token act as a key: that key now needs approval.
    const twilioKey = (await ctx.services.accounts.listKeys(ctx.workspace.id)).find((k) => k.name === "Twilio account")!;
    await ctx.services.accounts.setKeyApproval(twilioKey.key, true);
    const client = rig.client();
    const cloud = (await ctx.get("/v1/api/device/list")).body.data.devices.find((d: { device_id: number }) => d.device_id === rig!.cloudId);
    const created = await client.messages.create({ to: RECIPIENT, from: cloud.phone_number, body: "Waiting for a person" });
    expect(created.status).toBe("accepted");
    expect((await client.messages(created.sid).fetch()).status).toBe("accepted");
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
    expect(rig.fake.creates).toHaveLength(0);
    const awaiting = expectEnvelope(await ctx.get("/v1/api/approval/list"), 200).data.notifications;
    expect(awaiting).toHaveLength(1);
    expectEnvelope(await ctx.post("/v1/api/approval/approve", { ids: [awaiting[0].notification_id] }), 200);
    expect(["queued", "sending", "sent"]).toContain((await client.messages(created.sid).fetch()).status);
    await ctx.services.dispatcher.dispatchDue();
    expect(rig.fake.creates).toHaveLength(1);
    expect((await client.messages(created.sid).fetch()).status).not.toBe("accepted");
  });

  test("android-sms-gateway: Pending while it waits, Failed once rejected, never handed to a device", async () => {
    const ctx = await createTestContext();
    fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    await ctx.cloudDevice(fake);
    await ctx.topUp(10);
    const agent = await ctx.services.accounts.createKey("SMSGate agent", ctx.workspace.id, { needsApproval: true });
    const client = new Client(agent.api_key, agent.api_secret, inProcessHttpClient(ctx), "http://localhost/3rdparty/v1");
    const state = await client.send({ id: "approve-me", message: "Waiting for a person", phoneNumbers: [RECIPIENT] });
    expect(state).toMatchObject({ id: "approve-me", state: ProcessState.Pending });
    expect((await client.getState("approve-me")).state).toBe(ProcessState.Pending);
    const awaiting = expectEnvelope(await ctx.get("/v1/api/approval/list"), 200).data.notifications;
    expect(awaiting.map((m: { message: string }) => m.message)).toEqual(["Waiting for a person"]);
    expectEnvelope(await ctx.post("/v1/api/approval/reject", { ids: [awaiting[0].notification_id], reason: "not today" }), 200);
    const after = await client.getState("approve-me");
    expect(after.state).toBe(ProcessState.Failed);
    expect(after.recipients[0]).toMatchObject({ phoneNumber: RECIPIENT, state: ProcessState.Failed });
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
    expect(fake.creates).toHaveLength(0);
  });
});
