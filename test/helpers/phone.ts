// The companion app's side of pairing and signing, for tests that act as a paired phone against
// an in-process app: register with the workspace's pairing token, read the webhook signing key,
// and sign a phone webhook the way the app does (HMAC-SHA256 over body + timestamp).
import { expect } from "bun:test";
import { createHmac } from "node:crypto";
import { expectEnvelope, type TestContext } from "./context";

/** X-Timestamp and X-Signature for a phone webhook body posted at `atMs`. */
export function phoneSignature(signingKey: string, raw: string, atMs: number): { "x-timestamp": string; "x-signature": string } {
  const ts = String(Math.floor(atMs / 1000));
  return {
    "x-timestamp": ts,
    "x-signature": createHmac("sha256", signingKey)
      .update(raw + ts)
      .digest("hex"),
  };
}

/**
 * Registers a phone through POST /mobile/v1/device as the app does and reads its signing key.
 * `headers` go on every call (a User-Agent, say); `auth` carries the device token for later calls.
 */
export async function registerAppPhone(ctx: TestContext, name = "Phone", headers: Record<string, string> = {}) {
  const pairing = expectEnvelope(await ctx.get("/v1/api/device/pairing"), 200).data.pairing_token;
  const reg = await ctx.app.handle(
    new Request("http://localhost/mobile/v1/device", {
      method: "POST",
      headers: { authorization: `Bearer ${pairing}`, "content-type": "application/json", ...headers },
      body: JSON.stringify({ name }),
    }),
  );
  const { id, token } = (await reg.json()) as { id: string; token: string };
  const auth = { authorization: `Bearer ${token}`, ...headers };
  const settings = await (await ctx.app.handle(new Request("http://localhost/mobile/v1/settings", { headers: auth }))).json();
  return { id, auth, signingKey: settings.webhooks.signing_key as string };
}

/** Posts a phone webhook signed with `signingKey` at the context's clock; returns the response. */
export function postPhoneWebhook(ctx: TestContext, signingKey: string, raw: string) {
  return ctx.app.handle(
    new Request("http://localhost/mobile/v1/webhook", {
      method: "POST",
      headers: { "content-type": "application/json", ...phoneSignature(signingKey, raw, ctx.clock.now()) },
      body: raw,
    }),
  );
}

/** A phone paired the way the app pairs, that can report received SMS and data SMS. */
export async function appPhone(ctx: TestContext) {
  const reg = await registerAppPhone(ctx);
  const deviceId = (expectEnvelope(await ctx.get("/v1/api/device/list"), 200).data.devices as { device_id: number; kind: string }[]).find(
    (d) => d.kind === "sms",
  )!.device_id;
  let n = 0;
  return {
    deviceId,
    /** An SMS from `from` as the app reports it (on SIM `simNumber` when given). */
    async receive(from: string, text: string, simNumber?: number) {
      const body = JSON.stringify({
        id: `in-${++n}`,
        webhookId: "w",
        event: "sms:received",
        deviceId: reg.id,
        payload: {
          messageId: `m${n}`,
          message: text,
          sender: from,
          receivedAt: new Date(ctx.clock.now()).toISOString(),
          ...(simNumber !== undefined ? { simNumber } : {}),
        },
      });
      expect((await postPhoneWebhook(ctx, reg.signingKey, body)).status).toBe(204);
      // The keyword's reply is accepted once the inbound transaction is over, under the group commit.
      await Bun.sleep(5);
    },
    /**
     * A data SMS from `from` (its payload in base64) as the app reports it: sms:data-received with
     * the app's SmsEventPayload.SmsDataReceived (messageId, sender, recipient, simNumber,
     * phoneNumber, data, receivedAt).
     */
    async receiveData(from: string, data: string, simNumber?: number) {
      const body = JSON.stringify({
        id: `in-${++n}`,
        webhookId: "w",
        event: "sms:data-received",
        deviceId: reg.id,
        payload: {
          messageId: `m${n}`,
          sender: from,
          recipient: null,
          simNumber: simNumber ?? null,
          phoneNumber: from,
          data,
          receivedAt: new Date(ctx.clock.now()).toISOString(),
        },
      });
      expect((await postPhoneWebhook(ctx, reg.signingKey, body)).status).toBe(204);
      await Bun.sleep(5);
    },
  };
}
