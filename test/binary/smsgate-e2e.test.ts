// An SMSGate user's code, unchanged, against the compiled binary: the published npm client
// (android-sms-gateway, its own code) pointed at Pigeon's /3rdparty/v1 with a Pigeon key and
// secret, a simulated phone carrying the messages (texts, and a data SMS, whose dataMessage the
// client posts as given though its types lack it). Where the client has no call for an operation
// (list, cancel, tokens), a plain request as SMSGate's API documents it. Webhooks are checked the
// way SMSGate's docs tell receivers to (the published client has no verification helper).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import Client, { LimitPeriod, ProcessState, SimSelectionMode, WebHookEventType, type MessageState } from "android-sms-gateway";
import { waitFor } from "../helpers/api";
import { isolatedBinary, runCommand, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { startSimulator, type RunningPhone } from "../helpers/simulator";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";
import { fetchHttpClient } from "../helpers/smsgate-client";

const bin = isolatedBinary();
let server: RunningServer;
let key: Credentials;
let phone: RunningPhone;
let base: string;
let client: Client;
let receiver: Receiver;
let pairing: { server_url: string; pairing_token: string };
const dataDir = tempDir();

const basic = () => `Basic ${btoa(`${key.api_key}:${key.api_secret}`)}`;
const plain = (method: string, path: string, authorization: string, body?: unknown) =>
  fetch(`${base}${path}`, {
    method,
    headers: { authorization, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

beforeAll(async () => {
  receiver = startReceiver();
  server = await startServer(bin, { PIGEON_DATA_DIR: dataDir, PIGEON_WORKER_INTERVAL: "1", PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1" });
  key = server.initialKey!;
  pairing = (await (await server.fetch("/v1/api/device/pairing", { key })).json()).data;
  phone = await startSimulator(bin, [
    "--server",
    pairing.server_url,
    `--token=${pairing.pairing_token}`,
    "--delay",
    "50",
    "--name",
    "SMSGate phone",
  ]);
  base = `${server.url}/3rdparty/v1`;
  // The client's own constructor: login, password, HTTP client, base URL (a private server's).
  client = new Client(key.api_key, key.api_secret, fetchHttpClient, base);
});

afterAll(async () => {
  phone?.proc.kill("SIGKILL");
  await server?.stop("SIGKILL");
  receiver?.stop();
});

describe("the npm android-sms-gateway client against the binary", () => {
  test("health and devices through the client", async () => {
    const health = await client.getHealth();
    expect(health.status).toBe("pass" as never);
    const devices = await client.getDevices();
    expect(devices).toEqual([expect.objectContaining({ name: "SMSGate phone", id: expect.any(String), lastSeen: expect.any(String) })]);
  });

  test("a message to two numbers is sent through the phone and read until Delivered", async () => {
    const accepted = await client.send({
      phoneNumbers: [RECIPIENT, SECOND_RECIPIENT],
      message: "Your order is ready",
      withDeliveryReport: true,
    });
    expect(accepted.state).toBe(ProcessState.Pending);
    expect(accepted.recipients.map((r) => r.phoneNumber)).toEqual([RECIPIENT, SECOND_RECIPIENT]);
    const done = await waitFor("Delivered", async () => {
      const s: MessageState = await client.getState(accepted.id);
      return s.state === ProcessState.Delivered ? s : null;
    });
    expect(done.recipients.map((r) => r.state)).toEqual([ProcessState.Delivered, ProcessState.Delivered]);
    const states = (done as MessageState & { states: Record<string, string> }).states;
    expect(Object.keys(states)).toEqual(["Pending", "Processed", "Sent", "Delivered"]);
    // The private-server base (/api/3rdparty/v1) reads the same message.
    const viaApi = new Client(key.api_key, key.api_secret, fetchHttpClient, `${server.url}/api/3rdparty/v1`);
    expect((await viaApi.getState(accepted.id)).state).toBe(ProcessState.Delivered);
  });

  test("list with filters, and cancel a scheduled message", async () => {
    const at = new Date(Date.now() + 3600_000).toISOString();
    const scheduled = await plain("POST", "/messages", basic(), {
      id: "later-1",
      textMessage: { text: "Tomorrow's reminder" },
      phoneNumbers: ["+14155552673"],
      scheduleAt: at,
    });
    expect(scheduled.status).toBe(202);
    expect(scheduled.headers.get("location")).toBe("/3rdparty/v1/messages/later-1");

    const pending = await plain("GET", "/messages?state=Pending&limit=10", basic());
    expect(pending.headers.get("x-total-count")).toBe("1");
    expect((await pending.json()).map((m: { id: string }) => m.id)).toEqual(["later-1"]);
    const delivered = await plain("GET", "/messages?state=Delivered", basic());
    expect(delivered.headers.get("x-total-count")).toBe("1");

    const cancelled = await plain("DELETE", "/messages/later-1", basic());
    expect(cancelled.status).toBe(200);
    expect((await cancelled.json()).state).toBe("Cancelled");
    expect((await client.getState("later-1")).state).toBe("Cancelled" as never);
    const again = await plain("DELETE", "/messages/later-1", basic());
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ code: 409, data: { error_code: "not_cancellable" } });
  });

  test("a dataMessage sent through the client goes out as bytes to its port, and its state reads back Delivered", async () => {
    // The client's 3.0.0 Message type has no dataMessage (its send() posts the object as given):
    // the reference server's Message shape, typed through a cast.
    const request = { id: "data-e2e", dataMessage: { data: "3q2+7w==", port: 9200 }, phoneNumbers: [RECIPIENT], withDeliveryReport: true };
    const accepted = await client.send(request as unknown as Parameters<Client["send"]>[0]);
    expect(accepted).toMatchObject({ id: "data-e2e", state: ProcessState.Pending, isEncrypted: false });
    expect(accepted.recipients).toEqual([expect.objectContaining({ phoneNumber: RECIPIENT, state: ProcessState.Pending })]);
    const done = await waitFor("Delivered", async () => {
      const s: MessageState = await client.getState("data-e2e");
      return s.state === ProcessState.Delivered ? s : null;
    });
    expect(done.recipients).toEqual([expect.objectContaining({ phoneNumber: RECIPIENT, state: ProcessState.Delivered })]);
    expect(Object.keys((done as MessageState & { states: Record<string, string> }).states)).toEqual([
      "Pending",
      "Processed",
      "Sent",
      "Delivered",
    ]);
    // The simulated radio sent the payload's four bytes to port 9200, not a text.
    expect(phone.output()).toMatch(new RegExp(`radio: data SMS \\S+ to \\${RECIPIENT} port 9200: 4 bytes deadbeef`));
    // Pigeon's own API shows the same message as a data SMS of one segment with no text.
    const list = (await server.api("/v1/api/notification/list", key)).body.data.notifications as { data_message?: unknown }[];
    const n = list.filter((x) => x.data_message !== undefined);
    expect(n).toHaveLength(1);
    expect(n[0]).toMatchObject({ status: "delivered", message: "", data_message: { data: "3q2+7w==", port: 9200 }, segments: 1 });
  });

  test("a scoped token works within its scopes and is refused outside them", async () => {
    const issued = await plain("POST", "/auth/token", basic(), { ttl: 600, scopes: ["messages:read", "devices:list"] });
    expect(issued.status).toBe(201);
    const token = await issued.json();
    const bearer = `Bearer ${token.access_token}`;
    expect((await plain("GET", "/devices", bearer)).status).toBe(200);
    expect((await plain("GET", "/messages/later-1", bearer)).status).toBe(200);
    const refused = await plain("POST", "/messages", bearer, { message: "Not allowed", phoneNumbers: [RECIPIENT] });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 403, data: { error_code: "forbidden", scope: "messages:send" } });
    expect((await plain("DELETE", `/auth/token/${token.id}`, basic())).status).toBe(204);
    expect((await plain("GET", "/devices", bearer)).status).toBe(401);
  });

  test("a webhook registered through the client receives an inbound SMS, verified as SMSGate's docs say", async () => {
    const hook = await client.registerWebhook({ id: "inbox-hook", url: receiver.url, event: WebHookEventType.SmsReceived });
    expect(hook).toMatchObject({ id: "inbox-hook", event: "sms:received" });
    expect((await client.getWebhooks()).map((w) => w.id)).toEqual(["inbox-hook"]);
    // The owner reads the signing key on the CLI (the API never returns it, as on SMSGate).
    const printed = await runCommand(bin, ["smsgate", "signing-key", "--json"], { PIGEON_DATA_DIR: dataDir });
    expect(printed.code).toBe(0);
    const signingKey = JSON.parse(printed.stdout).signing_key as string;

    // A second phone that receives an SMS as soon as it is paired.
    const texting = await startSimulator(bin, [
      "--server",
      pairing.server_url,
      `--token=${pairing.pairing_token}`,
      "--delay",
      "50",
      "--name",
      "Texting phone",
      "--inbound",
      "Is my order ready?",
      "--from",
      "+14155550123",
    ]);
    try {
      const hit = await waitFor("the sms:received delivery", () => receiver.received.find((r) => r.body?.event === "sms:received") ?? null);
      expect(hit.body).toMatchObject({
        webhookId: "inbox-hook",
        event: "sms:received",
        payload: { message: "Is my order ready?", phoneNumber: "+14155550123" },
      });
      // SMSGate's documented check: hex HMAC-SHA256 of the raw body followed by X-Timestamp, with the signing key.
      const expected = createHmac("sha256", signingKey)
        .update(hit.raw + hit.headers.get("x-timestamp"))
        .digest("hex");
      expect(hit.headers.get("x-signature")).toBe(expected);
    } finally {
      texting.proc.kill("SIGKILL");
    }
    await client.deleteWebhook("inbox-hook");
    expect(await client.getWebhooks()).toEqual([]);
  });

  test("system:ping and mms:downloaded webhooks carry the phone's health and the MMS's content in SMSGate's payloads", async () => {
    await client.registerWebhook({ id: "ping-hook", url: receiver.url, event: WebHookEventType.SystemPing });
    await client.registerWebhook({ id: "mms-hook", url: receiver.url, event: "mms:downloaded" as WebHookEventType });
    // A phone that pings often, on a low battery, and receives an MMS once paired.
    const mms = await startSimulator(bin, [
      "--server",
      pairing.server_url,
      `--token=${pairing.pairing_token}`,
      "--delay",
      "50",
      "--name",
      "MMS phone",
      "--ping",
      "0.2",
      "--battery",
      "9",
      "--mms",
      "Parcel photo",
      "--from",
      "+14155550124",
    ]);
    try {
      const ping = await waitFor("the system:ping delivery", () => receiver.received.find((r) => r.body?.event === "system:ping") ?? null);
      expect(ping.body).toMatchObject({ webhookId: "ping-hook", deviceId: expect.stringMatching(/^\d+$/) });
      // The health as the app reports it, not Pigeon's summary of it.
      expect(ping.body.payload.health.checks["battery:level"]).toMatchObject({ observedValue: 9 });
      const downloaded = await waitFor(
        "the mms:downloaded delivery",
        () => receiver.received.find((r) => r.body?.event === "mms:downloaded") ?? null,
      );
      expect(downloaded.body).toMatchObject({
        webhookId: "mms-hook",
        payload: {
          sender: "+14155550124",
          phoneNumber: "+14155550124",
          subject: "Parcel photo",
          messageId: expect.any(String),
          receivedAt: expect.any(String),
        },
      });
      expect(downloaded.body.payload.attachments.length).toBeGreaterThan(0);
      expect(downloaded.body.payload.attachments[0]).toMatchObject({ contentType: expect.any(String), data: null });
      // No mms:downloaded went to the ping webhook, nor a ping to the MMS one.
      expect(receiver.received.filter((r) => r.body?.webhookId === "ping-hook").every((r) => r.body.event === "system:ping")).toBe(true);
      expect(receiver.received.filter((r) => r.body?.webhookId === "mms-hook").every((r) => r.body.event === "mms:downloaded")).toBe(true);
    } finally {
      mms.proc.kill("SIGKILL");
    }
    await client.deleteWebhook("ping-hook");
    await client.deleteWebhook("mms-hook");
  });

  test("GET /inbox lists what the phones received, the MMS once with its content; the older /device path answers", async () => {
    const inbox = await plain("GET", "/inbox", basic());
    expect(inbox.status).toBe(200);
    const items = (await inbox.json()) as { type: string; sender: string; contentPreview: string }[];
    expect(inbox.headers.get("x-total-count")).toBe(String(items.length));
    expect(items).toContainEqual(expect.objectContaining({ type: "SMS", sender: "+14155550123", contentPreview: "Is my order ready?" }));
    // The simulated MMS: headers first, then its content completed the same entry.
    expect(items.filter((m) => m.sender === "+14155550124")).toEqual([expect.objectContaining({ type: "MMS_DOWNLOADED" })]);
    const onlySms = (await (await plain("GET", "/inbox?type=SMS", basic())).json()) as { type: string }[];
    expect(onlySms.length).toBeGreaterThan(0);
    expect(onlySms.every((m) => m.type === "SMS")).toBe(true);
    const older = await plain("GET", "/device", basic());
    expect(older.status).toBe(200);
    expect((await older.json()).map((d: { id: string }) => d.id)).toEqual((await client.getDevices()).map((d) => d.id));
  });

  test("settings set through the client reach the simulated phone, which reads them on SettingsUpdated; null resets them", async () => {
    await client.patchSettings({
      messages: { limitPeriod: LimitPeriod.PerHour, limitValue: 500, simSelectionMode: SimSelectionMode.Random },
    });
    const loaded = await waitFor("the phone to load the settings", () =>
      phone
        .output()
        .split("\n")
        .find((l) => l.includes("settings loaded") && l.includes("limit 500 PerHour")),
    );
    expect(loaded).toContain("SIM selection Random");
    const read = (await client.getSettings()) as unknown as Record<string, Record<string, unknown>>;
    expect(read.messages).toMatchObject({ limit_period: "PerHour", limit_value: 500, sim_selection_mode: "Random" });
    // Cleared: the phone is given null and goes back to the app's defaults (no limit, OSDefault).
    const cleared = await plain("PATCH", "/settings", basic(), { messages: { limit_period: null, sim_selection_mode: null } });
    expect(cleared.status).toBe(200);
    await waitFor("the phone to reset them", () =>
      phone
        .output()
        .split("\n")
        .some((l) => l.includes("settings loaded") && l.includes("no limit") && l.includes("SIM selection OSDefault")),
    );
  });

  test("a device is deleted through the client", async () => {
    const before = await client.getDevices();
    const device = before.find((d) => d.name === "SMSGate phone")!;
    await client.deleteDevice(device.id);
    expect((await client.getDevices()).map((d) => d.id)).toEqual(before.filter((d) => d.id !== device.id).map((d) => d.id));
  });
});
