// The phone simulator against a small stand-in for the server side of the companion-app protocol:
// the stand-in records what the simulator sends so each test can hold it to the app's wire format.
import { afterEach, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MMS_PICTURE_PNG } from "../../src/cli/simulate-phone/reports";
import {
  EventStreamParser,
  parseSimulatePhoneArgs,
  reconnectDelay,
  simulatePhone,
  type SimulatedPhoneHandle,
  type SimulatePhoneOptions,
} from "../../src/cli/simulate-phone";
import { waitFor } from "../helpers/api";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";

const PAIRING_TOKEN = "pairing-token-0001";
const DEVICE_ID = "QslD_GefqiYV6RQXdkM6V";
const DEVICE_TOKEN = "bP0ZdK6rC6hCYZSjzmqhQ";
const SIGNING_KEY = "server-signing-key";
const USER_AGENT = "me.capcom.smsgateway/1.68.0";
// The app's yyyy-MM-dd'T'HH:mm:ss.SSSXXX: exactly three fraction digits and an offset.
const APP_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}(Z|[+-]\d{2}:\d{2})$/;
const EVENTS = [
  "sms:received",
  "sms:sent",
  "sms:delivered",
  "sms:failed",
  "sms:cancelled",
  "mms:received",
  "mms:downloaded",
  "system:ping",
  "sms:data-received",
];

interface Hit {
  method: string;
  path: string;
  headers: Headers;
  body: string;
}

interface PostedHook {
  raw: string;
  headers: Headers;
  body: any;
}

interface MockOptions {
  /** Keep messages listed after a PATCH, as a server that lost the PATCH would. */
  keepQueue?: boolean;
  /** Hold every PATCH answer this long. */
  patchDelayMs?: number;
  registerStatus?: number;
}

function startMockServer(options: MockOptions = {}) {
  const hits: Hit[] = [];
  /** Every PATCH /message body, parsed, in arrival order. */
  const patches: unknown[] = [];
  const hooks: PostedHook[] = [];
  const queue: Record<string, unknown>[] = [];
  let settings: Record<string, unknown> = {
    messages: { send_interval_min: 0, send_interval_max: 0 },
    webhooks: { signing_key: SIGNING_KEY },
  };
  let answeredPatches = 0;
  let stream: ReadableStreamDefaultController<Uint8Array> | null = null;
  let streamsClosed = 0;
  const encoder = new TextEncoder();

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    async fetch(req): Promise<Response> {
      const url = new URL(req.url);
      const body = await req.text();
      hits.push({ method: req.method, path: url.pathname + url.search, headers: req.headers, body });

      if (req.method === "POST" && url.pathname.startsWith("/hooks/")) {
        hooks.push({ raw: body, headers: req.headers, body: JSON.parse(body) });
        return new Response(null, { status: 204 });
      }
      if (req.method === "POST" && url.pathname === "/mobile/v1/device") {
        if (options.registerStatus) return Response.json({ message: "invalid token" }, { status: options.registerStatus });
        if (req.headers.get("authorization") !== `Bearer ${PAIRING_TOKEN}`)
          return Response.json({ message: "unauthorized" }, { status: 401 });
        return Response.json({ id: DEVICE_ID, token: DEVICE_TOKEN, login: "VQ4GII", password: "cp2pydvxd2zwpx" }, { status: 201 });
      }
      if (req.headers.get("authorization") !== `Bearer ${DEVICE_TOKEN}`) return Response.json({ message: "unauthorized" }, { status: 401 });

      switch (`${req.method} ${url.pathname}`) {
        case "GET /mobile/v1/settings":
          return Response.json(settings);
        case "GET /mobile/v1/webhooks":
          return Response.json(EVENTS.map((event, i) => ({ id: `wh${i}`, deviceId: null, url: `${base}/hooks/${event}`, event })));
        case "GET /mobile/v1/message":
          return Response.json(queue);
        case "PATCH /mobile/v1/message": {
          const items = JSON.parse(body) as { id: string }[];
          patches.push(items);
          if (!options.keepQueue) {
            for (const item of items) {
              const at = queue.findIndex((m) => m.id === item.id);
              if (at >= 0) queue.splice(at, 1);
            }
          }
          if (options.patchDelayMs) await Bun.sleep(options.patchDelayMs);
          answeredPatches += 1;
          return new Response(null, { status: 204 });
        }
        case "GET /mobile/v1/events":
          return new Response(
            new ReadableStream<Uint8Array>({
              start(controller) {
                stream = controller;
                controller.enqueue(encoder.encode(":keepalive\n\n"));
                // As Pigeon does for a phone that never read them: the app only fetches them when told.
                controller.enqueue(encoder.encode("event: WebhooksUpdated\ndata: null\n\nevent: SettingsUpdated\ndata: null\n\n"));
              },
              cancel() {
                streamsClosed += 1;
              },
            }),
            { headers: { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" } },
          );
      }
      return Response.json({ message: "not found" }, { status: 404 });
    },
  });
  const base: string = `http://127.0.0.1:${server.port}`;

  return {
    base,
    hits,
    patches,
    hooks,
    queue,
    get answeredPatches() {
      return answeredPatches;
    },
    get streamsClosed() {
      return streamsClosed;
    },
    setSettings(next: Record<string, unknown>) {
      settings = next;
    },
    push(event: string | null, data: string) {
      stream!.enqueue(encoder.encode(`${event ? `event: ${event}\n` : ""}data: ${data}\n\n`));
    },
    count(method: string, path: string) {
      return hits.filter((h) => h.method === method && h.path.split("?")[0] === `/mobile/v1${path}`).length;
    },
    hooksFor(event: string) {
      return hooks.filter((h) => h.body.event === event);
    },
    /** The state of each PATCH item, in order, for one message. */
    statesOf(id: string) {
      return (patches as { id: string; state: string }[][])
        .flat()
        .filter((p) => p.id === id)
        .map((p) => p.state);
    },
    stop: () => server.stop(true),
  };
}

type Mock = ReturnType<typeof startMockServer>;

let mock: Mock | null = null;
let phone: SimulatedPhoneHandle | null = null;
let lines: string[] = [];

afterEach(async () => {
  await phone?.stop();
  await mock?.stop();
  phone = null;
  mock = null;
  lines = [];
});

function optionsFor(server: Mock, overrides: Partial<SimulatePhoneOptions> = {}): SimulatePhoneOptions {
  return {
    server: `${server.base}/mobile/v1`,
    token: PAIRING_TOKEN,
    failRate: 0,
    inbound: null,
    inboundData: null,
    missed: null,
    mms: null,
    mmsPushes: 1,
    mmsFile: null,
    from: "+15550001111",
    battery: 80,
    charging: false,
    connected: true,
    delayMs: 50,
    name: "Pigeon/simulator",
    appVersion: "1.68.0",
    pollSeconds: 3600,
    holdMs: 0,
    channel: "sse",
    pingSeconds: null,
    order: "lifo",
    simSelection: "OSDefault",
    sims: 1,
    passphrase: null,
    log: (line) => lines.push(line),
    ...overrides,
  };
}

async function start(options: MockOptions = {}, overrides: Partial<SimulatePhoneOptions> = {}) {
  mock = startMockServer(options);
  phone = await simulatePhone(optionsFor(mock, overrides));
  // The pull that follows the stream's opening.
  await waitFor("the first pull", () => mock!.count("GET", "/message") >= 1, SOON);
  await waitFor("settings and webhooks read", () => mock!.count("GET", "/settings") >= 1 && mock!.count("GET", "/webhooks") >= 1, SOON);
  return mock;
}

// The simulator answers within milliseconds; a failed wait shows its log.
const SOON = { timeoutMs: 2000, intervalMs: 5, detail: () => `log:\n${lines.join("\n")}` };

function pending(id: string, phoneNumbers = [RECIPIENT], extra: Record<string, unknown> = {}) {
  return {
    id,
    message: "Hello",
    textMessage: { text: "Hello" },
    phoneNumbers,
    isEncrypted: false,
    withDeliveryReport: true,
    priority: 0,
    state: "Pending",
    createdAt: "2026-01-01T00:00:00.000Z",
    ...extra,
  };
}

function expectSigned(hook: PostedHook, key = SIGNING_KEY) {
  const timestamp = hook.headers.get("x-timestamp")!;
  expect(timestamp).toMatch(/^\d+$/);
  expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(5);
  expect(hook.headers.get("x-signature")).toBe(
    createHmac("sha256", key)
      .update(hook.raw + timestamp)
      .digest("hex"),
  );
  expect(hook.headers.get("content-type")).toBe("application/json");
  expect(hook.headers.get("user-agent")).toBe(USER_AGENT);
}

describe("simulatePhone", () => {
  test("registers with the pairing token and the app's body, then uses the device token everywhere", async () => {
    const server = await start();
    expect(phone!.deviceId).toBe(DEVICE_ID);

    const register = server.hits[0];
    expect(register.method).toBe("POST");
    expect(register.path).toBe("/mobile/v1/device");
    expect(register.headers.get("authorization")).toBe(`Bearer ${PAIRING_TOKEN}`);
    expect(register.headers.get("user-agent")).toBe(USER_AGENT);
    expect(register.headers.get("content-type")).toBe("application/json");
    expect(JSON.parse(register.body)).toEqual({
      name: "Pigeon/simulator",
      simCards: [{ slotIndex: 0, simNumber: 1, phoneNumber: "*******1234", carrierName: "***ile", iccid: "****************5678" }],
    });

    // Like the app after "Sign up": no settings or webhooks until the event stream says so.
    expect(`${server.hits[1].method} ${server.hits[1].path}`).toBe("GET /mobile/v1/events");
    expect(
      server.hits
        .slice(2)
        .map((h) => `${h.method} ${h.path.split("?")[0]}`)
        .sort(),
    ).toEqual(["GET /mobile/v1/message", "GET /mobile/v1/settings", "GET /mobile/v1/webhooks"]);
    for (const hit of server.hits.slice(1)) {
      expect(hit.headers.get("authorization")).toBe(`Bearer ${DEVICE_TOKEN}`);
      // API calls name the app; the event stream comes from a bare OkHttp client, as in the app.
      expect(hit.headers.get("user-agent")).toBe(hit.path === "/mobile/v1/events" ? "okhttp/4.10.0" : USER_AGENT);
    }
    expect(server.hits.find((h) => h.path.startsWith("/mobile/v1/message"))!.path).toBe("/mobile/v1/message?order=lifo");
    expect(lines).toContain(`registered as ${DEVICE_ID}`);
    expect(lines).toContain("events stream open");
  });

  test("on the AUTO channel it registers a push token, opens no event stream and pulls on its timer", async () => {
    mock = startMockServer();
    phone = await simulatePhone(optionsFor(mock, { channel: "auto", pollSeconds: 0.05 }));
    const server = mock;
    await waitFor("two timed pulls", () => server.count("GET", "/message") >= 2, SOON);
    expect(JSON.parse(server.hits[0].body).pushToken).toMatch(/^[\w-]{22}:APA91b[\w-]+$/);
    expect(server.count("GET", "/events")).toBe(0);
    // Nothing tells it to read them: the app's daily update ran before it was registered.
    expect(server.count("GET", "/settings")).toBe(0);
    expect(lines).toContain("no event stream: push token registered (AUTO channel); polling every 0.05 s");
  });

  test("settings: a key left out keeps the phone's own value, a key given as null goes back to the app's default", async () => {
    const server = await start({}, { order: "fifo", simSelection: "RoundRobin", pingSeconds: 3600 });
    // The mock gives only the send interval and the key: order, SIM choice and ping stay the phone's.
    // (The mock counts the request when it arrives; the phone logs once it has read the answer.)
    await waitFor("the settings loaded", () => lines.some((l) => l.startsWith("settings loaded")), SOON);
    expect(lines).toContain(
      "settings loaded (signing key from the server; send interval 0–0 s, no limit, order FIFO, SIM selection RoundRobin, ping 3600 s, channel SSE_ONLY)",
    );
    await waitFor("a pull", () => server.hits.some((h) => h.path === "/mobile/v1/message?order=fifo"), SOON);
    server.setSettings({
      messages: { processing_order: null, sim_selection_mode: "Random", limit_period: "PerMinute", limit_value: 7 },
      ping: { interval_seconds: null },
    });
    server.push("SettingsUpdated", "null");
    await waitFor(
      "the settings read again",
      () => server.count("GET", "/settings") === 2 && lines.some((l) => l.includes("channel SSE_ONLY)") && l.includes("Random")),
      SOON,
    );
    expect(lines).toContain(
      "settings loaded (signing key from the server; send interval 0–0 s, limit 7 PerMinute, order LIFO, SIM selection Random, ping off, channel SSE_ONLY)",
    );
    expect(lines).toContain("settings changed via API: ping and notification channel take effect when the app restarts");
    server.push("MessageEnqueued", "null");
    await waitFor("a LIFO pull", () => server.hits.some((h) => h.path === "/mobile/v1/message?order=lifo"), SOON);
  });

  test("the limit: at its value the next message waits for the period, as MessagesService.applyLimit does; an expedited one goes", async () => {
    const server = await start();
    server.setSettings({ messages: { limit_period: "PerHour", limit_value: 2 }, webhooks: { signing_key: SIGNING_KEY } });
    server.push("SettingsUpdated", "null");
    await waitFor("the limit loaded", () => lines.some((l) => l.includes("limit 2 PerHour")), SOON);
    server.queue.push(pending("msg-1"), pending("msg-2"), pending("msg-3"));
    server.push("MessageEnqueued", "null");
    await waitFor("two sent, the third held", () => lines.some((l) => l.startsWith("limit 2 PerHour reached")), SOON);
    expect(server.hooksFor("sms:sent").length).toBe(2);
    // Held a whole hour since the second went (plus the app's second), not sent.
    expect(lines.find((l) => l.startsWith("limit 2 PerHour reached"))).toMatch(/the next message waits 360[01] s$/);
    await Bun.sleep(200);
    expect(server.statesOf("msg-3")).toEqual([]);
  });

  test("Per30Minutes fails the settings import of an app before 1.67.0 as its Period.valueOf does; 1.67.0 takes it", async () => {
    for (const appVersion of ["1.66.1", "1.67.0"]) {
      const server = await start({}, { appVersion });
      server.setSettings({ messages: { limit_period: "Per30Minutes", limit_value: 5 }, webhooks: { signing_key: SIGNING_KEY } });
      server.push("SettingsUpdated", "null");
      await waitFor(
        "the settings read again",
        () => lines.some((l) => l.startsWith("settings not imported") || l.includes("Per30Minutes")),
        SOON,
      );
      if (appVersion === "1.66.1") expect(lines.some((l) => l.startsWith("settings not imported: limit_period: no such value"))).toBe(true);
      else expect(lines.some((l) => l.includes("limit 5 Per30Minutes"))).toBe(true);
      await phone?.stop();
      await mock?.stop();
      lines = [];
    }
  });

  test("a refused registration rejects with the server's reason", async () => {
    mock = startMockServer({ registerStatus: 401 });
    await expect(simulatePhone(optionsFor(mock))).rejects.toThrow("registration failed: HTTP 401 invalid token");
  });

  test("MessageEnqueued pulls; the message goes Processed → Sent → Delivered in the app's PATCH shape", async () => {
    const server = await start();
    const pulls = server.count("GET", "/message");
    server.queue.push(pending("msg-1"));
    server.push("MessageEnqueued", "null");
    await waitFor("Delivered", () => server.statesOf("msg-1").includes("Delivered"), SOON);

    expect(server.count("GET", "/message")).toBeGreaterThan(pulls);
    expect(server.statesOf("msg-1")).toEqual(["Processed", "Sent", "Delivered"]);
    const bodies = server.patches as unknown[][];
    for (const body of bodies) expect(body).toBeArrayOfSize(1);
    const date = expect.stringMatching(APP_DATE);
    expect(bodies.map((b) => b[0])).toEqual([
      { id: "msg-1", state: "Processed", recipients: [{ phoneNumber: RECIPIENT, state: "Processed" }], states: { Processed: date } },
      { id: "msg-1", state: "Sent", recipients: [{ phoneNumber: RECIPIENT, state: "Sent" }], states: { Processed: date, Sent: date } },
      {
        id: "msg-1",
        state: "Delivered",
        recipients: [{ phoneNumber: RECIPIENT, state: "Delivered" }],
        states: { Processed: date, Sent: date, Delivered: date },
      },
    ]);
    const patch = server.hits.find((h) => h.method === "PATCH")!;
    expect(patch.headers.get("content-type")).toBe("application/json");
    expect(patch.headers.get("authorization")).toBe(`Bearer ${DEVICE_TOKEN}`);
    expect(patch.headers.get("user-agent")).toBe(USER_AGENT);

    await waitFor("the sms:delivered webhook", () => server.hooksFor("sms:delivered").length === 1, SOON);
    const [sent] = server.hooksFor("sms:sent");
    const [delivered] = server.hooksFor("sms:delivered");
    for (const hook of [sent, delivered]) expectSigned(hook);
    expect(sent.body).toEqual({
      id: expect.stringMatching(/^[\w-]{21}$/),
      webhookId: "wh1",
      event: "sms:sent",
      deviceId: DEVICE_ID,
      payload: {
        messageId: "msg-1",
        sender: "+15550009999",
        recipient: RECIPIENT,
        simNumber: 1,
        phoneNumber: RECIPIENT,
        partsCount: 1,
        sentAt: date,
      },
    });
    expect(delivered.body.webhookId).toBe("wh2");
    expect(delivered.body.payload).toEqual({
      messageId: "msg-1",
      sender: "+15550009999",
      recipient: RECIPIENT,
      simNumber: 1,
      phoneNumber: RECIPIENT,
      deliveredAt: date,
    });
    expect(lines).toEqual(expect.arrayContaining(["message msg-1 → Processed", "message msg-1 → Sent", "message msg-1 → Delivered"]));
  });

  test("a frame without an event name also pulls, and each recipient gets its own webhook", async () => {
    const server = await start();
    server.queue.push(pending("msg-2", [RECIPIENT, SECOND_RECIPIENT], { withDeliveryReport: false }));
    server.push(null, "null");
    await waitFor("Sent", () => server.hooksFor("sms:sent").length === 2 && server.statesOf("msg-2").includes("Sent"), SOON);
    expect(server.hooksFor("sms:sent").map((h) => h.body.payload.recipient)).toEqual([RECIPIENT, SECOND_RECIPIENT]);
    const sent = (server.patches as any[][]).flat().find((p) => p.state === "Sent");
    expect(sent.recipients).toEqual([
      { phoneNumber: RECIPIENT, state: "Sent" },
      { phoneNumber: SECOND_RECIPIENT, state: "Sent" },
    ]);
    // Without a delivery report the message stays Sent.
    await Bun.sleep(120);
    expect(server.statesOf("msg-2")).toEqual(["Processed", "Sent"]);
  });

  test("with fail-rate 1 every message fails with the generic failure and posts sms:failed", async () => {
    const server = await start({}, { failRate: 1 });
    server.queue.push(pending("msg-3"));
    server.push("MessageEnqueued", "null");
    await waitFor("Failed", () => server.hooksFor("sms:failed").length === 1 && server.statesOf("msg-3").includes("Failed"), SOON);

    expect(server.statesOf("msg-3")).toEqual(["Processed", "Failed"]);
    const failed = (server.patches as any[][]).flat().find((p) => p.state === "Failed");
    expect(failed).toEqual({
      id: "msg-3",
      state: "Failed",
      recipients: [{ phoneNumber: RECIPIENT, state: "Failed", error: "Send result: RESULT_ERROR_GENERIC_FAILURE" }],
      states: { Processed: expect.stringMatching(APP_DATE), Failed: expect.stringMatching(APP_DATE) },
    });
    const [hook] = server.hooksFor("sms:failed");
    expectSigned(hook);
    expect(hook.body.payload).toMatchObject({
      messageId: "msg-3",
      recipient: RECIPIENT,
      reason: "Send result: RESULT_ERROR_GENERIC_FAILURE",
      failedAt: expect.stringMatching(APP_DATE),
    });
    expect(server.hooksFor("sms:sent")).toHaveLength(0);
    expect(lines.some((l) => l.startsWith("message msg-3 → Failed"))).toBe(true);
  });

  test("an expired message fails with TTL expired", async () => {
    const server = await start();
    server.queue.push(pending("msg-ttl", undefined, { validUntil: "2020-01-01T00:00:00.000Z" }));
    server.push("MessageEnqueued", "null");
    await waitFor("Failed", () => server.statesOf("msg-ttl").includes("Failed"), SOON);
    const failed = (server.patches as any[][]).flat().find((p) => p.state === "Failed");
    expect(failed.recipients[0].error).toBe("TTL expired");
  });

  test("--sims 2 reports two SIM cards; a message goes out on the SIM it names, and one naming a missing SIM fails as the app does", async () => {
    const server = await start({}, { sims: 2 });
    expect(JSON.parse(server.hits[0].body).simCards).toEqual([
      { slotIndex: 0, simNumber: 1, phoneNumber: "*******1234", carrierName: "***ile", iccid: "****************5678" },
      { slotIndex: 1, simNumber: 2, phoneNumber: "*******1235", carrierName: "***ile", iccid: "****************5679" },
    ]);
    server.queue.push(pending("msg-sim2", undefined, { simNumber: 2 }), pending("msg-sim3", undefined, { simNumber: 3 }));
    server.push("MessageEnqueued", "null");
    await waitFor(
      "both settled",
      () => server.statesOf("msg-sim2").includes("Sent") && server.statesOf("msg-sim3").includes("Failed"),
      SOON,
    );
    expect(server.hooksFor("sms:sent").map((h) => h.body.payload)).toEqual([
      expect.objectContaining({ messageId: "msg-sim2", simNumber: 2 }),
    ]);
    const failed = (server.patches as any[][]).flat().find((p) => p.id === "msg-sim3" && p.state === "Failed");
    expect(failed.recipients[0].error).toBe("Can't send message: SIM 3 not found");
  });

  test("the phone's queue goes by priority, highest first, as the app's getPending orders it", async () => {
    const server = await start();
    server.queue.push(
      pending("msg-low", undefined, { priority: -5 }),
      pending("msg-otp", undefined, { priority: 100 }),
      pending("msg-normal"),
    );
    server.push("MessageEnqueued", "null");
    await waitFor("two sent", () => server.hooksFor("sms:sent").length >= 2, SOON);
    expect(server.hooksFor("sms:sent").map((h) => h.body.payload.messageId)).toEqual(["msg-otp", "msg-normal"]);
    expect(lines).toContain("message msg-otp goes out on SIM 1 (expedited)");
  });

  test("an unknown Cancelling message is answered with Cancelled at once", async () => {
    mock = startMockServer();
    mock.queue.push({ ...pending("msg-4"), state: "Cancelling" });
    phone = await simulatePhone(optionsFor(mock));
    const server = mock;
    await waitFor("the Cancelled PATCH", () => server.patches.length === 1, SOON);
    expect(server.patches[0]).toEqual([
      {
        id: "msg-4",
        state: "Cancelled",
        recipients: [{ phoneNumber: RECIPIENT, state: "Cancelled" }],
        states: { Cancelled: expect.stringMatching(APP_DATE) },
      },
    ]);
    expect(lines).toContain("message msg-4 cancelled");
  });

  test("MessageCancelled stops a message still Pending in the phone's queue (nothing is reported before)", async () => {
    const server = await start({}, { holdMs: 300 });
    server.queue.push(pending("msg-5"));
    server.push("MessageEnqueued", "null");
    await waitFor("the download", () => lines.includes("message msg-5 waiting in the phone's queue"), SOON);
    expect(server.statesOf("msg-5")).toEqual([]);
    server.push("MessageCancelled", JSON.stringify({ messageId: "msg-5" }));
    await waitFor("Cancelled", () => server.statesOf("msg-5").includes("Cancelled"), SOON);
    await Bun.sleep(350);
    expect(server.statesOf("msg-5")).toEqual(["Cancelled"]);
    expect(server.hooksFor("sms:cancelled")[0].body.payload).toMatchObject({
      messageId: "msg-5",
      cancelledAt: expect.stringMatching(APP_DATE),
    });
    expect(server.hooksFor("sms:sent")).toHaveLength(0);
  });

  test("a message taken up (Processed) is not cancelled: MessageCancelled and Cancelling leave it, and it is sent", async () => {
    const server = await start({ keepQueue: true }, { delayMs: 150 });
    server.queue.push(pending("msg-late"));
    server.push("MessageEnqueued", "null");
    await waitFor("Processed", () => server.statesOf("msg-late").includes("Processed"), SOON);
    server.push("MessageCancelled", JSON.stringify({ messageId: "msg-late" }));
    server.queue.splice(0, server.queue.length, { ...pending("msg-late"), state: "Cancelling" });
    server.push("MessageEnqueued", "null");
    await waitFor("Delivered", () => server.statesOf("msg-late").includes("Delivered"), SOON);
    expect(server.statesOf("msg-late")).not.toContain("Cancelled");
    expect(server.hooksFor("sms:cancelled")).toHaveLength(0);
  });

  test("a message pulled again while still in the phone's queue has its Pending state sent again", async () => {
    const server = await start({ keepQueue: true }, { holdMs: 400 });
    server.queue.push(pending("msg-held"));
    server.push("MessageEnqueued", "null");
    await waitFor("the download", () => lines.includes("message msg-held waiting in the phone's queue"), SOON);
    server.push("MessageEnqueued", "null");
    await waitFor("the Pending PATCH", () => server.statesOf("msg-held").includes("Pending"), SOON);
    expect(server.statesOf("msg-held")[0]).toBe("Pending");
  });

  test("a message pulled again is never sent twice: its current state is sent again", async () => {
    const server = await start({ keepQueue: true });
    server.queue.push(pending("msg-6"));
    server.push("MessageEnqueued", "null");
    await waitFor("Delivered", () => server.statesOf("msg-6").includes("Delivered"), SOON);
    server.push("MessageEnqueued", "null");
    await waitFor("the repeated PATCH", () => server.statesOf("msg-6").length === 4, SOON);
    expect(server.statesOf("msg-6")).toEqual(["Processed", "Sent", "Delivered", "Delivered"]);
    expect(lines.filter((l) => l === "message msg-6 → Sent")).toHaveLength(1);
    expect(server.hooksFor("sms:sent")).toHaveLength(1);
  });

  test("--inbound posts one signed sms:received", async () => {
    const server = await start({}, { inbound: "Hi there", from: "+15550001234" });
    await waitFor("the sms:received webhook", () => server.hooksFor("sms:received").length === 1, SOON);
    const [hook] = server.hooksFor("sms:received");
    expectSigned(hook);
    expect(hook.body).toEqual({
      id: expect.stringMatching(/^[\w-]{21}$/),
      webhookId: "wh0",
      event: "sms:received",
      deviceId: DEVICE_ID,
      payload: {
        messageId: expect.stringMatching(/^[0-9a-f]{1,8}$/),
        sender: "+15550001234",
        recipient: "+15550009999",
        simNumber: 1,
        phoneNumber: "+15550001234",
        message: "Hi there",
        receivedAt: expect.stringMatching(APP_DATE),
      },
    });
    await waitFor("the log line", () => lines.includes("received SMS from +15550001234 posted"), SOON);
  });

  test("--inbound-data posts one signed sms:data-received in the app's SmsDataReceived shape", async () => {
    const server = await start({}, { inboundData: "AQID", from: "+15550001234" });
    await waitFor("the sms:data-received webhook", () => server.hooksFor("sms:data-received").length === 1, SOON);
    const [hook] = server.hooksFor("sms:data-received");
    expectSigned(hook);
    expect(hook.body).toEqual({
      id: expect.stringMatching(/^[\w-]{21}$/),
      webhookId: expect.any(String),
      event: "sms:data-received",
      deviceId: DEVICE_ID,
      payload: {
        messageId: expect.stringMatching(/^[0-9a-f]{1,8}$/),
        sender: "+15550001234",
        recipient: "+15550009999",
        simNumber: 1,
        phoneNumber: "+15550001234",
        data: "AQID",
        receivedAt: expect.stringMatching(APP_DATE),
      },
    });
    expect(server.hooksFor("sms:received")).toEqual([]);
  });

  test("a pulled dataMessage goes out on the radio as its bytes to its port, as one part; one with no content the app knows fails", async () => {
    const server = await start();
    server.queue.push({
      ...pending("data-1", [RECIPIENT], { dataMessage: { data: "SGk=", port: 53739 } }),
      message: undefined,
      textMessage: undefined,
    });
    server.queue.push({ ...pending("empty-1"), message: undefined, textMessage: undefined });
    server.push("MessageEnqueued", "null");
    await waitFor("Delivered", () => server.statesOf("data-1").includes("Delivered"), SOON);
    await waitFor("Failed", () => server.statesOf("empty-1").includes("Failed"), SOON);
    expect(lines).toContain(`radio: data SMS data-1 to ${RECIPIENT} port 53739: 2 bytes 4869`);
    expect(lines.some((l) => l.startsWith("radio: data SMS empty-1"))).toBe(false);
    const [sent] = server.hooksFor("sms:sent");
    expect(sent.body.payload).toMatchObject({ messageId: "data-1", partsCount: 1 });
    const failed = (server.patches as { id: string; state: string; recipients: { error?: string }[] }[][])
      .flat()
      .find((p) => p.id === "empty-1" && p.state === "Failed");
    expect(failed?.recipients[0].error).toBe("Invalid message content");
  });

  test("--ping posts system:ping with the app's health checks, on the interval the app started with", async () => {
    const server = await start({}, { pingSeconds: 1, battery: 9, connected: false });
    // The server's interval only applies after an app restart.
    server.setSettings({ ping: { interval_seconds: 300 }, webhooks: { signing_key: SIGNING_KEY } });
    server.push("SettingsUpdated", "null");
    await waitFor("two pings", () => server.hooksFor("system:ping").length >= 2, { ...SOON, timeoutMs: 5000 });
    expect(lines).toContain("settings changed via API: ping and notification channel take effect when the app restarts");
    const [hook] = server.hooksFor("system:ping");
    expectSigned(hook);
    const check = (status: string, observedValue: number, observedUnit: string) => ({
      status,
      observedValue,
      observedUnit,
      description: expect.any(String),
    });
    expect(hook.body.payload).toEqual({
      health: {
        version: "1.68.0",
        releaseId: expect.any(Number),
        status: "fail",
        checks: {
          "messages:failed": check("pass", 0, "messages"),
          "connection:status": check("fail", 0, "boolean"),
          "connection:transport": check("fail", 0, "flags"),
          "connection:cellular": check("pass", 0, "index"),
          "battery:level": check("fail", 9, "percent"),
          "battery:charging": check("pass", 0, "flags"),
        },
      },
    });
  });

  test("without --ping the app does not ping; before 1.30 a ping carries only the messages check", async () => {
    const server = await start({}, { appVersion: "1.29.0", pingSeconds: 1 });
    await waitFor("a ping", () => server.hooksFor("system:ping").length >= 1, { ...SOON, timeoutMs: 5000 });
    expect(Object.keys(server.hooksFor("system:ping")[0].body.payload.health.checks)).toEqual(["messages:failed"]);
    await phone!.stop();
    await mock!.stop();
    const quiet = await start();
    quiet.push("MessageEnqueued", "null");
    await waitFor("the pull", () => quiet.count("GET", "/message") >= 2, SOON);
    expect(quiet.hooksFor("system:ping")).toHaveLength(0);
  });

  test("--mms posts the headers as mms:received, then the downloaded content as mms:downloaded", async () => {
    const server = await start({}, { mms: "Holiday", from: "+15550001234" });
    await waitFor("mms:downloaded", () => server.hooksFor("mms:downloaded").length === 1, SOON);
    const [headers] = server.hooksFor("mms:received");
    expectSigned(headers);
    expect(headers.body.payload).toEqual({
      messageId: expect.stringMatching(/^T[0-9a-f]{12}$/),
      sender: "+15550001234",
      recipient: "+15550009999",
      simNumber: 1,
      phoneNumber: "+15550001234",
      transactionId: headers.body.payload.messageId,
      subject: "Holiday",
      size: expect.any(Number),
      contentClass: null,
      receivedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000Z$/),
    });
    expect(server.hooksFor("mms:downloaded")[0].body.payload).toEqual({
      messageId: "1",
      sender: "+15550001234",
      recipient: "+15550009999",
      simNumber: 1,
      phoneNumber: "+15550001234",
      body: null,
      subject: "Holiday",
      attachments: [{ partId: 1, contentType: "image/png", name: "picture.png", size: 74, data: MMS_PICTURE_PNG }],
      receivedAt: headers.body.payload.receivedAt,
    });
    // The picture is a whole PNG, its size its decoded length.
    const png = Buffer.from(server.hooksFor("mms:downloaded")[0].body.payload.attachments[0].data, "base64");
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(png.length).toBe(74);
    expect(server.hooksFor("mms:received")).toHaveLength(1);
  });

  test("--mms-file sends that file's bytes, typed by its name's ending", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pigeon-mms-file-"));
    const path = join(dir, "drawing.svg");
    const svg = '<svg xmlns="http://www.w3.org/2000/svg"><script>1</script></svg>';
    writeFileSync(path, svg);
    const server = await start(
      {},
      { mms: "A drawing", mmsFile: parseSimulatePhoneArgs(["--server", "http://x", "--token", "T", "--mms-file", path]).mmsFile },
    );
    await waitFor("mms:downloaded", () => server.hooksFor("mms:downloaded").length === 1, SOON);
    expect(server.hooksFor("mms:downloaded")[0].body.payload.attachments).toEqual([
      { partId: 1, contentType: "image/svg+xml", name: "drawing.svg", size: svg.length, data: Buffer.from(svg).toString("base64") },
    ]);
    expect(() => parseSimulatePhoneArgs(["--server", "http://x", "--token", "T", "--mms-file", join(dir, "missing.png")])).toThrow(
      /--mms-file/,
    );
    rmSync(dir, { recursive: true });
  });

  test("a repeated MMS notification is posted again by apps before 1.65.2 only", async () => {
    const old = await start({}, { mms: "Twice", mmsPushes: 2, appVersion: "1.65.1" });
    await waitFor("mms:downloaded", () => old.hooksFor("mms:downloaded").length === 1, SOON);
    expect(old.hooksFor("mms:received")).toHaveLength(2);
    await phone!.stop();
    await mock!.stop();
    const current = await start({}, { mms: "Twice", mmsPushes: 2 });
    await waitFor("mms:downloaded", () => current.hooksFor("mms:downloaded").length === 1, SOON);
    expect(current.hooksFor("mms:received")).toHaveLength(1);
    expect(lines).toContain("repeated MMS notification skipped: already handled");
  });

  /** Asks the phone for its inbox of the last hour, as Pigeon and the Go server word it. */
  function askForInbox(server: Mock, extra: Record<string, string> = {}) {
    const now = Date.now();
    const data = {
      since: new Date(now - 3_600_000).toISOString(),
      until: new Date(now + 60_000).toISOString(),
      messageTypes: "SMS",
      triggerWebhooks: "true",
      ...extra,
    };
    server.push("MessagesExportRequested", JSON.stringify(data));
  }

  test("MessagesExportRequested: the inbox of the period is processed again, oldest first; a 1.68 app skips what it handled", async () => {
    const server = await start({}, { inbound: "Seen", missed: "Lost" });
    await waitFor("the live SMS", () => server.hooksFor("sms:received").length === 1, SOON);
    askForInbox(server);
    await waitFor("the export", () => lines.some((l) => l.startsWith("inbox export")), SOON);
    expect(lines).toContain("inbox export: 1 message(s) processed again, 1 already handled skipped");
    expect(server.hooksFor("sms:received").map((h) => h.body.payload.message)).toEqual(["Seen", "Lost"]);
    const [seen, lost] = server.hooksFor("sms:received").map((h) => h.body.payload);
    expect(Date.parse(lost.receivedAt)).toBeLessThan(Date.parse(seen.receivedAt));
  });

  test("an app before 1.65.2 posts the whole period again, with the same message ids", async () => {
    const server = await start({}, { inbound: "Seen", missed: "Lost", appVersion: "1.65.1" });
    await waitFor("the live SMS", () => server.hooksFor("sms:received").length === 1, SOON);
    askForInbox(server);
    await waitFor("the export", () => lines.some((l) => l.startsWith("inbox export")), SOON);
    const posted = server.hooksFor("sms:received").map((h) => h.body.payload);
    expect(posted.map((p) => p.message)).toEqual(["Seen", "Lost", "Seen"]);
    expect(posted[2].messageId).toBe(posted[0].messageId);
    expect(posted[2].receivedAt).toBe(posted[0].receivedAt);
  });

  test("triggerWebhooks false records without posting; a period that misses the inbox posts nothing; apps before 1.28 ignore the event", async () => {
    const server = await start({}, { missed: "Lost" });
    askForInbox(server, { triggerWebhooks: "false" });
    await waitFor("the export", () => lines.some((l) => l.startsWith("inbox export")), SOON);
    askForInbox(server, { since: "2020-01-01T00:00:00.000Z", until: "2020-01-02T00:00:00.000Z" });
    await waitFor("the second export", () => lines.filter((l) => l.startsWith("inbox export")).length === 2, SOON);
    // The first export recorded the message as handled, so even a later full export skips it.
    askForInbox(server);
    await waitFor("the third export", () => lines.filter((l) => l.startsWith("inbox export")).length === 3, SOON);
    expect(server.hooksFor("sms:received")).toHaveLength(0);
    await phone!.stop();
    await mock!.stop();
    const old = await start({}, { missed: "Lost", appVersion: "1.27.0" });
    askForInbox(old);
    await waitFor("the log line", () => lines.some((l) => l.includes("MessagesExportRequested ignored")), SOON);
    expect(old.hooksFor("sms:received")).toHaveLength(0);
  });

  test("SettingsUpdated and WebhooksUpdated read the server again; a new signing key signs later webhooks", async () => {
    const server = await start();
    server.setSettings({ webhooks: { signing_key: "rotated-key" } });
    server.push("SettingsUpdated", "null");
    server.push("WebhooksUpdated", "null");
    await waitFor("the second reads", () => server.count("GET", "/settings") === 2 && server.count("GET", "/webhooks") === 2, SOON);
    await waitFor("the webhooks reload", () => lines.filter((l) => l.startsWith("webhooks:")).length === 2, SOON);

    server.queue.push(pending("msg-7"));
    server.push("MessageEnqueued", "null");
    await waitFor("the sms:sent webhook", () => server.hooksFor("sms:sent").length === 1, SOON);
    expectSigned(server.hooksFor("sms:sent")[0], "rotated-key");
  });

  test("stop() closes the stream and waits for PATCHes on the wire", async () => {
    const server = await start({ patchDelayMs: 150 });
    server.queue.push(pending("msg-8"));
    server.push("MessageEnqueued", "null");
    await waitFor("the first PATCH to arrive", () => server.patches.length === 1, SOON);
    expect(server.answeredPatches).toBe(0);
    await phone!.stop();
    expect(server.answeredPatches).toBe(1);
    await waitFor("the stream to close", () => server.streamsClosed === 1, SOON);
    const seen = server.hits.length;
    await Bun.sleep(120);
    // The Sent step was still waiting for the radio: it is dropped, not sent after stop.
    expect(server.hits.length).toBe(seen);
  });

  test("an aborted signal stops the phone", async () => {
    mock = startMockServer();
    const controller = new AbortController();
    await simulatePhone(optionsFor(mock), controller.signal);
    controller.abort();
    const server = mock;
    await waitFor("the stream to close", () => server.streamsClosed === 1, SOON);
  });
});

describe("parseSimulatePhoneArgs", () => {
  test("defaults", () => {
    const opts = parseSimulatePhoneArgs(["--server", "http://127.0.0.1:8080/mobile/v1/", "--token", "T"]);
    expect({ ...opts, log: undefined }).toEqual({
      server: "http://127.0.0.1:8080/mobile/v1",
      token: "T",
      failRate: 0,
      inbound: null,
      inboundData: null,
      missed: null,
      mms: null,
      mmsPushes: 1,
      mmsFile: null,
      from: "+15550001111",
      battery: 80,
      charging: false,
      connected: true,
      delayMs: 1000,
      holdMs: 0,
      name: "Pigeon/simulator",
      appVersion: "1.68.0",
      pollSeconds: 900,
      channel: "sse",
      pingSeconds: null,
      order: "lifo",
      simSelection: "OSDefault",
      sims: 1,
      passphrase: null,
      log: undefined,
    });
  });

  test("a value that starts with a dash (a pairing token can) is a value, not a flag", () => {
    const opts = parseSimulatePhoneArgs([
      "--server",
      "http://127.0.0.1:8080/mobile/v1",
      "--token",
      "-Ab_c9",
      "--inbound",
      "-5 degrees outside",
    ]);
    expect(opts.token).toBe("-Ab_c9");
    expect(opts.inbound).toBe("-5 degrees outside");
  });

  test("every flag", () => {
    const opts = parseSimulatePhoneArgs([
      "--server=https://pigeon.example/mobile/v1",
      "--token=T",
      "--fail-rate=0.25",
      "--inbound",
      "hello",
      "--from=+447700900123",
      "--delay=50",
      "--name=Xiaomi/vayu_eea",
      "--app-version=1.67.0",
      "--poll=5",
      "--channel=auto",
      "--ping=30",
      "--order=fifo",
      "--sim-selection=RoundRobin",
      "--missed=lost",
      "--mms=Photo",
      "--mms-pushes=2",
      "--battery=12",
      "--charging",
      "--no-connection",
      "--sims=2",
    ]);
    expect(opts).toMatchObject({
      server: "https://pigeon.example/mobile/v1",
      failRate: 0.25,
      inbound: "hello",
      from: "+447700900123",
      delayMs: 50,
      name: "Xiaomi/vayu_eea",
      appVersion: "1.67.0",
      pollSeconds: 5,
      channel: "auto",
      pingSeconds: 30,
      order: "fifo",
      simSelection: "RoundRobin",
      missed: "lost",
      mms: "Photo",
      mmsPushes: 2,
      mmsFile: null,
      battery: 12,
      charging: true,
      connected: false,
      sims: 2,
    });
  });

  test.each([
    [["--token", "T"], "--server is required"],
    [["--server", "http://x/mobile/v1"], "--token is required"],
    [["--server", "ftp://x", "--token", "T"], "--server needs an http(s)"],
    [["--server", "not a url", "--token", "T"], "--server needs an http(s) URL"],
    [["--server", "http://x", "--token", "T", "--fail-rate", "1.5"], "--fail-rate needs a number from 0 to 1"],
    [["--server", "http://x", "--token", "T", "--fail-rate", "abc"], "--fail-rate"],
    [["--server", "http://x", "--token", "T", "--delay=-1"], "--delay needs a whole number"],
    [["--server", "http://x", "--token", "T", "--sims=4"], "--sims needs a whole number from 1 to 3"],
    [["--server", "http://x", "--token", "T", "--delay", "1.5"], "--delay needs a whole number"],
    [["--server", "http://x", "--token", "T", "--poll", "0"], "--poll"],
    [["--server", "http://x", "--token", "T", "--channel", "fcm"], "--channel needs one of sse, auto"],
    [["--server", "http://x", "--token", "T", "--ping", "0"], "--ping"],
    [
      ["--server", "http://x", "--token", "T", "--sim-selection", "roundrobin"],
      "--sim-selection needs one of OSDefault, RoundRobin, Random",
    ],
    [["--server", "http://x", "--token", "T", "--from", "5550001111"], "--from needs a number in E.164 form"],
    [["--server", "http://x", "--token", "T", "--inbound", ""], "--inbound needs the text"],
    [["--server", "http://x", "--token", "T", "--battery", "101"], "--battery needs a whole number from 0 to 100"],
    [["--server", "http://x", "--token", "T", "--mms", ""], "--mms needs the subject"],
    [["--server", "http://x", "--token", "T", "--bogus"], "bogus"],
    [["--server", "http://x", "--token", "T", "extra"], "extra"],
  ])("%j is refused", (argv, message) => {
    expect(() => parseSimulatePhoneArgs(argv as string[])).toThrow(message as string);
  });
});

describe("the event stream", () => {
  test("frames split anywhere, CRLF, comments and multi-line data parse as the app reads them", () => {
    const seen: [string | null, string][] = [];
    const parser = new EventStreamParser((event, data) => seen.push([event, data]));
    const input =
      ':keepalive\r\n\r\nevent: MessageEnqueued\r\ndata: null\r\n\r\nevent: MessageCancelled\ndata: {"messageId":\ndata: "m1"}\n\ndata:null\n\nevent: NoData\n\n';
    for (const ch of input) parser.push(ch);
    expect(seen).toEqual([
      ["MessageEnqueued", "null"],
      ["MessageCancelled", '{"messageId":\n"m1"}'],
      [null, "null"],
    ]);
  });

  test("reconnects after 5 s, 30 s from the 6th failure and 60 s from the 11th", () => {
    expect([1, 5, 6, 10, 11, 50].map(reconnectDelay)).toEqual([5_000, 5_000, 30_000, 30_000, 60_000, 60_000]);
  });
});
