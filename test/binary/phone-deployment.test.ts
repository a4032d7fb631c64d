// The compiled binary with simulated phones set up as real ones often are: on the app's default
// AUTO notification channel (a push token, no event stream), behind a TLS proxy, and with their own
// SIM and order choices that Pigeon's settings must leave alone.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { SEND_PATH, waitFor } from "../helpers/api";
import { isolatedBinary, runCommand, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { startSimulator } from "../helpers/simulator";
import { RECIPIENT } from "../helpers/numbers";

const bin = isolatedBinary();
const procs: Subprocess[] = [];
const servers: RunningServer[] = [];
const proxies: { stop(force?: boolean): void }[] = [];

afterAll(async () => {
  for (const proc of procs) proc.kill("SIGKILL");
  for (const proxy of proxies) proxy.stop(true);
  for (const server of servers) await server.stop("SIGKILL");
});

interface Started {
  server: RunningServer;
  key: Credentials;
  pairingToken: string;
  dataDir: string;
}

async function start(env: Record<string, string> = {}): Promise<Started> {
  const dataDir = tempDir();
  const server = await startServer(bin, { PIGEON_DATA_DIR: dataDir, ...env });
  servers.push(server);
  const key = server.initialKey!;
  const pairingToken = (await server.api("/v1/api/device/pairing", key)).body.data.pairing_token;
  return { server, key, pairingToken, dataDir };
}

/** Runs `pigeon simulate-phone` against `serverUrl` and waits for `ready` in its log. */
async function startPhone(s: Started, serverUrl: string, name: string, args: string[], ready: string) {
  const { proc, output } = await startSimulator(
    bin,
    ["--server", serverUrl, "--token", s.pairingToken, "--delay", "50", "--name", name, ...args],
    ready,
    `${name} to pair`,
  );
  procs.push(proc);
  const list = (await s.server.api("/v1/api/device/list?limit=100", s.key)).body.data.devices as { name: string; device_id: number }[];
  return { proc, output, deviceId: list.find((d) => d.name === name)!.device_id };
}

/**
 * A reverse proxy on loopback that ends "TLS" for sms.example.com: it passes every request on to
 * Pigeon with the X-Forwarded-Proto and X-Forwarded-Host a real one adds.
 */
function fakeTlsProxy(target: string): string {
  const proxy = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const headers = new Headers(req.headers);
      headers.set("x-forwarded-proto", "https");
      headers.set("x-forwarded-host", "sms.example.com");
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
      return fetch(target + url.pathname + url.search, { method: req.method, headers, body, redirect: "manual" });
    },
  });
  proxies.push(proxy);
  return `http://127.0.0.1:${proxy.port}/mobile/v1`;
}

describe("a phone on the app's default AUTO channel", () => {
  let s: Started;
  beforeAll(async () => {
    // One second of silence makes a phone with an event stream offline; a polling one gets its
    // 15-minute poll interval on top, so it must stay online here.
    s = await start({ PIGEON_OFFLINE_AFTER: "1" });
  });

  test("is shown as polling with the fix, stays online between polls, and still gets its messages on ping", async () => {
    const auto = await startPhone(s, `${s.server.url}/mobile/v1`, "Auto/phone", ["--channel", "auto", "--ping", "1"], "no event stream");
    const sse = await startPhone(s, `${s.server.url}/mobile/v1`, "Sse/phone", [], "events stream open");
    expect(auto.output()).toContain("push token registered (AUTO channel); polling every 900 s");

    // Past the silence that makes a stream-holding phone offline.
    const lastSync = Date.parse((await s.server.api(`/v1/api/device/${auto.deviceId}`, s.key)).body.data.last_sync);
    await waitFor("two seconds of silence", () => Date.now() - lastSync > 2000);
    const device = (await s.server.api(`/v1/api/device/${auto.deviceId}`, s.key)).body.data;
    expect(device).toMatchObject({ online: true, notification_channel: "polling" });
    expect(device.channel_hint).toContain("SSE Only");
    const health = (await s.server.api(`/v1/api/device/${auto.deviceId}/health`, s.key)).body.data;
    expect(health).toMatchObject({ online: true, notification_channel: "polling", health_score: 100 });
    expect((await s.server.api(`/v1/api/device/${sse.deviceId}`, s.key)).body.data).toMatchObject({
      notification_channel: "sse",
      channel_hint: null,
    });

    // Pigeon takes an immediate message for it (it is online) and the phone's ping fetches it.
    const sent = await s.server.api(SEND_PATH, s.key, { recipient_contact: RECIPIENT, message: "Polled", device_id: auto.deviceId });
    expect(sent.status).toBe(200);
    await waitFor(
      "the polled message delivered",
      async () => (await s.server.api(`/v1/api/notification/${sent.body.data.notification_id}`, s.key)).body.data.status === "delivered",
      {
        detail: auto.output,
      },
    );

    // pair-info names the polling phone and the fix, after its usual lines.
    const info = await runCommand(bin, ["devices", "pair-info"], { PIGEON_DATA_DIR: s.dataDir });
    expect(info.code).toBe(0);
    expect(info.stdout).toContain("  Notification channel: SSE Only");
    expect(info.stdout).toContain(
      `  #${auto.deviceId} Auto/phone: choose Settings → Cloud Server → Notification channel → SSE Only, then restart the app.`,
    );
    expect(info.stdout).not.toContain("Sse/phone");
  });
});

describe("behind a TLS proxy", () => {
  test("a trusted proxy's X-Forwarded-Proto/-Host give phones https webhook URLs, and the start warns about http", async () => {
    const s = await start();
    expect(s.server.output()).toContain("pigeon: warning: PIGEON_PUBLIC_URL is not set, so phones are given http:// webhook URLs");
    const phone = await startPhone(s, fakeTlsProxy(s.server.url), "Proxied/phone", [], "events stream open");
    await waitFor("the webhooks read", () => phone.output().includes("webhooks: "), { detail: phone.output });
    expect(phone.output()).toContain(
      "webhooks: app:started, mms:downloaded, mms:received, sms:cancelled, sms:data-received, sms:delivered, sms:failed, sms:received, sms:sent, system:ping → https://sms.example.com/mobile/v1/webhook",
    );
  });

  test("an untrusted peer's forwarded headers are ignored", async () => {
    const s = await start({ PIGEON_TRUSTED_PROXIES: "10.9.9.9, fd00::/8" });
    const phone = await startPhone(s, fakeTlsProxy(s.server.url), "Direct/phone", [], "events stream open");
    await waitFor("the webhooks read", () => phone.output().includes("webhooks: "), { detail: phone.output });
    // The Host the proxy passed on, as the request itself says: plain http.
    expect(phone.output()).toMatch(/webhooks: .* → http:\/\/127\.0\.0\.1:\d+\/mobile\/v1\/webhook\n/);
    expect(phone.output()).not.toContain("sms.example.com");
  });

  test("no warning with an https PIGEON_PUBLIC_URL", async () => {
    const s = await start({ PIGEON_PUBLIC_URL: "https://sms.example.com" });
    expect(s.server.output()).not.toContain("warning");
  });
});

describe("the phone's own settings", () => {
  test("Pigeon gives only what the user chose: the phone keeps its SIM rotation, order and ping", async () => {
    const s = await start();
    const phone = await startPhone(
      s,
      `${s.server.url}/mobile/v1`,
      "DualSim/phone",
      ["--sim-selection", "RoundRobin"],
      "events stream open",
    );
    await waitFor("the settings read", () => phone.output().includes("settings loaded"), { detail: phone.output });
    expect(phone.output()).toContain(
      "settings loaded (signing key from the server; no send interval, no limit, order LIFO, SIM selection RoundRobin, ping off, channel SSE_ONLY)",
    );

    // A pause chosen in Pigeon reaches the phone; its own choices still stand.
    const update = await s.server.api("/v1/api/device/update", s.key, {
      device_id: phone.deviceId,
      send_interval_min: 2,
      send_interval_max: 4,
    });
    expect(update.status).toBe(200);
    await waitFor("the new settings", () => phone.output().includes("send interval 2–4 s"), { detail: phone.output });
    expect(phone.output()).toContain(
      "settings loaded (signing key from the server; send interval 2–4 s, no limit, order LIFO, SIM selection RoundRobin, ping off, channel SSE_ONLY)",
    );
  });
});
