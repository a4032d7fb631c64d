// An end-to-end encrypted data SMS on the compiled binary, judged from outside Pigeon's code: the
// payload's base64 and each number encrypted by the encryptor written from the format
// (test/helpers/app-encryption.ts, Node's crypto) and by one without JavaScript (Python's hashlib
// and the openssl command, 75,000 iterations); sent through Pigeon's API and the published SMSGate
// npm client; carried by `pigeon simulate-phone --passphrase`, which decrypts the payload and each
// number, base64-decodes the payload as Android does and hands the bytes to the radio on the port,
// as the app's MessagesService does. What the server cannot check (the payload's decoded size,
// whether its plaintext is base64) fails on the phone with the app's words.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Client, { type Message } from "android-sms-gateway";
import { SEND_PATH, waitFor } from "../helpers/api";
import { appEncrypt, appEncryptUnreadable, PYTHON_CLIENT_ITERATIONS, pythonOpensslEncrypt } from "../helpers/app-encryption";
import { isolatedBinary, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { startSimulator, type RunningPhone } from "../helpers/simulator";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";
import { fetchHttpClient } from "../helpers/smsgate-client";

const PASS = "the data phone's passphrase";
const bin = isolatedBinary();
const dataDir = tempDir();
let server: RunningServer;
let key: Credentials;
let phone: RunningPhone;

/** A payload of `bytes` bytes counting up from 0, and its hex as the radio line prints it. */
const payload = (bytes: number) => Buffer.from(Array.from({ length: bytes }, (_, i) => i & 0xff));

const settled = (id: number) =>
  waitFor(`notification ${id} to finish`, async () => {
    const n = (await server.api(`/v1/api/notification/${id}`, key)).body.data;
    return n.status === "delivered" || n.status === "failed" ? n : null;
  });

/** Sends an encrypted data SMS to RECIPIENT through Pigeon's API; its notification once finished. */
async function sendData(data: string, port = 9200) {
  const sent = await server.api(SEND_PATH, key, {
    recipient_contact: appEncrypt(PASS, RECIPIENT),
    data_message: { data, port },
    encrypted: true,
  });
  expect(sent.status).toBe(200);
  return settled(sent.body.data.notification_id);
}

beforeAll(async () => {
  server = await startServer(bin, { PIGEON_DATA_DIR: dataDir, PIGEON_WORKER_INTERVAL: "1" });
  key = server.initialKey!;
  const pairing = (await (await server.fetch("/v1/api/device/pairing", { key })).json()).data;
  phone = await startSimulator(bin, [
    "--server",
    pairing.server_url,
    `--token=${pairing.pairing_token}`,
    "--delay",
    "50",
    "--passphrase",
    PASS,
  ]);
  expect((await server.api("/v1/api/workspace/settings", key, { encrypted_sends: true })).status).toBe(200);
});

afterAll(async () => {
  phone?.proc.kill("SIGKILL");
  await server?.stop("SIGKILL");
});

describe("an encrypted data SMS through the binary and the simulated phone", () => {
  test("Node's encryptor through Pigeon's API: the radio gets the plain number, the decrypted bytes and the port", async () => {
    const data = appEncrypt(PASS, "3q2+7w==", 10_000);
    const n = await sendData(data);
    expect(n).toMatchObject({
      status: "delivered",
      message: "",
      data_message: { data, port: 9200 },
      encrypted: true,
      segments: 1,
      cost: 0,
    });
    expect(phone.output()).toMatch(new RegExp(`radio: data SMS \\S+ to \\${RECIPIENT} port 9200: 4 bytes deadbeef`));
  });

  test("Python's hashlib and openssl through the SMSGate npm client: 133 bytes in base64 lines reach both numbers", async () => {
    // The base64 wrapped at 76 characters with CRLF, as a MIME encoder writes it: the server takes
    // its 192 bytes of ciphertext, and Android's decoder skips the line breaks.
    const lines = `${payload(133)
      .toString("base64")
      .match(/.{1,76}/g)!
      .join("\r\n")}\r\n`;
    const data = pythonOpensslEncrypt(PASS, lines);
    const first = pythonOpensslEncrypt(PASS, RECIPIENT);
    const second = pythonOpensslEncrypt(PASS, SECOND_RECIPIENT);
    if (data === null || first === null || second === null) throw new Error("python3 and openssl are needed for this judge");
    expect(data).toContain(`$i=${PYTHON_CLIENT_ITERATIONS}$`);
    const client = new Client(key.api_key, key.api_secret, fetchHttpClient, `${server.url}/3rdparty/v1`);
    // The client's Message type has neither dataMessage nor isEncrypted; it posts the object as given.
    const state = await client.send({
      dataMessage: { data, port: 53739 },
      phoneNumbers: [first, second],
      isEncrypted: true,
    } as unknown as Message);
    expect(state.recipients.map((r) => r.phoneNumber)).toEqual([first, second]);
    const done = await waitFor("the SMSGate message to be delivered", async () => {
      const s = await client.getState(state.id);
      return s.state === "Delivered" ? s : null;
    });
    expect(done.recipients).toEqual([
      expect.objectContaining({ phoneNumber: first, state: "Delivered" }),
      expect.objectContaining({ phoneNumber: second, state: "Delivered" }),
    ]);
    const hex = payload(133).toString("hex");
    for (const number of [RECIPIENT, SECOND_RECIPIENT])
      expect(phone.output()).toMatch(new RegExp(`radio: data SMS \\S+ to \\${number} port 53739: 133 bytes ${hex}`));
  });

  test("what only the phone can see fails there with the app's words: too long, not base64, empty, another passphrase", async () => {
    // 134 bytes are 180 base64 characters too, so the server cannot tell them from 133: Android
    // cannot build the PDU and fails the send.
    const tooLong = await sendData(appEncrypt(PASS, payload(134).toString("base64")));
    expect(tooLong).toMatchObject({ status: "failed", error_reason: "Send result: RESULT_ERROR_GENERIC_FAILURE" });
    // A plaintext Android's Base64 refuses (a lone sextet at the end, once `*` and `?` are skipped).
    const notBase64 = await sendData(appEncrypt(PASS, "not*base64?"));
    expect(notBase64.status).toBe("failed");
    expect(notBase64.error_reason).toMatch(/^Can't send message: Invalid Base64 data for message \S+$/);
    // No bytes at all: sendDataMessage refuses them for each recipient.
    const empty = await sendData(appEncrypt(PASS, ""));
    expect(empty).toMatchObject({ status: "failed", error_reason: "sendSMS: Invalid message data" });
    const unreadable = await sendData(appEncryptUnreadable(PASS, "not the phone's", "3q2+7w=="));
    expect(unreadable).toMatchObject({
      status: "failed",
      error_reason: "Can't send message: error:1e000065:Cipher functions:OPENSSL_internal:BAD_DECRYPT",
    });
    expect(phone.output()).not.toMatch(/radio: data SMS \S+ to \S+ port 9200: (0|134) bytes/);
  });
});
