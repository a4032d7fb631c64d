// A data SMS end to end on the compiled binary with `pigeon simulate-phone`: one sent through
// Pigeon's API goes out on the simulated radio as its bytes to its port and its states come back;
// one the phone receives (--inbound-data) lands in the sender's thread and reaches Pigeon's
// webhooks (message.received with data_message) and an SMSGate-format one (sms:data-received).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SEND_PATH, waitFor } from "../helpers/api";
import { isolatedBinary, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { startSimulator, type RunningPhone } from "../helpers/simulator";
import { RECIPIENT } from "../helpers/numbers";

const bin = isolatedBinary();
const dataDir = tempDir();
const SENDER = "+15550004321";
let server: RunningServer;
let key: Credentials;
let receiver: Receiver;
let phone: RunningPhone | null = null;

beforeAll(async () => {
  receiver = startReceiver();
  server = await startServer(bin, { PIGEON_DATA_DIR: dataDir, PIGEON_WORKER_INTERVAL: "1", PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1" });
  key = server.initialKey!;
});

afterAll(async () => {
  phone?.proc.kill("SIGKILL");
  await server?.stop("SIGKILL");
  receiver?.stop();
});

describe("a data SMS through the binary and the simulated phone", () => {
  test("sent: the radio gets the bytes on the port, and delivered comes back", async () => {
    const pairing = (await (await server.fetch("/v1/api/device/pairing", { key })).json()).data;
    phone = await startSimulator(bin, ["--server", pairing.server_url, "--token", pairing.pairing_token, "--delay", "50"]);
    const sent = await server.api(SEND_PATH, key, { recipient_contact: RECIPIENT, data_message: { data: "3q2+7w==", port: 9200 } });
    expect(sent.status).toBe(200);
    expect(sent.body.data).toMatchObject({ message: "", data_message: { data: "3q2+7w==", port: 9200 } });
    const id = sent.body.data.notification_id;
    const n = await waitFor("delivered", async () => {
      const x = (await server.api(`/v1/api/notification/${id}`, key)).body.data;
      return x.status === "delivered" ? x : null;
    });
    expect(n).toMatchObject({ message: "", data_message: { data: "3q2+7w==", port: 9200 }, segments: 1 });
    expect(n.logs.map((l: { event: string }) => l.event)).toEqual(["accepted", "processed", "sent", "delivered"]);
    expect(phone.output()).toMatch(new RegExp(`radio: data SMS \\S+ to \\${RECIPIENT} port 9200: 4 bytes deadbeef`));
    phone.proc.kill("SIGTERM");
    await phone.proc.exited;
    phone = null;
  });

  test("received: in the sender's thread, to Pigeon's webhook and to an SMSGate-format one", async () => {
    const hook = await server.api("/v1/api/webhook/create", key, { url: `${receiver.url}/pigeon`, events: ["message.received"] });
    expect(hook.status).toBe(200);
    const gate = await server.fetch("/3rdparty/v1/webhooks", {
      method: "POST",
      headers: { authorization: `Basic ${btoa(`${key.api_key}:${key.api_secret}`)}`, "content-type": "application/json" },
      body: JSON.stringify({ id: "data-hook", url: `${receiver.url}/smsgate`, event: "sms:data-received" }),
    });
    expect(gate.status).toBe(201);
    const pairing = (await (await server.fetch("/v1/api/device/pairing", { key })).json()).data;
    phone = await startSimulator(bin, [
      "--server",
      pairing.server_url,
      "--token",
      pairing.pairing_token,
      "--delay",
      "50",
      "--name",
      "Data receiver",
      "--from",
      SENDER,
      "--inbound-data",
      "AQIDBA==",
    ]);
    await waitFor("the data SMS posted", () => phone!.output().includes(`received data SMS from ${SENDER} (4 bytes) posted`), {
      detail: phone.output,
    });
    const threads = (await server.api("/v1/api/thread/list", key)).body.data.threads as { thread_id: number; peer: string }[];
    const thread = threads.find((t) => t.peer === SENDER)!;
    const messages = (await server.api(`/v1/api/thread/${thread.thread_id}/messages`, key)).body.data.messages;
    expect(messages).toEqual([
      expect.objectContaining({ direction: "inbound", body: "", data_message: { data: "AQIDBA==", port: 53739 } }),
    ]);
    const pigeon = await waitFor("message.received", () => receiver.received.find((r) => r.body?.type === "message.received") ?? null);
    expect(pigeon.body).toMatchObject({
      type: "message.received",
      data: { from: SENDER, body: "", data_message: { data: "AQIDBA==", port: 53739 } },
    });
    const smsgate = await waitFor("sms:data-received", () => receiver.received.find((r) => r.body?.event === "sms:data-received") ?? null);
    expect(smsgate.body).toMatchObject({
      webhookId: "data-hook",
      event: "sms:data-received",
      payload: { sender: SENDER, phoneNumber: SENDER, data: "AQIDBA==" },
    });
  });
});
