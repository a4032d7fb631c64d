// End-to-end encrypted SMS on the compiled binary, judged from outside Pigeon's code: values made
// by an encryptor written from the format with Node's crypto, and by one without JavaScript
// (Python's hashlib for the key, the openssl command for the cipher, the Python client's default
// of 75,000 iterations); sent through Pigeon's API and through the published SMSGate npm client;
// carried by `pigeon simulate-phone --passphrase`, which decrypts as the app does. The simulated
// radio gets the plain number and text; the API, the webhooks and SMSGate's state show ciphertext.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Client, { type Message } from "android-sms-gateway";
import { SEND_PATH, waitFor } from "../helpers/api";
import { appEncrypt, appEncryptUnreadable, PYTHON_CLIENT_ITERATIONS, pythonOpensslEncrypt } from "../helpers/app-encryption";
import { isolatedBinary, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { startSimulator, type RunningPhone } from "../helpers/simulator";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";
import { fetchHttpClient } from "../helpers/smsgate-client";

const PASS = "the phone's own passphrase";
const bin = isolatedBinary();
const dataDir = tempDir();
let server: RunningServer;
let key: Credentials;
let pairing: { server_url: string; pairing_token: string };
let phone: RunningPhone;
let receiver: Receiver;
let deviceId: number;
const phones: RunningPhone[] = [];

async function startPhone(name: string, extra: string[]) {
  const p = await startSimulator(bin, [
    "--server",
    pairing.server_url,
    `--token=${pairing.pairing_token}`,
    "--delay",
    "50",
    "--name",
    name,
    ...extra,
  ]);
  phones.push(p);
  return p;
}

const notification = async (id: number) => (await server.api(`/v1/api/notification/${id}`, key)).body.data;
const settled = (id: number) =>
  waitFor(`notification ${id} to finish`, async () => {
    const n = await notification(id);
    return n.status === "delivered" || n.status === "failed" ? n : null;
  });

beforeAll(async () => {
  receiver = startReceiver();
  server = await startServer(bin, { PIGEON_DATA_DIR: dataDir, PIGEON_WORKER_INTERVAL: "1", PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1" });
  key = server.initialKey!;
  pairing = (await (await server.fetch("/v1/api/device/pairing", { key })).json()).data;
  phone = await startPhone("Encrypting phone", ["--passphrase", PASS]);
  deviceId = (await server.api("/v1/api/device/list", key)).body.data.devices[0].device_id;
  expect((await server.api("/v1/api/workspace/settings", key, { encrypted_sends: true })).status).toBe(200);
  const hook = await server.api("/v1/api/webhook/create", key, {
    url: receiver.url,
    events: ["notification.delivered", "notification.failed"],
  });
  expect(hook.status).toBe(200);
});

afterAll(async () => {
  for (const p of phones) p.proc.kill("SIGKILL");
  await server?.stop("SIGKILL");
  receiver?.stop();
});

describe("encrypted SMS through the binary and the simulated phone", () => {
  test("Node's encryptor: the radio gets the plain number and text, the API and the webhook show ciphertext", async () => {
    const to = appEncrypt(PASS, RECIPIENT, 10_000);
    const text = appEncrypt(PASS, "Ünïcode and all: your table is ready", 10_000);
    const sent = await server.api(SEND_PATH, key, { recipient_contact: to, message: text, encrypted: true, device_id: deviceId });
    expect(sent.status).toBe(200);
    const n = await settled(sent.body.data.notification_id);
    expect(n).toMatchObject({ status: "delivered", recipient: to, message: text, encrypted: true, cost: 0 });
    expect(phone.output()).toContain(`radio: to ${RECIPIENT}: "Ünïcode and all: your table is ready"`);
    const hook = await waitFor("the delivered webhook", () =>
      receiver.ofType("notification.delivered").find((r) => r.body.data.notification_id === n.notification_id),
    );
    expect(hook.body.data).toMatchObject({ recipient: to, message: text, encrypted: true });
    expect(hook.raw).not.toContain(RECIPIENT);
  });

  test("Python's hashlib and openssl (75,000 iterations) through the SMSGate npm client: delivered, reported by ciphertext", async () => {
    const to = pythonOpensslEncrypt(PASS, SECOND_RECIPIENT);
    const text = pythonOpensslEncrypt(PASS, "Made without JavaScript");
    if (to === null || text === null) throw new Error("python3 and openssl are needed for this judge");
    expect(to).toContain(`$i=${PYTHON_CLIENT_ITERATIONS}$`);
    const client = new Client(key.api_key, key.api_secret, fetchHttpClient, `${server.url}/3rdparty/v1`);
    // The client's Message type has no isEncrypted; it posts the object as given, as SMSGate's API takes it.
    const state = await client.send({ message: text, phoneNumbers: [to], isEncrypted: true } as Message);
    expect(state).toMatchObject({ isEncrypted: true, recipients: [{ phoneNumber: to }] });
    const done = await waitFor("the SMSGate message to be delivered", async () => {
      const s = await client.getState(state.id);
      return s.state === "Delivered" ? s : null;
    });
    expect(done.recipients).toEqual([expect.objectContaining({ phoneNumber: to, state: "Delivered" })]);
    expect(phone.output()).toContain(`radio: to ${SECOND_RECIPIENT}: "Made without JavaScript"`);
  });

  test("a text under another passphrase fails the message with the app's reason; a number alone fails that recipient", async () => {
    const before = (await server.api("/v1/api/stats/credits", key)).body.data.balance;
    const badText = await server.api(SEND_PATH, key, {
      recipient_contact: appEncrypt(PASS, RECIPIENT),
      message: appEncryptUnreadable(PASS, "not the phone's", "Never sent"),
      encrypted: true,
    });
    expect(badText.status).toBe(200);
    const failed = await settled(badText.body.data.notification_id);
    expect(failed).toMatchObject({ status: "failed", encrypted: true, cost: 0 });
    expect(failed.error_reason).toBe("Can't send message: error:1e000065:Cipher functions:OPENSSL_internal:BAD_DECRYPT");
    const badNumber = await server.api(SEND_PATH, key, {
      recipient_contact: appEncryptUnreadable(PASS, "not the phone's", RECIPIENT),
      message: appEncrypt(PASS, "Never sent either"),
      encrypted: true,
    });
    const failedNumber = await settled(badNumber.body.data.notification_id);
    expect(failedNumber.status).toBe("failed");
    expect(failedNumber.error_reason).toStartWith("sendSMS: error:1e000065");
    expect(phone.output()).not.toContain("Never sent");
    // A phone costs no credits, so a failed one takes none back: the balance stands.
    expect((await server.api("/v1/api/stats/credits", key)).body.data.balance).toBe(before);
    await waitFor("the failed webhook", () => receiver.ofType("notification.failed").length >= 2);
  });

  test("a phone with no passphrase fails as the app does, until one is pushed through SMSGate's settings", async () => {
    const bare = await startPhone("Phone without passphrase", []);
    const bareId = (await server.api("/v1/api/device/list", key)).body.data.devices.find(
      (d: { name: string }) => d.name === "Phone without passphrase",
    ).device_id;
    const first = await server.api(SEND_PATH, key, {
      recipient_contact: appEncrypt(PASS, RECIPIENT),
      message: appEncrypt(PASS, "Before the push"),
      encrypted: true,
      device_id: bareId,
    });
    const failed = await settled(first.body.data.notification_id);
    expect(failed.error_reason).toBe("Can't send message: Passphrase is not set");

    const client = new Client(key.api_key, key.api_secret, fetchHttpClient, `${server.url}/3rdparty/v1`);
    await client.patchSettings({ encryption: { passphrase: PASS } });
    expect(JSON.stringify(await client.getSettings())).not.toContain(PASS);
    await waitFor("the phone to load the pushed passphrase", () => bare.output().includes("encryption passphrase set"), {
      detail: bare.output,
    });
    const second = await server.api(SEND_PATH, key, {
      recipient_contact: appEncrypt(PASS, RECIPIENT),
      message: appEncrypt(PASS, "After the push"),
      encrypted: true,
      device_id: bareId,
    });
    expect((await settled(second.body.data.notification_id)).status).toBe("delivered");
    expect(bare.output()).toContain(`radio: to ${RECIPIENT}: "After the push"`);
  });
});
