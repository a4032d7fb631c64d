// Shared set-up for the crash tests: the compiled binary on a fresh data directory, a plan and
// credits large enough not to get in the way, and one cloud number pointing at a local fake
// provider. Every start allows loopback provider URLs, as the tests' fakes live on 127.0.0.1.
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { expect } from "bun:test";
import { isolatedBinary, runCommand, startServer, tempDir, type Credentials, type RunningServer } from "./binary";
import type { FakeCloud } from "./fake-cloud";
import { RECIPIENT, CLOUD_NUMBER } from "./numbers";

export const TO = RECIPIENT;

export interface CrashRig {
  bin: string;
  dataDir: string;
  env: Record<string, string>;
  key: Credentials;
  start(): Promise<RunningServer>;
}

export async function crashRig(
  fake: FakeCloud | null,
  extraEnv: Record<string, string> = {},
): Promise<{ rig: CrashRig; server: RunningServer }> {
  const bin = isolatedBinary();
  const dataDir = tempDir();
  const env = { PIGEON_DATA_DIR: dataDir, PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1", ...extraEnv };
  let server = await startServer(bin, env);
  const key = server.initialKey!;
  expect(await server.stop("SIGTERM")).toBe(0);
  expect(
    (await runCommand(bin, ["plans", "set", "--code", "owner", "--name", "Owner", "--per-minute", "100000", "--per-day", "1000000"], env))
      .code,
  ).toBe(0);
  expect((await runCommand(bin, ["credits", "add", "--workspace", "1", "--amount", "100000"], env)).code).toBe(0);
  const rig: CrashRig = { bin, dataDir, env, key, start: () => startServer(bin, env) };
  server = await rig.start();
  if (fake) await registerCloudNumber(server, key, fake);
  return { rig, server };
}

/** A cloud number named "cloud" whose provider is `fake`, paced at 6,000 a minute; its device. */
export async function registerCloudNumber(server: RunningServer, key: Credentials, fake: FakeCloud) {
  const reg = await server.api("/v1/api/device/batch/register", key, {
    devices: [
      {
        name: "cloud",
        kind: "cloud",
        send_limit_per_minute: 6000,
        cloud: { account_sid: fake.accountSid, auth_token: fake.authToken, from_number: CLOUD_NUMBER, base_url: fake.url },
      },
    ],
  });
  expect(reg.status).toBe(200);
  return reg.body.data.devices[0] as { device_id: number };
}

export async function json(res: Response) {
  return (await res.json()) as { status_id: number; data: any };
}

/** Sends a bulk of messages to one recipient; returns the notification ids in order. */
export async function sendBulk(server: RunningServer, key: Credentials, bodies: string[], to = TO): Promise<number[]> {
  const res = await server.fetch("/v1/api/sms/send/bulk", {
    method: "POST",
    key,
    body: JSON.stringify({ messages: bodies.map((message) => ({ recipient_contact: to, message })) }),
  });
  const data = (await json(res)).data;
  expect(data.accepted).toBe(bodies.length);
  return data.results.map((r: { notification_id: number }) => r.notification_id);
}

/** Reads the data directory's database directly (the server is stopped or killed). */
export function readDb<T>(dataDir: string, fn: (db: Database) => T): T {
  const db = new Database(join(dataDir, "pigeon.db"));
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** Waits until nothing is pending any more; returns how many still are at the deadline. */
export async function waitSettled(server: RunningServer, key: Credentials, ms: number): Promise<number> {
  const until = Date.now() + ms;
  let pending = -1;
  while (Date.now() < until) {
    const list = await json(await server.fetch("/v1/api/notification/list?status=pending&limit=1", { key }));
    pending = list.data.pagination.total;
    if (pending === 0) return 0;
    await Bun.sleep(200);
  }
  return pending;
}
