// Safe sending end to end on the compiled binary, with `pigeon simulate-phone` as the paired phone,
// a local fake of the cloud provider and of the chat-app platform: a customer texts "stop" → the
// next send is 403 and a scheduled one fails; "START" → sends go again, each step audited and
// announced; quiet hours hold a send and release it; a phone taken offline fails over to the cloud
// number, debited once; "not a chat-app user" from the platform → the message goes by SMS; and the
// preview agrees with what the send then does.
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { waitFor } from "../helpers/api";
import { isolatedBinary, runCommand, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { bakeryWaba, startFakeChatApp, type FakeChatApp } from "../helpers/fake-chatapp";
import { startFakeCloud, type FakeCloud } from "../helpers/fake-cloud";
import { startSimulator } from "../helpers/simulator";
import { RECIPIENT, ABROAD, CLOUD_NUMBER } from "../helpers/numbers";

const SECRET = "safe-app-secret";
const ADA = RECIPIENT;
const CAROL = "+14155550188";
const bin = isolatedBinary();
const dataDir = tempDir();
let server: RunningServer;
let key: Credentials;
let cloud: FakeCloud;
let chat: FakeChatApp;
let cloudDevice: number;
let serverUrl: string;
let pairingToken: string;
const phones: Subprocess[] = [];

beforeAll(async () => {
  cloud = await startFakeCloud();
  chat = startFakeChatApp({ appSecret: SECRET, autoStatuses: ["sent", "delivered"], wabas: [bakeryWaba()] });
  const env = { PIGEON_DATA_DIR: dataDir };
  expect((await runCommand(bin, ["plans", "set", "--code", "owner", "--name", "Owner", "--per-minute", "100000"], env)).code).toBe(0);
  server = await startServer(bin, {
    ...env,
    PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1",
    // A phone counts as offline after 2 s of silence and is given up on 1 s later.
    PIGEON_OFFLINE_AFTER: "2",
    PIGEON_FAILOVER_GRACE: "1",
    PIGEON_CHATAPP_GRAPH_URL: chat.url,
    PIGEON_CHATAPP_APP_SECRET: SECRET,
    PIGEON_CHATAPP_VERIFY_TOKEN: "safe-verify",
  });
  key = server.initialKey!;
  chat.setWebhookUrl(`${server.url}/v1/webhooks/chatapp`);
  expect((await runCommand(bin, ["credits", "add", "--workspace", "1", "--amount", "100"], env)).code).toBe(0);
  const reg = await api("/v1/api/device/batch/register", {
    devices: [
      {
        name: "Cloud number",
        kind: "cloud",
        cloud: { account_sid: cloud.accountSid, auth_token: cloud.authToken, from_number: CLOUD_NUMBER, base_url: cloud.url },
      },
    ],
  });
  expect(reg.status).toBe(200);
  cloudDevice = reg.body.data.devices[0].device_id;
  const pairing = (await api("/v1/api/device/pairing")).body.data;
  serverUrl = pairing.server_url;
  pairingToken = pairing.pairing_token;
});

afterAll(async () => {
  for (const proc of phones) proc.kill("SIGKILL");
  await server?.stop("SIGKILL");
  cloud?.stop();
  chat?.stop();
});

const api = (path: string, body?: unknown) => server.api(path, key, body);
const notification = async (id: number) => (await api(`/v1/api/notification/${id}`)).body.data;
const balance = async () => (await api("/v1/api/stats/credits")).body.data.balance as number;

/** A simulated phone under `name` (the same name and SIMs come back as the same device). */
async function startPhone(name: string, args: string[] = []) {
  const phone = await startSimulator(bin, ["--server", serverUrl, "--token", pairingToken, "--delay", "50", "--name", name, ...args]);
  phones.push(phone.proc);
  const devices = (await api("/v1/api/device/list?limit=100")).body.data.devices as { device_id: number; name: string }[];
  return { ...phone, deviceId: devices.find((d) => d.name === name)!.device_id };
}

/** Pigeon's events of a type, from its outbox (what webhooks deliver). */
function eventsOf(type: string): Record<string, unknown>[] {
  const db = new Database(join(dataDir, "pigeon.db"), { readonly: true });
  try {
    return db
      .query<{ data: string }, [string]>("SELECT data FROM event WHERE type = ? ORDER BY created_at")
      .all(type)
      .map((r) => JSON.parse(r.data));
  } finally {
    db.close();
  }
}

const settled = (id: number, statuses = ["sent", "delivered"]) =>
  waitFor(
    `notification ${id} to be ${statuses.join(" or ")}`,
    async () => {
      const n = await notification(id);
      return statuses.includes(n.status) ? n : null;
    },
    { timeoutMs: 20_000, intervalMs: 100 },
  );

describe("opt-out by keyword from a real phone's app", () => {
  test("'stop' → 403 and the scheduled message fails; 'START' → sends go again; each step audited and announced", async () => {
    const scheduled = await api("/v1/api/sms/send", {
      recipient_contact: ADA,
      message: "See you tomorrow",
      device_id: cloudDevice,
      schedule_time: new Date(Date.now() + 3_600_000).toISOString().slice(0, 19).replace("T", " "),
    });
    expect(scheduled.status).toBe(200);
    const before = await balance();

    const first = await startPhone("Front desk", ["--inbound", "stop", "--from", ADA]);
    const out = await waitFor(
      "the opt-out",
      async () => (await api(`/v1/api/optout/list?phone=${encodeURIComponent(ADA)}`)).body.data.entries[0],
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    expect(out).toMatchObject({ phone: ADA, action: "opted_out", source: "keyword", channel: "sms", device_id: first.deviceId });
    expect(eventsOf("contact.opted_out")).toEqual([expect.objectContaining({ phone: ADA, source: "keyword", message_id: out.message_id })]);

    // The confirmation goes out through the phone the STOP came in on.
    const reply = await waitFor(
      "the confirmation",
      async () => {
        const list = (await api(`/v1/api/notification/list?limit=100`)).body.data.notifications as {
          notification_id: number;
          recipient: string;
          message: string;
        }[];
        return list.find((n) => n.recipient === ADA && n.message.includes("Reply START"));
      },
      { intervalMs: 100 },
    );
    expect(await settled(reply.notification_id)).toMatchObject({ device_id: first.deviceId });

    const failed = await notification(scheduled.body.data.notification_id);
    expect(failed).toMatchObject({ status: "failed", error_code: "recipient_opted_out" });
    expect(await balance()).toBe(before + 1);

    const refused = await api("/v1/api/sms/send", { recipient_contact: ADA, message: "One more thing" });
    expect(refused.status).toBe(403);
    expect(refused.body.data).toMatchObject({ error_code: "recipient_opted_out", source: "keyword", opted_out_at: expect.any(String) });

    first.proc.kill("SIGKILL");
    await first.proc.exited;
    const again = await startPhone("Front desk", ["--inbound", "START", "--from", ADA]);
    expect(again.deviceId).toBe(first.deviceId);
    await waitFor(
      "the opt-in",
      async () => (await api(`/v1/api/optout/list?phone=${encodeURIComponent(ADA)}`)).body.data.entries[0]?.action === "opted_in",
      { timeoutMs: 20_000, intervalMs: 100, detail: again.output },
    );
    const audit = (await api(`/v1/api/optout/list?phone=${encodeURIComponent(ADA)}`)).body.data.entries;
    expect(audit.map((e: { action: string; source: string }) => `${e.action}/${e.source}`)).toEqual([
      "opted_in/keyword",
      "opted_out/keyword",
    ]);
    expect(eventsOf("contact.opted_in")).toEqual([expect.objectContaining({ phone: ADA, source: "keyword" })]);
    expect((await api("/v1/api/optout/list?active=true")).body.data.entries).toEqual([]);

    const welcome = await api("/v1/api/sms/send", { recipient_contact: ADA, message: "Welcome back", device_id: again.deviceId });
    expect(welcome.status).toBe(200);
    await settled(welcome.body.data.notification_id);
    again.proc.kill("SIGKILL");
  }, 60_000);
});

describe("quiet hours", () => {
  test("a send inside the recipient's quiet hours waits for their end, then the phone sends it", async () => {
    const phone = await startPhone("Quiet phone");
    expect((await api("/v1/api/contact/create", { name: "Carol", phone: CAROL, timezone: "UTC" })).status).toBe(200);
    // Quiet hours that began three hours ago and end at the next whole minute (at least 5 s away), in UTC.
    const endMinute = Math.floor((Date.now() + 5_000) / 60_000) + 1;
    const hhmm = (minute: number) => new Date((((minute % 1440) + 1440) % 1440) * 60_000).toISOString().slice(11, 16);
    expect((await api("/v1/api/workspace/settings", { quiet_hours: { start: hhmm(endMinute - 180), end: hhmm(endMinute) } })).status).toBe(
      200,
    );
    try {
      const release = new Date(endMinute * 60_000).toISOString();
      const held = await api("/v1/api/sms/send", { recipient_contact: CAROL, message: "Weekly offers", device_id: phone.deviceId });
      expect(held.body.data).toMatchObject({ scheduled_at: release, quiet_hours: { until: release, timezone: "UTC" } });
      expect((await notification(held.body.data.notification_id)).status).toBe("pending");
      const urgent = await api("/v1/api/sms/send", {
        recipient_contact: CAROL,
        message: "Your code is 4321",
        device_id: phone.deviceId,
        priority: 100,
      });
      expect(urgent.body.data.scheduled_for).toBeNull();

      const sent = await waitFor(
        "the held message to go",
        async () => {
          const n = await notification(held.body.data.notification_id);
          return n.status === "sent" || n.status === "delivered" ? n : null;
        },
        { timeoutMs: 90_000, intervalMs: 250 },
      );
      expect(Date.parse(sent.sent_at)).toBeGreaterThanOrEqual(Date.parse(release));
    } finally {
      await api("/v1/api/workspace/settings", { quiet_hours: null });
      phone.proc.kill("SIGKILL");
    }
  }, 120_000);
});

describe("failover", () => {
  test("a phone taken offline: the send goes by the cloud number, and a message left waiting on it moves there; each debited once", async () => {
    const phone = await startPhone("Failover phone");
    phone.proc.kill("SIGKILL");
    await phone.proc.exited;
    await waitFor(
      "the phone to count as offline",
      async () => (await api(`/v1/api/device/${phone.deviceId}`)).body.data.online === false || null,
      { timeoutMs: 10_000, intervalMs: 200 },
    );
    const before = await balance();
    const creates = cloud.creates.length;
    const sent = await api("/v1/api/sms/send", {
      recipient_contact: CAROL,
      message: "Your parcel is at the desk",
      device_id: phone.deviceId,
      routes: ["phone", "cloud"],
    });
    expect(sent.status).toBe(200);
    expect(sent.body.data).toMatchObject({
      route: "cloud",
      device_id: cloudDevice,
      skipped_routes: [{ route: "phone", error_code: "device_offline" }],
    });
    expect(await settled(sent.body.data.notification_id)).toMatchObject({ route: "cloud" });
    expect(cloud.creates.slice(creates).map((c) => c.Body)).toEqual(["Your parcel is at the desk"]);
    expect(await balance()).toBe(before - 1);

    // The phone comes back and is cut off again with a message just handed to it.
    const back = await startPhone("Failover phone");
    expect(back.deviceId).toBe(phone.deviceId);
    back.proc.kill("SIGKILL");
    const waiting = await api("/v1/api/sms/send", {
      recipient_contact: CAROL,
      message: "Second parcel",
      device_id: back.deviceId,
      routes: ["phone", "cloud"],
    });
    expect(waiting.status).toBe(200);
    expect(waiting.body.data).toMatchObject({ route: "sms", device_id: back.deviceId });
    const moved = await settled(waiting.body.data.notification_id);
    expect(moved).toMatchObject({ route: "cloud", device_id: cloudDevice });
    expect(moved.logs.map((l: { event: string }) => l.event)).toContain("failover");
    expect(cloud.creates.slice(creates).map((c) => c.Body)).toEqual(["Your parcel is at the desk", "Second parcel"]);
    expect(await balance()).toBe(before - 2);
  }, 60_000);

  test("'not a chat-app user' from the platform: the message goes by SMS through the phone", async () => {
    expect((await api("/v1/api/chatapp/connect", { access_token: "good-token" })).status).toBe(200);
    const phone = await startPhone("Fallback phone");
    const template = (await api("/v1/api/template/list?channel=chatapp")).body.data.templates.find(
      (t: { name: string }) => t.name === "order_ready",
    );
    chat.failNext(131026, { async: true });
    const sent = await api("/v1/api/chatapp/send", {
      recipient_contact: "+14155550199",
      template_id: template.template_id,
      variables: ["Dan", "A-9"],
      routes: ["chatapp", "phone"],
    });
    expect(sent.status).toBe(200);
    expect(sent.body.data.route).toBe("chatapp");
    const n = await waitFor(
      "the message to go by SMS",
      async () => {
        const x = await notification(sent.body.data.notification_id);
        return x.route === "sms" && (x.status === "sent" || x.status === "delivered") ? x : null;
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    expect(n).toMatchObject({ route: "sms", delivery_type: "sms", device_id: phone.deviceId });
    const failover = n.logs.find((l: { event: string }) => l.event === "failover");
    expect(failover).toMatchObject({ error_code: "131026" });
    expect(n.message).toContain("Dan");
    // The conversation shows it once, in the SMS thread, whether or not it had reached the chat-app thread before it moved.
    const threads = (await api("/v1/api/thread/list")).body.data.threads.filter((t: { peer: string }) => t.peer === "+14155550199");
    const holding: string[] = [];
    for (const t of threads) {
      const messages = (await api(`/v1/api/thread/${t.thread_id}/messages`)).body.data.messages as { notification_id: number | null }[];
      for (const m of messages) if (m.notification_id === n.notification_id) holding.push(t.channel);
    }
    expect(holding).toEqual(["sms"]);
    phone.proc.kill("SIGKILL");
  }, 60_000);
});

test("STOP on the chat-app channel: opted out, and confirmed on the chat-app number inside the window the STOP opened", async () => {
  const sent = chat.sent.length;
  const inbound = await chat.sendInbound({ phoneNumberId: "777", from: "14155550166", text: "Stop", name: "Eve" });
  expect(inbound.response.status).toBe(200);
  const entry = await waitFor("the opt-out", async () => (await api("/v1/api/optout/list?phone=%2B14155550166")).body.data.entries[0], {
    intervalMs: 100,
  });
  expect(entry).toMatchObject({ action: "opted_out", source: "keyword", channel: "chatapp" });
  const confirmation = await waitFor(
    "the confirmation on the platform",
    async () => chat.sent.slice(sent).find((m) => m.to === "+14155550166"),
    { intervalMs: 100 },
  );
  expect(confirmation.type).toBe("text");
  expect(JSON.stringify(confirmation.body)).toContain("Reply START");
  const refused = await api("/v1/api/chatapp/send", { recipient_contact: "+14155550166", message: "Hello?" });
  expect(refused.status).toBe(403);
  expect(refused.body.data.error_code).toBe("recipient_opted_out");
});

test("the preview agrees with what the send then does", async () => {
  const body = { recipient_contact: ABROAD, message: "Café ☕ opens at 8", routes: ["cloud", "phone"] };
  const preview = (await api("/v1/api/sms/preview", body)).body.data;
  expect(preview).toMatchObject({ would: "send", encoding: "UCS-2", ucs2_characters: ["☕"], route: "cloud", cost: 1, error: null });
  const before = await balance();
  const sent = (await api("/v1/api/sms/send", body)).body.data;
  const n = await notification(sent.notification_id);
  expect({ route: n.route, device_id: n.device_id, segments: n.segments, cost: n.cost, message: n.message }).toEqual({
    route: preview.route,
    device_id: preview.device_id,
    segments: preview.segments,
    cost: preview.cost,
    message: preview.message,
  });
  expect(await balance()).toBe(before - preview.cost);

  expect((await api("/v1/api/optout/add", { phone: ABROAD })).status).toBe(200);
  const refusedPreview = (await api("/v1/api/sms/preview", body)).body.data;
  const refusedSend = await api("/v1/api/sms/send", body);
  expect(refusedSend.status).toBe(403);
  expect(refusedPreview).toMatchObject({
    would: "refuse",
    error: { status_id: 403, error_code: refusedSend.body.data.error_code, opted_out_at: refusedSend.body.data.opted_out_at },
  });
});
