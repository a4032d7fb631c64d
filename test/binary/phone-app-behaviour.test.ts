// The compiled binary with a simulated phone that keeps the stock app's habits: after "Sign up" it
// reads its webhooks and settings only when an event tells it to, and it pulls messages only on an
// event, a (re)opened stream or a 15-minute poll. Pigeon has to tell it about everything in time.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { SEND_PATH, waitFor } from "../helpers/api";
import { isolatedBinary, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { startSimulator } from "../helpers/simulator";
import { RECIPIENT } from "../helpers/numbers";

const bin = isolatedBinary();
let server: RunningServer;
let key: Credentials;
let serverUrl: string;
let pairingToken: string;
const procs: Subprocess[] = [];

beforeAll(async () => {
  server = await startServer(bin, { PIGEON_DATA_DIR: tempDir() });
  key = server.initialKey!;
  const pairing = (await server.api("/v1/api/device/pairing", key)).body.data;
  serverUrl = pairing.server_url;
  pairingToken = pairing.pairing_token;
});

afterAll(async () => {
  for (const proc of procs) proc.kill("SIGKILL");
  await server?.stop("SIGKILL");
});

const knownIds = new Set<number>();

/** Starts `pigeon simulate-phone` (its default 15-minute poll) and waits until its stream is open. */
async function startPhone(name: string, args: string[] = []) {
  const { proc, output } = await startSimulator(bin, [
    "--server",
    serverUrl,
    "--token",
    pairingToken,
    "--delay",
    "100",
    "--name",
    name,
    ...args,
  ]);
  procs.push(proc);
  const list = (await server.api("/v1/api/device/list?limit=100", key)).body.data.devices as { name: string; device_id: number }[];
  const deviceId = list.find((d) => d.name === name && !knownIds.has(d.device_id))!.device_id;
  knownIds.add(deviceId);
  return { proc, output, deviceId };
}

describe("a phone with the app's habits", () => {
  test("after sign-up it is told its webhooks and signing key, so a received SMS lands in a thread without a restart", async () => {
    const phone = await startPhone("Signup/phone", ["--inbound", "Is my parcel here?", "--from", "+14155550777"]);
    await waitFor("the inbound post", () => phone.output().includes("received SMS from +14155550777 posted"), { detail: phone.output });
    expect(phone.output()).toContain("settings loaded (signing key from the server");
    expect(phone.output()).toMatch(/webhooks: .*sms:received/);
    const threads = (await server.api("/v1/api/thread/list?limit=100", key)).body.data.threads;
    const thread = threads.find((t: { peer: string }) => t.peer === "+14155550777");
    expect(thread).toMatchObject({ channel: "sms", last_message: { body: "Is my parcel here?", direction: "inbound" } });
    phone.proc.kill("SIGTERM");
    await phone.proc.exited;
  });

  test(
    "a batch over the per-minute budget is all delivered within the next minute, not at the 15-minute poll",
    async () => {
      const phone = await startPhone("Budget/phone");
      const update = await server.api("/v1/api/device/update", key, { device_id: phone.deviceId, send_limit_per_minute: 2 });
      expect(update.status).toBe(200);
      // Not in a minute's last seconds, so the whole batch is handed out against one minute's budget.
      const second = new Date().getUTCSeconds();
      if (second >= 57) await Bun.sleep((61 - second) * 1000);
      const ids: number[] = [];
      for (const text of ["one", "two", "three"]) {
        const sent = await server.api(SEND_PATH, key, {
          recipient_contact: RECIPIENT,
          message: `Batch ${text}`,
          device_id: phone.deviceId,
        });
        expect(sent.status).toBe(200);
        ids.push(sent.body.data.notification_id);
      }
      const delivered = () => (phone.output().match(/ → Delivered/g) ?? []).length;
      // Two go at once; the third waits for the next minute's budget. (Watched on the phone's log:
      // polling the API this often would run into its rate limit.)
      await waitFor("two delivered", () => delivered() >= 2, { timeoutMs: 30_000, detail: phone.output });
      // Pigeon hands the third once the next minute starts; the phone, given the same limit, then
      // holds it until a minute has passed since it took up the second (the app's applyLimit counts
      // the minute just past). Both are within 61 s from here; under a loaded machine allow half a
      // minute beyond that, far short of the app's 15-minute poll it would otherwise wait for.
      await waitFor("all three delivered", () => delivered() >= 3, {
        timeoutMs: 61_000 + 30_000,
        intervalMs: 250,
        detail: phone.output,
      });
      // The phone logs "Delivered" as it reports it: the server records the report a moment later.
      const statuses = async () =>
        Promise.all(ids.map(async (id) => (await server.api(`/v1/api/notification/${id}`, key)).body.data.status));
      await waitFor("the server records all three delivered", async () => (await statuses()).every((s) => s === "delivered"), {
        timeoutMs: 15_000,
        intervalMs: 500,
      });
      expect(await statuses()).toEqual(["delivered", "delivered", "delivered"]);
      phone.proc.kill("SIGTERM");
      await phone.proc.exited;
    },
    { timeout: 150_000 },
  );
});
