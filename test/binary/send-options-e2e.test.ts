// The compiled binary with simulated phones: the app's send options reach the phone and the
// simulator honours them as the app does (SIM, priority, delivery report, validUntil), expired
// messages never reach it, a re-registering phone gets its device back, and an offline phone's
// waiting messages move to another phone (by themselves or by hand) or fail once their time is up.
// PIGEON_OFFLINE_AFTER=3 makes a stopped phone offline in seconds instead of 5 minutes.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { SEND_PATH, waitFor } from "../helpers/api";
import { isolatedBinary, runCommand, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { startSimulator } from "../helpers/simulator";
import { RECIPIENT } from "../helpers/numbers";

const bin = isolatedBinary();
const dataDir = tempDir();
let server: RunningServer;
let serverUrl: string;
let pairingToken: string;
const procs: Subprocess[] = [];
let key: Credentials;

beforeAll(async () => {
  // The owner plan's 60 requests a minute would not cover these tests' waits on the API.
  const plan = await runCommand(bin, ["plans", "set", "--code", "owner", "--per-minute", "2000"], { PIGEON_DATA_DIR: dataDir });
  expect(plan.code).toBe(0);
  server = await startServer(bin, {
    PIGEON_DATA_DIR: dataDir,
    PIGEON_WORKER_INTERVAL: "1",
    PIGEON_OFFLINE_AFTER: "3",
    PIGEON_OFFLINE_TTL: "3600",
  });
  key = server.initialKey!;
  const pairing = (await server.api("/v1/api/device/pairing", key)).body.data;
  serverUrl = pairing.server_url;
  pairingToken = pairing.pairing_token;
});

// Each test's phones stop with it, even when it fails half-way: the last test needs them all gone.
afterEach(async () => {
  for (const proc of procs.splice(0)) {
    proc.kill("SIGKILL");
    await proc.exited;
  }
});

afterAll(async () => {
  await server?.stop("SIGKILL");
});

interface Phone {
  proc: Subprocess;
  output: () => string;
  deviceId: number;
  stop(): Promise<void>;
}

/** Starts `pigeon simulate-phone` named `name` and waits until its stream is open. */
async function startPhone(key: Credentials, name: string, args: string[] = []): Promise<Phone> {
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
  const deviceId = list.filter((d) => d.name === name).at(-1)!.device_id;
  return {
    proc,
    output,
    deviceId,
    async stop() {
      proc.kill("SIGKILL");
      await proc.exited;
    },
  };
}

const send = (key: Credentials, body: Record<string, unknown>) => server.api(SEND_PATH, key, { recipient_contact: RECIPIENT, ...body });
const notification = async (key: Credentials, id: number) => (await server.api(`/v1/api/notification/${id}`, key)).body.data;

/** Waits (polling gently, to stay under the key's rate limit) until notification `id` satisfies `done`. */
function waitForNotification(key: Credentials, id: number, what: string, done: (n: any) => boolean, detail?: () => string) {
  return waitFor(
    what,
    async () => {
      const n = await notification(key, id);
      return done(n) ? n : null;
    },
    { intervalMs: 400, timeoutMs: 20_000, detail },
  );
}

/** Not in a pacing minute's last seconds: what a test hands out must fall in one minute's budget. */
async function awayFromMinuteEnd() {
  const second = new Date().getUTCSeconds();
  if (second >= 50) await Bun.sleep((61 - second) * 1000);
}

/** "YYYY-MM-DD HH:MM:SS" in UTC, `secondsAhead` from now (rounded up to a whole second). */
function scheduleIn(secondsAhead: number): string {
  return new Date(Math.ceil(Date.now() / 1000) * 1000 + secondsAhead * 1000).toISOString().slice(0, 19).replace("T", " ");
}

describe("send options on a paired phone", () => {
  test("the device shows its SIMs; sim_number reaches the phone, which sends on that SIM; a SIM it did not report is refused at once, naming its SIMs", async () => {
    const phone = await startPhone(key, "Sims/phone", ["--sims", "2"]);
    const device = (await server.api(`/v1/api/device/${phone.deviceId}`, key)).body.data;
    expect(device.sim_cards).toEqual([
      { sim_number: 1, slot_index: 0, phone_number: "*******1234", carrier_name: "***ile", iccid: "****************5678" },
      { sim_number: 2, slot_index: 1, phone_number: "*******1235", carrier_name: "***ile", iccid: "****************5679" },
    ]);
    const second = await send(key, { message: "On SIM 2", sim_number: 2, device_id: phone.deviceId });
    expect(second.status).toBe(200);
    const third = await send(key, { message: "On SIM 3", sim_number: 3, device_id: phone.deviceId });
    // The phone would fail it ("Can't send message: SIM 3 not found"); Pigeon knows its SIMs and says so first.
    expect(third.status).toBe(400);
    expect(third.body.data).toMatchObject({ error_code: "invalid_sim_number", field: "sim_number", sim_numbers: [1, 2] });
    const ok = await waitForNotification(
      key,
      second.body.data.notification_id,
      "SIM 2 delivered",
      (n) => n.status === "delivered",
      phone.output,
    );
    expect(ok.sim_number).toBe(2);
    expect(phone.output()).toContain(`message ${ok.provider_message_id} goes out on SIM 2`);
    await phone.stop();
  });

  test("with_delivery_report false reaches the phone: the message ends at sent, never delivered", async () => {
    const phone = await startPhone(key, "Report/phone");
    const quiet = await send(key, { message: "No report please", with_delivery_report: false, device_id: phone.deviceId });
    const control = await send(key, { message: "Report please", device_id: phone.deviceId });
    // The phone sends in order and reports a delivery the same time after each send, so once the
    // second is delivered the first would have been too.
    await waitForNotification(
      key,
      control.body.data.notification_id,
      "the control delivered",
      (n) => n.status === "delivered",
      phone.output,
    );
    const n = await notification(key, quiet.body.data.notification_id);
    expect(n).toMatchObject({ status: "sent", with_delivery_report: false });
    expect(phone.output()).toContain(`message ${n.provider_message_id} → Sent`);
    expect(phone.output()).not.toContain(`message ${n.provider_message_id} → Delivered`);
    await phone.stop();
  });

  test("priority 100 goes ahead of a batch held by the per-minute budget; an expired message fails and never reaches the phone", async () => {
    const phone = await startPhone(key, "Priority/phone");
    expect((await server.api("/v1/api/device/update", key, { device_id: phone.deviceId, send_limit_per_minute: 1 })).status).toBe(200);
    await awayFromMinuteEnd();
    const batch: number[] = [];
    for (const text of ["one", "two", "three"])
      batch.push((await send(key, { message: `Batch ${text}`, device_id: phone.deviceId })).body.data.notification_id);
    const expiring = (await send(key, { message: "Short-lived", ttl: 2, device_id: phone.deviceId })).body.data.notification_id;
    const code = (await send(key, { message: "Your code is 4321", priority: 100, device_id: phone.deviceId })).body.data.notification_id;
    const urgent = await waitForNotification(key, code, "the code delivered", (n) => n.status === "delivered", phone.output);
    expect(urgent.priority).toBe(100);
    expect(phone.output()).toContain(`message ${urgent.provider_message_id} goes out on SIM 1 (expedited)`);
    const gone = await waitForNotification(key, expiring, "the short-lived one expired", (n) => n.status === "failed", phone.output);
    expect(gone).toMatchObject({ error_code: "expired", cost: 0 });
    // Within the same minute the batch waits: Pigeon handed one of it within the budget, but the
    // phone, given the same limit of 1 a minute, counts the code it just sent (the app's
    // applyLimit counts every message taken up) and holds it; the other two wait for Pigeon's
    // next minute.
    // A phone quick to pull may take the batch's first before the code is even sent (a busy
    // machine between the sends): that one may be out, never the two behind it.
    const statuses = await Promise.all(batch.map(async (id) => (await notification(key, id)).status));
    expect(statuses.slice(1)).toEqual(["pending", "pending"]);
    expect(["pending", "sent", "delivered"]).toContain(statuses[0]);
    if (statuses[0] === "pending")
      await waitFor("the phone to hold the batch", () => phone.output().includes("limit 1 PerMinute reached"), { detail: phone.output });
    expect(phone.output()).not.toContain(gone.provider_message_id);
    await phone.stop();
  });
});

describe("a phone that comes back, and one that does not", () => {
  test("restarting the simulator with the same name and SIMs reuses its device", async () => {
    const first = await startPhone(key, "Returning/phone", ["--sims", "2"]);
    await first.stop();
    const again = await startPhone(key, "Returning/phone", ["--sims", "2"]);
    expect(again.deviceId).toBe(first.deviceId);
    const list = (await server.api("/v1/api/device/list?limit=100", key)).body.data.devices as { name: string }[];
    expect(list.filter((d) => d.name === "Returning/phone")).toHaveLength(1);
    // The old token no longer works, and the device carries messages again.
    const sent = await send(key, { message: "Welcome back", device_id: again.deviceId });
    await waitForNotification(
      key,
      sent.body.data.notification_id,
      "delivered through the returning phone",
      (n) => n.status === "delivered",
      again.output,
    );
    // Another SIM list is another phone.
    const other = await startPhone(key, "Returning/phone", ["--sims", "1"]);
    expect(other.deviceId).not.toBe(again.deviceId);
    await again.stop();
    await other.stop();
  });

  test("a stopped phone's waiting messages move to another online phone of the workspace", async () => {
    const gone = await startPhone(key, "Moving/gone");
    const stays = await startPhone(key, "Moving/stays");
    await gone.stop();
    await waitFor(
      "the stopped phone offline",
      async () => (await server.api(`/v1/api/device/${gone.deviceId}`, key)).body.data.online === false,
      {
        intervalMs: 500,
      },
    );
    // A scheduled send is accepted for an offline phone and waits for it.
    const sent = await send(key, { message: "Moved along", device_id: gone.deviceId, schedule_time: scheduleIn(2) });
    expect(sent.status).toBe(200);
    const n = await waitForNotification(
      key,
      sent.body.data.notification_id,
      "delivered by the other phone",
      (n) => n.status === "delivered",
      stays.output,
    );
    expect(n.device_id).toBe(stays.deviceId);
    const logs = (await server.api(`/v1/api/notification/${n.notification_id}`, key)).body.data.logs as { event: string; detail: string }[];
    expect(logs.map((l) => l.event)).toContain("reassigned");
    // Its first line names the phone it was stored for, kept before the move changed the row.
    expect(logs[0]).toMatchObject({ event: "scheduled", detail: expect.stringContaining(`via device ${gone.deviceId}`) });
    await stays.stop();
  });

  test("POST /api/device/:id/reassign moves waiting messages by hand, and says why it cannot", async () => {
    const from = await startPhone(key, "Manual/from");
    const to = await startPhone(key, "Manual/to");
    const later = await send(key, { message: "Tomorrow", device_id: from.deviceId, schedule_time: scheduleIn(3600) });
    const id = later.body.data.notification_id;

    const self = await server.api(`/v1/api/device/${from.deviceId}/reassign`, key, { to_device_id: from.deviceId });
    expect(self.status).toBe(400);
    expect(self.body).toMatchObject({ status_id: 400, data: { error_code: "invalid_device", field: "to_device_id" } });
    expect((await server.api(`/v1/api/device/999999/reassign`, key, {})).body.data.error_code).toBe("not_found");
    const bad = await server.api(`/v1/api/device/${from.deviceId}/reassign`, key, { to_device_id: "two" });
    expect(bad.status).toBe(400);

    const moved = await server.api(`/v1/api/device/${from.deviceId}/reassign`, key, { to_device_id: to.deviceId });
    expect(moved.status).toBe(200);
    expect(moved.body.data).toEqual({
      device_id: from.deviceId,
      to_device_id: to.deviceId,
      moved: 1,
      notification_ids: [id],
      pulled_moved: 0,
      pulled_left: 0,
      warning: null,
    });
    expect((await notification(key, id)).device_id).toBe(to.deviceId);

    // To an offline phone: 409.
    await from.stop();
    await waitFor(
      "the stopped phone offline",
      async () => (await server.api(`/v1/api/device/${from.deviceId}`, key)).body.data.online === false,
      {
        intervalMs: 500,
      },
    );
    const offline = await server.api(`/v1/api/device/${to.deviceId}/reassign`, key, { to_device_id: from.deviceId });
    expect(offline.status).toBe(409);
    expect(offline.body.data.error_code).toBe("no_online_device");
    await server.api(`/v1/api/notification/cancel`, key, { notification_id: id });
    await to.stop();
  });

  test("a message the phone downloaded but never confirmed stays with it when it goes quiet: it comes back and sends it, no other phone does", async () => {
    // --hold: the phone keeps what it downloads in its own queue for a while before taking it up.
    const away = await startPhone(key, "Pulled/away", ["--hold", "1500"]);
    const other = await startPhone(key, "Pulled/other");
    const sent = await send(key, { message: "Only once, please", device_id: away.deviceId });
    const id = sent.body.data.notification_id;
    await waitFor("the phone downloaded it", () => away.output().includes("waiting in the phone's queue"), {
      timeoutMs: 10_000,
      detail: away.output,
    });
    // Its connection goes: nothing it does reaches Pigeon, but its radio still sends what it holds.
    away.proc.kill("SIGUSR1");
    await waitFor(
      "the quiet phone offline",
      async () => (await server.api(`/v1/api/device/${away.deviceId}`, key)).body.data.online === false,
      { intervalMs: 500 },
    );
    await waitFor("the phone sent it, unheard", () => away.output().includes("→ Sent"), { timeoutMs: 10_000, detail: away.output });
    // Several re-homing ticks (one a second) pass with another phone online.
    await Bun.sleep(3_000);
    expect(await notification(key, id)).toMatchObject({ status: "pending", device_id: away.deviceId });
    away.proc.kill("SIGUSR2");
    const n = await waitForNotification(
      key,
      id,
      "delivered, reported by the phone that sent it",
      (n) => n.status === "delivered",
      away.output,
    );
    expect(n.device_id).toBe(away.deviceId);
    expect(n.logs.map((l: { event: string }) => l.event)).not.toContain("reassigned");
    expect(other.output()).not.toContain("goes out");
    await away.stop();
    await other.stop();
  });

  test("reassign moves downloaded messages only when asked, and then warns that they may arrive twice", async () => {
    const from = await startPhone(key, "Pulled/from", ["--hold", "60000"]);
    const to = await startPhone(key, "Pulled/to");
    const id = (await send(key, { message: "Downloaded already", device_id: from.deviceId })).body.data.notification_id;
    await waitFor("the phone downloaded it", () => from.output().includes("waiting in the phone's queue"), {
      timeoutMs: 10_000,
      detail: from.output,
    });
    const kept = await server.api(`/v1/api/device/${from.deviceId}/reassign`, key, { to_device_id: to.deviceId });
    expect(kept.body.data).toEqual({
      device_id: from.deviceId,
      to_device_id: to.deviceId,
      moved: 0,
      notification_ids: [],
      pulled_moved: 0,
      pulled_left: 1,
      warning: null,
    });
    expect(kept.body.message).toContain("include_pulled");
    const moved = await server.api(`/v1/api/device/${from.deviceId}/reassign`, key, { to_device_id: to.deviceId, include_pulled: true });
    expect(moved.status).toBe(200);
    expect(moved.body.data).toMatchObject({ moved: 1, notification_ids: [id], pulled_moved: 1, pulled_left: 0 });
    expect(moved.body.data.warning).toContain("twice");
    const n = await waitForNotification(key, id, "delivered by the phone it moved to", (n) => n.status === "delivered", to.output);
    expect(n.device_id).toBe(to.deviceId);
    await from.stop();
    await to.stop();
  });

  test("with no other phone online, a message waiting on an offline phone fails with device_offline once its ttl passes", async () => {
    // Every phone of the workspace is stopped by now; this one goes too.
    const phone = await startPhone(key, "Lonely/phone");
    await phone.stop();
    await waitFor(
      "every phone offline",
      async () => {
        const list = (await server.api("/v1/api/device/list?limit=100", key)).body.data.devices as { online: boolean }[];
        return list.every((d) => !d.online);
      },
      { intervalMs: 500 },
    );
    const sent = await send(key, { message: "Nobody home", device_id: phone.deviceId, schedule_time: scheduleIn(1), ttl: 1 });
    expect(sent.status).toBe(200);
    const n = await waitForNotification(key, sent.body.data.notification_id, "failed as device_offline", (n) => n.status === "failed");
    expect(n).toMatchObject({ error_code: "device_offline", device_id: phone.deviceId });
  });
});
