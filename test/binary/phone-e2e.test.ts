// End to end on the compiled binary: `pigeon simulate-phone` pairs with `pigeon serve` exactly as
// the SMS Gateway for Android app would, and carries messages, failures, cancels and inbound SMS.
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { SEND_PATH, waitFor } from "../helpers/api";
import { phoneSignature } from "../helpers/phone";
import { isolatedBinary, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { spawnSimulator } from "../helpers/simulator";
import { RECIPIENT } from "../helpers/numbers";

const bin = isolatedBinary();
const dataDir = tempDir();
let server: RunningServer;
let key: Credentials;
let serverUrl: string;
let pairingToken: string;
const phones: { proc: Subprocess; output: () => string }[] = [];

beforeAll(async () => {
  server = await startServer(bin, { PIGEON_DATA_DIR: dataDir });
  key = server.initialKey!;
  const pairing = await (await server.fetch("/v1/api/device/pairing", { key })).json();
  serverUrl = pairing.data.server_url;
  pairingToken = pairing.data.pairing_token;
});

afterAll(async () => {
  for (const p of phones) p.proc.kill("SIGKILL");
  await server?.stop("SIGKILL");
});

let started = 0;

/**
 * Starts `pigeon simulate-phone` and waits until it is paired and listening. Each is another phone
 * by its name: one with the same name and SIMs would be the same phone coming back.
 */
async function startPhone(args: string[] = []) {
  const name = `Pigeon/simulator-${++started}`;
  const phone = spawnSimulator(bin, ["--server", serverUrl, "--token", pairingToken, "--delay", "100", "--name", name, ...args]);
  phones.push(phone);
  await waitFor("the phone to pair", () => phone.output().includes("events stream open"), { detail: phone.output });
  const externalId = /registered as (\S+)/.exec(phone.output())![1];
  const deviceId = (await devices()).find(
    (d: { name: string; device_id: number }) => d.name === name && !knownIds.has(d.device_id),
  )!.device_id;
  knownIds.add(deviceId);
  return { ...phone, externalId, deviceId };
}
const knownIds = new Set<number>();

async function devices() {
  return (await (await server.fetch("/v1/api/device/list?limit=100", { key })).json()).data.devices;
}

const send = (body: Record<string, unknown>) => server.api(SEND_PATH, key, { recipient_contact: RECIPIENT, ...body });
const notification = async (id: number) => (await server.api(`/v1/api/notification/${id}`, key)).body.data;

describe("a simulated phone paired with the binary", () => {
  test("a send reaches delivered", async () => {
    const phone = await startPhone();
    const sent = await send({ message: "Your order is ready", device_id: phone.deviceId });
    expect(sent.status).toBe(200);
    const id = sent.body.data.notification_id;
    const n = await waitFor("delivered", async () => {
      const x = await notification(id);
      return x.status === "delivered" ? x : null;
    });
    expect(n.logs.map((l: { event: string }) => l.event)).toEqual(["accepted", "processed", "sent", "delivered"]);
    phone.proc.kill("SIGTERM");
    await phone.proc.exited;
  });

  test("a carrier failure reaches failed with its reason in the log", async () => {
    const phone = await startPhone(["--fail-rate", "1"]);
    const id = (await send({ message: "This one fails", device_id: phone.deviceId })).body.data.notification_id;
    const n = await waitFor("failed", async () => {
      const x = await notification(id);
      return x.status === "failed" ? x : null;
    });
    expect(n.error_code).toBe("RESULT_ERROR_GENERIC_FAILURE");
    expect(n.logs.at(-1).detail).toContain("Send result: RESULT_ERROR_GENERIC_FAILURE");
    phone.proc.kill("SIGTERM");
  });

  const cancel = (id: number) =>
    server.fetch("/v1/api/notification/cancel", { method: "POST", key, body: JSON.stringify({ notification_id: id }) });

  test("a cancel of a downloaded message is cancelling until the phone drops it: then cancelled", async () => {
    const phone = await startPhone(["--hold", "3000"]);
    const id = (await send({ message: "Cancel me", device_id: phone.deviceId })).body.data.notification_id;
    await waitFor("the phone to download it", () => phone.output().includes("waiting in the phone's queue"));
    const asked = await cancel(id);
    expect(asked.status).toBe(202);
    expect((await asked.json()).data.status).toBe("cancelling");
    await waitFor("the phone to drop it", () => / cancelled/.test(phone.output()));
    const n = await waitFor("the phone's answer", async () => {
      const x = await notification(id);
      return x.status === "cancelled" ? x : null;
    });
    expect(n.logs.map((l: { event: string }) => l.event)).toEqual(["accepted", "cancel_requested", "cancelled"]);
    expect(n.cancelled_at).not.toBeNull();
    await Bun.sleep(3300);
    expect(phone.output()).not.toContain("→ Sent");
    phone.proc.kill("SIGTERM");
  });

  test("a cancel the phone cannot hear before it takes the message up: sent after all, reported as such", async () => {
    const phone = await startPhone(["--hold", "1500"]);
    const id = (await send({ message: "Too late to cancel", device_id: phone.deviceId })).body.data.notification_id;
    await waitFor("the phone to download it", () => phone.output().includes("waiting in the phone's queue"));
    // The phone loses its network: the cancel reaches neither its stream nor a download in time.
    phone.proc.kill("SIGUSR1");
    await waitFor("the network to go", () => phone.output().includes("network lost"));
    const asked = await cancel(id);
    expect(asked.status).toBe(202);
    // Its hold over, the phone takes the message up and sends it; its reports wait for the network.
    await waitFor("the phone to send it", () => phone.output().includes("→ Sent"), { timeoutMs: 10_000 });
    expect((await notification(id)).status).toBe("cancelling");
    phone.proc.kill("SIGUSR2");
    const n = await waitFor("the phone's reports", async () => {
      const x = await notification(id);
      return x.status === "sent" || x.status === "delivered" ? x : null;
    });
    expect(n.cancelled_at).toBeNull();
    expect(n.logs.map((l: { event: string }) => l.event).slice(0, 2)).toEqual(["accepted", "cancel_requested"]);
    // The phone's PATCH (Processed) and its sms:sent webhook both wait for the network and race when
    // it returns, as they do on a real phone: whichever lands first says the cancel came too late.
    const first = n.logs[2] as { event: string; detail: string };
    expect(["processed", "sent"]).toContain(first.event);
    expect(first.detail).toContain(
      first.event === "processed" ? "before the cancel reached it" : "the cancel asked of the phone came too late",
    );
    expect(phone.output()).not.toMatch(/ cancelled/);
    phone.proc.kill("SIGTERM");
  });

  /** A phone of `version` holding a message it downloaded, which is then cancelled: 200 for an older app, 202 for one that can be asked. */
  async function cancelWhileHeld(version: string, status: number) {
    const phone = await startPhone(["--hold", "3000", "--app-version", version]);
    const id = (await send({ message: `Cancel me, app ${version}`, device_id: phone.deviceId })).body.data.notification_id;
    await waitFor("the phone to download it", () => phone.output().includes("waiting in the phone's queue"));
    expect((await cancel(id)).status).toBe(status);
    return phone;
  }

  test("an app before 1.67 is never sent MessageCancelled, though its event stream names only OkHttp", async () => {
    const phone = await cancelWhileHeld("1.60.0", 200);
    // The old app cannot drop it: once its hold is over it sends it like any other.
    await waitFor("the old app to send it", () => phone.output().includes("→ Sent"), { timeoutMs: 10_000 });
    expect(phone.output()).not.toContain("MessageCancelled");
    expect(phone.output()).not.toMatch(/ cancelled/);
    phone.proc.kill("SIGTERM");
  });

  test("a 1.67 app is sent MessageCancelled on its OkHttp-named event stream", async () => {
    const phone = await cancelWhileHeld("1.67.0", 202);
    await waitFor("the phone to drop it", () => / cancelled/.test(phone.output()));
    phone.proc.kill("SIGTERM");
  });

  test("a received SMS appears in a thread", async () => {
    const phone = await startPhone(["--inbound", "Is my order ready?", "--from", "+14155550123"]);
    await waitFor("the inbound post", () => phone.output().includes("received SMS from +14155550123 posted"));
    const threads = (await (await server.fetch("/v1/api/thread/list?limit=100", { key })).json()).data.threads;
    const thread = threads.find((t: { peer: string }) => t.peer === "+14155550123");
    expect(thread).toMatchObject({ channel: "sms", unread_count: 1, last_message: { body: "Is my order ready?", direction: "inbound" } });
    const messages = (await (await server.fetch(`/v1/api/thread/${thread.thread_id}/messages`, { key })).json()).data.messages;
    expect(messages.map((m: { direction: string; body: string }) => [m.direction, m.body])).toEqual([["inbound", "Is my order ready?"]]);
    phone.proc.kill("SIGTERM");
  });

  test("a phone that stops talking turns sends into 400 device_offline after 5 minutes", async () => {
    const phone = await startPhone();
    expect((await send({ message: "while online", device_id: phone.deviceId })).status).toBe(200);
    phone.proc.kill("SIGKILL");
    await phone.proc.exited;
    // Move the phone's clock of last contact back instead of waiting five minutes.
    const db = new Database(join(dataDir, "pigeon.db"));
    db.run("PRAGMA busy_timeout = 5000");
    db.run("UPDATE device SET last_seen_at = last_seen_at - 301000 WHERE id = ?", [phone.deviceId]);
    db.close();
    const r = await send({ message: "while offline", device_id: phone.deviceId });
    expect(r.status).toBe(400);
    expect(r.body.data.error_code).toBe("device_offline");
  });

  test("a forged or replayed phone webhook changes nothing", async () => {
    // Act as a phone by hand, to hold the signing key.
    const reg = await fetch(`${serverUrl}/device`, {
      method: "POST",
      headers: { authorization: `Bearer ${pairingToken}`, "content-type": "application/json", "user-agent": "me.capcom.smsgateway/1.68.0" },
      body: JSON.stringify({ name: "Manual/phone" }),
    });
    const { id: externalId, token } = await reg.json();
    const settings = await (await fetch(`${serverUrl}/settings`, { headers: { authorization: `Bearer ${token}` } })).json();
    const hooks = await (await fetch(`${serverUrl}/webhooks`, { headers: { authorization: `Bearer ${token}` } })).json();
    const url = hooks.find((h: { event: string }) => h.event === "sms:received").url;
    const body = JSON.stringify({
      id: "replay-test-event-0001",
      webhookId: "pigeon-sms-received",
      event: "sms:received",
      deviceId: externalId,
      payload: {
        messageId: "beef",
        message: "hello once",
        sender: "+14155550999",
        recipient: "+15550009999",
        simNumber: 1,
        receivedAt: new Date().toISOString(),
      },
    });
    const post = (secret: string) =>
      fetch(url, { method: "POST", headers: { "content-type": "application/json", ...phoneSignature(secret, body, Date.now()) }, body });
    expect((await post("forged-key")).status).toBe(401);
    expect((await post(settings.webhooks.signing_key)).status).toBe(204);
    expect((await post(settings.webhooks.signing_key)).status).toBe(204);
    const threads = (await (await server.fetch("/v1/api/thread/list?limit=100", { key })).json()).data.threads;
    const thread = threads.find((t: { peer: string }) => t.peer === "+14155550999");
    const messages = (await (await server.fetch(`/v1/api/thread/${thread.thread_id}/messages`, { key })).json()).data.messages;
    expect(messages.map((m: { body: string }) => m.body)).toEqual(["hello once"]);
  });
});
