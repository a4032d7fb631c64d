// End to end on the compiled binary with `pigeon simulate-phone`: what a paired phone reports on
// its own. A received MMS lands in the sender's thread once, its picture served back byte for byte (and again from a restored backup), its health pings move health_score and
// announce device.unhealthy once, and an inbox refresh brings back an SMS whose webhook was never
// posted without storing twice the one Pigeon already had.
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { waitFor } from "../helpers/api";
import { isolatedBinary, runCommand, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { startSimulator } from "../helpers/simulator";
import { MMS_PICTURE_PNG } from "../../src/cli/simulate-phone/reports";

/** The picture the simulated phone sends with its MMS. */
const PNG = Buffer.from(MMS_PICTURE_PNG, "base64");

const bin = isolatedBinary();
const dataDir = tempDir();
let server: RunningServer;
let key: Credentials;
let serverUrl: string;
let pairingToken: string;
const phones: Subprocess[] = [];
const knownIds = new Set<number>();

beforeAll(async () => {
  server = await startServer(bin, { PIGEON_DATA_DIR: dataDir });
  key = server.initialKey!;
  // The tests poll health and threads while phones report: lift the key's per-minute limit.
  const plan = await runCommand(bin, ["plans", "set", "--code", "owner", "--name", "Owner", "--per-minute", "100000"], {
    PIGEON_DATA_DIR: dataDir,
  });
  expect(plan.code).toBe(0);
  const pairing = await (await server.fetch("/v1/api/device/pairing", { key })).json();
  serverUrl = pairing.data.server_url;
  pairingToken = pairing.data.pairing_token;
});

afterAll(async () => {
  for (const proc of phones) proc.kill("SIGKILL");
  await server?.stop("SIGKILL");
});

let phoneCount = 0;

/**
 * Starts `pigeon simulate-phone` and waits until it is paired and listening. Each is a phone of its
 * own: a name and SIM list seen before would be that phone returning to its device.
 */
async function startPhone(args: string[]) {
  const name = `Reports/phone-${++phoneCount}`;
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
  phones.push(proc);
  const list = (await (await server.fetch("/v1/api/device/list?limit=100", { key })).json()).data.devices as { device_id: number }[];
  const deviceId = list.map((d) => d.device_id).find((id) => !knownIds.has(id))!;
  knownIds.add(deviceId);
  return { proc, output, deviceId, name };
}

/** The messages of the thread with `peer`, oldest first. */
async function threadWith(peer: string) {
  const threads = (await (await server.fetch("/v1/api/thread/list?limit=100", { key })).json()).data.threads;
  const thread = threads.find((t: { peer: string }) => t.peer === peer);
  if (!thread) return [];
  const messages = (await (await server.fetch(`/v1/api/thread/${thread.thread_id}/messages?limit=100`, { key })).json()).data.messages;
  return messages.reverse();
}

/** Pigeon's events of a type, read from its outbox (what its webhooks deliver to customers). */
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

const health = async (deviceId: number) => (await server.api(`/v1/api/device/${deviceId}/health`, key)).body.data;
const refresh = (deviceId: number, body: unknown) =>
  server
    .fetch(`/v1/api/device/${deviceId}/inbox/refresh`, { method: "POST", key, body: JSON.stringify(body) })
    .then(async (r) => ({ status: r.status, body: await r.json() }));
const lastHour = () => ({ since: new Date(Date.now() - 3_600_000).toISOString(), until: new Date(Date.now() + 60_000).toISOString() });

describe("what a paired phone reports", () => {
  test("an MMS whose notification the phone posts twice lands in the sender's thread once, completed by its download", async () => {
    // Apps before 1.65.2 post a repeated carrier notification again, with a new webhook id.
    const phone = await startPhone(["--app-version", "1.65.1", "--mms", "Holiday photo", "--mms-pushes", "2", "--from", "+14155550170"]);
    await waitFor("the download", () => phone.output().includes("downloaded MMS from +14155550170 posted"), { detail: phone.output });
    expect(phone.output().match(/received MMS from \+14155550170 posted/g)).toHaveLength(2);
    const messages = await threadWith("+14155550170");
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      direction: "inbound",
      body: "Holiday photo",
      mms: {
        transaction_id: expect.stringMatching(/^T/),
        subject: "Holiday photo",
        size: 24576,
        downloaded: true,
        attachments: [{ part_id: 1, content_type: "image/png", name: "picture.png", size: PNG.length }],
      },
      attachments: [{ part_id: 1, content_type: "image/png", served_as: "image/png", name: "picture.png", size: PNG.length }],
      attachments_dropped: [],
    });
    // The picture the phone sent, served back by the binary byte for byte, as a picture.
    const served = await server.fetch(messages[0].attachments[0].url, { key });
    expect({
      status: served.status,
      type: served.headers.get("content-type"),
      nosniff: served.headers.get("x-content-type-options"),
    }).toEqual({
      status: 200,
      type: "image/png",
      nosniff: "nosniff",
    });
    expect(Buffer.from(await served.arrayBuffer()).equals(PNG)).toBe(true);
    const received = eventsOf("message.received").filter((e) => e.from === "+14155550170");
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ body: "Holiday photo", mms: { subject: "Holiday photo", size: 24576 } });
    phone.proc.kill("SIGTERM");

    // A backup taken beside the running server carries the picture: restored on a new disk (with
    // the same key file), a server there serves the same bytes under the same API key.
    const backup = join(tempDir(), "with-picture.db");
    expect((await runCommand(bin, ["backup", "--out", backup], { PIGEON_DATA_DIR: dataDir })).code).toBe(0);
    const restoredDir = tempDir();
    copyFileSync(join(dataDir, "pigeon.key"), join(restoredDir, "pigeon.key"));
    expect((await runCommand(bin, ["restore", "--from", backup], { PIGEON_DATA_DIR: restoredDir })).code).toBe(0);
    const restored = await startServer(bin, { PIGEON_DATA_DIR: restoredDir });
    try {
      const again = await restored.fetch(messages[0].attachments[0].url, { key });
      expect({ status: again.status, type: again.headers.get("content-type") }).toEqual({ status: 200, type: "image/png" });
      expect(Buffer.from(await again.arrayBuffer()).equals(PNG)).toBe(true);
    } finally {
      await restored.stop("SIGTERM");
    }
  });

  test("a low-battery ping lowers health_score and announces device.unhealthy once, however many pings follow", async () => {
    const good = await startPhone(["--ping", "1", "--battery", "80"]);
    const low = await startPhone(["--ping", "1", "--battery", "9"]);
    const reported = (deviceId: number) =>
      waitFor(
        "a health report",
        async () => {
          const h = await health(deviceId);
          return h.reported ? h : null;
        },
        { detail: low.output },
      );
    expect(await reported(good.deviceId)).toMatchObject({ health_score: 100, reported: { battery_level: 80, unhealthy: [] } });
    const first = await reported(low.deviceId);
    expect(first).toMatchObject({
      health_score: 50,
      reported: { battery_level: 9, charging: false, connected: true, status: "fail", unhealthy: ["low_battery"] },
    });
    // Two more pings after the one that opened the episode.
    let seen = first.reported.reported_at;
    for (let i = 0; i < 2; i++) {
      seen = await waitFor("another ping", async () => {
        const at = (await health(low.deviceId)).reported.reported_at;
        return at !== seen && at;
      });
    }
    const unhealthy = eventsOf("device.unhealthy");
    expect(unhealthy.filter((e) => e.device_id === low.deviceId)).toEqual([
      {
        device_id: low.deviceId,
        name: low.name,
        kind: "sms",
        battery_level: 9,
        charging: false,
        connected: true,
        reasons: ["low_battery"],
      },
    ]);
    expect(unhealthy.filter((e) => e.device_id === good.deviceId)).toEqual([]);
    good.proc.kill("SIGTERM");
    low.proc.kill("SIGTERM");
  });

  test("a phone on the charger at 9 % is not unhealthy; one without a connection is", async () => {
    const charging = await startPhone(["--ping", "1", "--battery", "9", "--charging"]);
    const offline = await startPhone(["--ping", "1", "--no-connection"]);
    const reported = (deviceId: number) =>
      waitFor("a health report", async () => {
        const h = await health(deviceId);
        return h.reported ? h : null;
      });
    expect(await reported(charging.deviceId)).toMatchObject({
      health_score: 100,
      reported: { battery_level: 9, charging: true, plugged: true, unhealthy: [] },
    });
    expect(await reported(offline.deviceId)).toMatchObject({
      health_score: 50,
      reported: { connected: false, cellular: "none", unhealthy: ["no_connection"] },
    });
    expect(
      eventsOf("device.unhealthy")
        .filter((e) => e.device_id === offline.deviceId)
        .map((e) => e.reasons),
    ).toEqual([["no_connection"]]);
    expect(eventsOf("device.unhealthy").filter((e) => e.device_id === charging.deviceId)).toEqual([]);
    charging.proc.kill("SIGTERM");
    offline.proc.kill("SIGTERM");
  });

  test("an inbox refresh brings back an SMS that was never posted, once, and does not store again the one Pigeon had", async () => {
    // Before 1.65.2 the app re-posts the whole period, including the SMS it posted live.
    const phone = await startPhone([
      "--app-version",
      "1.65.1",
      "--inbound",
      "Seen live",
      "--missed",
      "Lost on the way",
      "--from",
      "+14155550180",
    ]);
    await waitFor("the live SMS", () => phone.output().includes("received SMS from +14155550180 posted"), { detail: phone.output });
    expect((await threadWith("+14155550180")).map((m: { body: string }) => m.body)).toEqual(["Seen live"]);
    const period = lastHour();
    const asked = await refresh(phone.deviceId, period);
    expect(asked.status).toBe(202);
    expect(asked.body).toMatchObject({
      status_id: 202,
      message: "Inbox refresh requested",
      data: {
        device_id: phone.deviceId,
        since: period.since,
        until: period.until,
        message_types: ["SMS"],
        requested_at: expect.any(String),
      },
    });
    await waitFor("the re-posts", () => phone.output().includes("inbox export: 2 message(s) processed again"), { detail: phone.output });
    const messages = await threadWith("+14155550180");
    expect(messages.map((m: { body: string }) => m.body)).toEqual(["Lost on the way", "Seen live"]);
    expect(
      eventsOf("message.received")
        .filter((e) => e.from === "+14155550180")
        .map((e) => e.body),
    ).toEqual(["Seen live", "Lost on the way"]);
    phone.proc.kill("SIGTERM");
  });

  test("inbox refresh: 400 for a bad period, 404 for an unknown device, 409 for an app too old or a phone not connected", async () => {
    const phone = await startPhone(["--app-version", "1.27.0"]);
    const now = Date.now();
    const at = (ms: number) => new Date(ms).toISOString();
    const bad = [
      [{ since: "yesterday", until: at(now) }, "since"],
      [{ since: at(now), until: "2026-13-45T99:00:00Z" }, "until"],
      [{ since: "2026-01-15T00:00:00", until: at(now) }, "since"],
      [{ since: at(now), until: at(now - 1000) }, "until"],
      [{ since: at(now), until: at(now) }, "until"],
      [{ since: at(now - 32 * 86_400_000), until: at(now) }, "until"],
    ] as const;
    for (const [body, field] of bad) {
      const r = await refresh(phone.deviceId, body);
      expect({ body, status: r.status, statusId: r.body.status_id, code: r.body.data?.error_code, field: r.body.data?.field }).toEqual({
        body,
        status: 400,
        statusId: 400,
        code: "validation_error",
        field,
      });
    }
    const missing = await refresh(phone.deviceId, { since: at(now) });
    expect([missing.status, missing.body.data.error_code]).toEqual([400, "validation_error"]);
    const unknown = await refresh(999_999, lastHour());
    expect([unknown.status, unknown.body.data.error_code]).toEqual([404, "not_found"]);
    const old = await refresh(phone.deviceId, lastHour());
    expect([old.status, old.body.data.error_code]).toEqual([409, "app_too_old"]);
    phone.proc.kill("SIGKILL");
    await phone.proc.exited;
    const current = await startPhone([]);
    current.proc.kill("SIGKILL");
    await current.proc.exited;
    const gone = await waitFor("the stream to close", async () => {
      const r = await refresh(current.deviceId, lastHour());
      return r.status === 409 && r;
    });
    expect(gone.body.data.error_code).toBe("phone_not_connected");
  });
});
