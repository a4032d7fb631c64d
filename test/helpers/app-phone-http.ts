// A phone acting as the companion app does over HTTP against a running server (the binary): it
// registers with the pairing token, posts signed sms:received webhooks, and pulls what it is to
// send, reporting each pulled message sent.
import { expect } from "bun:test";
import { phoneSignature } from "./phone";

const APP = { "user-agent": "me.capcom.smsgateway/1.68.0" };

export interface PulledMessage {
  text: string;
  to: string;
  sim: number | null;
}

/** A message the server handed the phone, with the app's own id for its reports. */
export interface HandedMessage extends PulledMessage {
  id: string;
}

/** Pairs a phone named `name` through `base` (the pairing's server_url) with `pairingToken`. */
export async function pairAppPhone(base: string, pairingToken: string, name: string) {
  const reg = await fetch(`${base}/device`, {
    method: "POST",
    headers: { authorization: `Bearer ${pairingToken}`, "content-type": "application/json", ...APP },
    body: JSON.stringify({ name }),
  });
  expect(reg.status).toBe(201);
  const { id: externalId, token } = (await reg.json()) as { id: string; token: string };
  const auth = { authorization: `Bearer ${token}`, ...APP };
  const settings = await (await fetch(`${base}/settings`, { headers: auth })).json();
  const hooks = (await (await fetch(`${base}/webhooks`, { headers: auth })).json()) as { event: string; url: string }[];
  const inboundUrl = hooks.find((h) => h.event === "sms:received")!.url;
  let n = 0;
  return {
    externalId,
    /** An SMS the phone received, posted as the app posts it. */
    async receive(from: string, text: string, simNumber = 1) {
      n++;
      const body = JSON.stringify({
        id: `evt-${externalId}-${n}`,
        webhookId: "pigeon-sms-received",
        event: "sms:received",
        deviceId: externalId,
        payload: {
          messageId: `in-${n}`,
          message: text,
          sender: from,
          recipient: "+15550009999",
          simNumber,
          receivedAt: new Date().toISOString(),
        },
      });
      const res = await fetch(inboundUrl, {
        method: "POST",
        headers: { "content-type": "application/json", ...phoneSignature(settings.webhooks.signing_key, body, Date.now()) },
        body,
      });
      expect(res.status).toBe(204);
    },
    /** What the server hands the phone to send now, not reported yet (see `report`). */
    async take(): Promise<HandedMessage[]> {
      const list = (await (await fetch(`${base}/message`, { headers: auth })).json()) as {
        id: string;
        textMessage: { text: string };
        phoneNumbers: string[];
        simNumber?: number;
      }[];
      return list.map((m) => ({ id: m.id, text: m.textMessage.text, to: m.phoneNumbers[0], sim: m.simNumber ?? null }));
    },
    /** Reports handed messages in `state` as the app does: Sent once the SIM sent them, Delivered on the network's report. */
    async report(messages: { id: string; to: string }[], state: "Sent" | "Delivered") {
      if (messages.length === 0) return;
      const items = messages.map((m) => ({ id: m.id, state, recipients: [{ phoneNumber: m.to, state }] }));
      const res = await fetch(`${base}/message`, {
        method: "PATCH",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify(items),
      });
      expect(res.status).toBe(204);
    },
    /** What the server hands the phone to send now, reported sent as the app reports it. */
    async pull(): Promise<PulledMessage[]> {
      const list = (await (await fetch(`${base}/message`, { headers: auth })).json()) as {
        id: string;
        textMessage: { text: string };
        phoneNumbers: string[];
        simNumber?: number;
      }[];
      if (list.length > 0) {
        const sent = list.map((m) => ({ id: m.id, state: "Sent", recipients: [{ phoneNumber: m.phoneNumbers[0], state: "Sent" }] }));
        const res = await fetch(`${base}/message`, {
          method: "PATCH",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify(sent),
        });
        expect(res.status).toBe(204);
      }
      return list.map((m) => ({ text: m.textMessage.text, to: m.phoneNumbers[0], sim: m.simNumber ?? null }));
    },
  };
}

export type AppPhone = Awaited<ReturnType<typeof pairAppPhone>>;
