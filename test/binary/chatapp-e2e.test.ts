// The chat-app channel end to end on the compiled binary, against the fake platform over real HTTP:
// connect → template send → sent → delivered by webhook; inbound → freeform reply → accepted;
// window closed → 403 131047 with the templates listed.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { waitFor } from "../helpers/api";
import { isolatedBinary, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { bakeryWaba, startFakeChatApp, type FakeChatApp } from "../helpers/fake-chatapp";
import { RECIPIENT } from "../helpers/numbers";

const SECRET = "e2e-app-secret";
let fake: FakeChatApp;
let server: RunningServer;
let key: Credentials;

beforeAll(async () => {
  fake = startFakeChatApp({
    appSecret: SECRET,
    autoStatuses: ["sent", "delivered"],
    wabas: [bakeryWaba()],
  });
  server = await startServer(isolatedBinary(), {
    PIGEON_DATA_DIR: tempDir(),
    PIGEON_CHATAPP_GRAPH_URL: fake.url,
    PIGEON_CHATAPP_APP_SECRET: SECRET,
    PIGEON_CHATAPP_VERIFY_TOKEN: "e2e-verify",
  });
  key = server.initialKey!;
  fake.setWebhookUrl(`${server.url}/v1/webhooks/chatapp`);
});

afterAll(async () => {
  await server?.stop("SIGKILL");
  fake?.stop();
});

const api = (path: string, body?: unknown) => server.api(path, key, body);

test("the platform's verification handshake", async () => {
  const res = await fake.verify(`${server.url}/v1/webhooks/chatapp`, "e2e-verify", "challenge-123");
  expect(res.status).toBe(200);
  expect(await res.text()).toBe("challenge-123");
});

test("connect → template send → sent → delivered by webhook", async () => {
  const connected = await api("/v1/api/chatapp/connect", { access_token: "good-token" });
  expect(connected.status).toBe(200);
  expect(connected.body.data.devices).toHaveLength(1);
  const template = (await api("/v1/api/template/list?channel=chatapp")).body.data.templates.find(
    (t: { name: string }) => t.name === "order_ready",
  );
  const sent = await api("/v1/api/chatapp/send", {
    recipient_contact: RECIPIENT,
    template_id: template.template_id,
    variables: ["Ada", "A-7"],
  });
  expect(sent.status).toBe(200);
  const id = sent.body.data.notification_id;
  const n = await waitFor(
    "delivered",
    async () => {
      const x = (await api(`/v1/api/notification/${id}`)).body.data;
      return x.status === "delivered" ? x : null;
    },
    { intervalMs: 100 },
  );
  expect(n.logs.map((l: { event: string }) => l.event)).toEqual(["accepted", "attempt", "sent", "delivered"]);
  expect(fake.invalidRequests).toEqual([]);
  expect(fake.sent.at(-1)!.body).toMatchObject({ type: "template", to: RECIPIENT });
});

test("inbound → freeform reply inside the window → accepted and sent", async () => {
  const inbound = await fake.sendInbound({ phoneNumberId: "777", from: "14155550123", text: "Are you open today?", name: "Bob" });
  expect(inbound.response.status).toBe(200);
  const reply = await api("/v1/api/chatapp/send", { recipient_contact: "+14155550123", message: "Yes, until 6pm!" });
  expect(reply.status).toBe(200);
  await waitFor(
    "the reply to reach the platform",
    async () => (fake.sent.some((m) => m.type === "text" && m.to === "+14155550123") ? true : null),
    { intervalMs: 100 },
  );
  const thread = (await api("/v1/api/thread/list?channel=chatapp")).body.data.threads.find(
    (t: { peer: string }) => t.peer === "+14155550123",
  );
  expect(thread.window.open).toBe(true);
});

test("window closed → 403 with error_code 131047 and the templates listed", async () => {
  const closed = await api("/v1/api/chatapp/send", { recipient_contact: "+14155559999", message: "Hello?" });
  expect(closed.status).toBe(403);
  expect(closed.body.status_id).toBe(403);
  expect(closed.body.data).toMatchObject({ error_code: 131047, can_send_freeform: false, can_send_template: true });
  expect(closed.body.data.available_templates.map((t: { name: string }) => t.name)).toEqual(["order_ready"]);
});
