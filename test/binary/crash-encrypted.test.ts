// SIGKILL the compiled binary while it accepts encrypted bulk sends for a simulated phone that
// decrypts them (`simulate-phone --passphrase`), restart it on the same port, and check: every
// acknowledged bulk is stored whole, with its ciphertext as given, and delivered; a bulk cut off
// by the kill is stored whole or not at all; and the phone's radio sent no text twice.
import { afterAll, expect, test } from "bun:test";
import type { RunningServer } from "../helpers/binary";
import { waitFor } from "../helpers/api";
import { appEncrypt } from "../helpers/app-encryption";
import { crashRig, json, waitSettled } from "../helpers/crash-setup";
import { startSimulator, type RunningPhone } from "../helpers/simulator";
import { RECIPIENT } from "../helpers/numbers";

const PASS = "crash passphrase";
const BULKS = 16;
const ITEMS = 20;
let server: RunningServer | null = null;
let phone: RunningPhone | null = null;

afterAll(async () => {
  phone?.proc.kill("SIGKILL");
  await server?.stop("SIGKILL");
});

/** A port free now, so the restarted server answers where the phone was paired. */
function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

test("a SIGKILL while encrypted bulks are accepted loses no acknowledged item, stores no bulk in part and sends no text twice", async () => {
  const setup = await crashRig(null, { PIGEON_PORT: String(freePort()) });
  const { rig } = setup;
  const key = rig.key;
  server = setup.server;
  expect((await server.api("/v1/api/workspace/settings", key, { encrypted_sends: true })).status).toBe(200);
  const pairing = (await server.api("/v1/api/device/pairing", key)).body.data;
  phone = await startSimulator(rig.bin, [
    "--server",
    pairing.server_url,
    `--token=${pairing.pairing_token}`,
    "--delay",
    "10",
    "--passphrase",
    PASS,
  ]);
  // Pigeon hands a phone 20 messages a minute unless told otherwise: enough for all of them at once.
  const deviceId = (await server.api("/v1/api/device/list", key)).body.data.devices[0].device_id;
  expect((await server.api("/v1/api/device/update", key, { device_id: deviceId, send_limit_per_minute: 1000 })).status).toBe(200);

  // Each item's text is its own, so the radio's log tells each one apart.
  const bulks = Array.from({ length: BULKS }, (_, b) =>
    Array.from({ length: ITEMS }, (_, i) => {
      const plain = `encrypted crash ${b}-${i}`;
      return { plain, recipient_contact: appEncrypt(PASS, RECIPIENT, 100), message: appEncrypt(PASS, plain, 100), encrypted: true };
    }),
  );
  const acked = new Set<number>();
  const sendBulk = async (b: number) => {
    try {
      const res = await server!.fetch("/v1/api/sms/send/bulk", {
        method: "POST",
        key,
        body: JSON.stringify({ messages: bulks[b].map(({ plain: _plain, ...item }) => item) }),
      });
      if (res.status === 200) {
        const data = (await json(res)).data;
        expect(data.accepted).toBe(ITEMS);
        acked.add(b);
        // Killed once a few are acknowledged, while the later ones are still being accepted.
        if (acked.size === 3) server!.proc.kill("SIGKILL");
      }
    } catch {
      // Cut off by the kill: not acknowledged, so a client would send it again.
    }
  };
  const inFlight: Promise<void>[] = [];
  for (let b = 0; b < BULKS; b++) {
    inFlight.push(sendBulk(b));
    await Bun.sleep(10);
  }
  await Promise.all(inFlight);
  await server.proc.exited;
  expect(acked.size).toBeGreaterThanOrEqual(3);
  expect(acked.size).toBeLessThan(BULKS);

  server = await rig.start();
  await waitFor("the phone to come back", () => (phone!.output().match(/events stream open/g) ?? []).length >= 2, {
    timeoutMs: 20_000,
    detail: phone.output,
  });
  expect(await waitSettled(server, key, 30_000)).toBe(0);

  // What the server holds, by ciphertext (the list shows it as given).
  const stored = new Map<string, { status: string; encrypted: boolean; recipient: string }>();
  for (let number = 1; ; number++) {
    const page = (await json(await server.fetch(`/v1/api/notification/list?limit=100&page=${number}`, { key }))).data;
    for (const n of page.notifications) stored.set(n.message, n);
    if (page.notifications.length < 100) break;
  }
  const radio = phone.output();
  for (let b = 0; b < BULKS; b++) {
    const kept = bulks[b].filter((item) => stored.has(item.message));
    // One unit of work a bulk: all of it, or (cut off before its commit) none of it.
    expect({ bulk: b, kept: kept.length }).toEqual({ bulk: b, kept: acked.has(b) || kept.length > 0 ? ITEMS : 0 });
    for (const item of kept) {
      expect(stored.get(item.message)).toMatchObject({ status: "delivered", encrypted: true, recipient: item.recipient_contact });
    }
    for (const item of bulks[b]) {
      const sent = radio.split(`radio: to ${RECIPIENT}: "${item.plain}"`).length - 1;
      expect({ text: item.plain, sent }).toEqual({ text: item.plain, sent: stored.has(item.message) ? 1 : 0 });
    }
  }
}, 90_000);
