// SMSGate's DELETE /messages/{id} on a message the paired phone has downloaded: the published npm
// client (android-sms-gateway) sends the message and reads its state back (its types have no cancel
// call, so the cancel is a plain request as SMSGate's API documents it); the phone is driven as the
// app (v1.67.0+) drives it (see test/channels/phone/cancel.test.ts). "Cancelling" is the state
// SMSGate's own server names a message waiting for the phone's answer (smsgateway.ProcessingStateCancelling).
import { describe, expect, test } from "bun:test";
import Client from "android-sms-gateway";
import { createTestContext, type TestContext } from "../helpers/context";
import { mobile, pairMobile } from "../helpers/mobile";
import { RECIPIENT } from "../helpers/numbers";
import { inProcessHttpClient } from "../helpers/smsgate-client";

async function setup() {
  const ctx = await createTestContext();
  const phone = await pairMobile(ctx);
  const base = "http://localhost/3rdparty/v1";
  const client = new Client(ctx.key.api_key, ctx.key.api_secret, inProcessHttpClient(ctx), base);
  const authorization = `Basic ${btoa(`${ctx.key.api_key}:${ctx.key.api_secret}`)}`;
  const del = async (id: string) => {
    const res = await ctx.app.handle(new Request(`${base}/messages/${id}`, { method: "DELETE", headers: { authorization } }));
    return { status: res.status, body: await res.json() };
  };
  const sent = await client.send({ id: "order-42", message: "Your order is ready", phoneNumbers: [RECIPIENT] });
  const [m] = (await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json;
  const patch = (state: string) =>
    mobile(ctx, "PATCH", "/message", {
      auth: phone.bearer,
      body: [{ id: m.id, state, recipients: [{ phoneNumber: RECIPIENT, state }], states: {} }],
    });
  return { ctx, client, del, sent, patch };
}

describe("SMSGate's DELETE /messages/{id} on a message the phone downloaded", () => {
  test("202 Cancelling while the phone decides; it drops the message: Cancelled", async () => {
    const { client, del, sent, patch } = await setup();
    expect(sent.id).toBe("order-42");
    const r = await del("order-42");
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ id: "order-42", state: "Cancelling", recipients: [{ phoneNumber: RECIPIENT, state: "Cancelling" }] });
    expect((await client.getState("order-42")).state).toBe("Cancelling" as never);
    // Asked again meanwhile: the same answer, nothing changes.
    expect((await del("order-42")).status).toBe(202);
    await patch("Cancelled");
    const after = await client.getState("order-42");
    expect(after).toMatchObject({ state: "Cancelled", recipients: [{ state: "Cancelled" }] });
    expect((await del("order-42")).status).toBe(409);
  });

  test("the phone had taken it up: the state follows its reports, Processed then Sent", async () => {
    const { client, del, patch } = await setup();
    expect((await del("order-42")).status).toBe(202);
    await patch("Processed");
    expect((await client.getState("order-42")).state).toBe("Processed" as never);
    await patch("Sent");
    expect((await client.getState("order-42")).state).toBe("Sent" as never);
  });
});
