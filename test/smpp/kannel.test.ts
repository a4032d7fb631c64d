// The SMPP listener on the compiled binary, judged by Debian's Kannel (bearerbox and smsbox), an
// ESME we did not write, configured as docs/smpp.md says. Sent through smsbox's sendsms as a user
// sends: a GSM text, a long one that Kannel splits into parts and Pigeon stores as one message, and
// a Unicode one; each reaches a phone pulling over HTTP as the app does, and the phone's Delivered
// comes back through Kannel as a delivery report of type 1. SMS the phone receives, a long Unicode
// one among them, reach Kannel's sms-service. On SQLite, and on PostgreSQL when a cluster can be had.
import { afterAll, describe, expect, test } from "bun:test";
import { settle, waitFor } from "../helpers/api";
import { pairAppPhone } from "../helpers/app-phone-http";
import { runCommand, type RunningServer } from "../helpers/binary";
import { crashRig } from "../helpers/crash-setup";
import { type Kannel, startKannel } from "../helpers/kannel";
import { RECIPIENT } from "../helpers/numbers";
import { postgresBin, postgresCluster } from "../helpers/postgres";

const HOST = "127.0.0.1";
const SENDER = "+14155550199";
const SHOP_NUMBER = "+14155550123";

const servers: RunningServer[] = [];
const kannels: Kannel[] = [];
const recorders: { stop(): void }[] = [];
afterAll(async () => {
  for (const k of kannels) await k.stop();
  for (const s of servers) await s.stop("SIGKILL");
  for (const r of recorders) r.stop();
});

const smppPort = (s: RunningServer) => Number(/smpp on [^:\s]+:(\d+)/.exec(s.output())?.[1]);

/** The HTTP side Kannel calls: its sms-service's get-url (received SMS) and each message's dlr-url. */
function startRecorder() {
  const mo: URLSearchParams[] = [];
  const dlr: URLSearchParams[] = [];
  const server = Bun.serve({
    hostname: HOST,
    port: 0,
    fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === "/mo") mo.push(url.searchParams);
      else if (url.pathname === "/dlr") dlr.push(url.searchParams);
      return new Response("", { status: 200 });
    },
  });
  const recorder = { url: `http://${HOST}:${server.port}`, mo, dlr, stop: () => server.stop(true) };
  recorders.push(recorder);
  return recorder;
}

const GSM_TEXT = "Your table for 2 is ready at 7pm [deposit €10]. Reply STOP to opt out.";
const LONG_TEXT =
  "Your order 4417 has shipped: three boxes, carried by the courier of your choice, should arrive on Thursday between nine and noon. " +
  "Someone must sign for them; if nobody is in, the courier leaves a card with the depot's address and hours.";
const UNICODE_TEXT = "Привет 👋 Grüße";
const LONG_UNICODE =
  "Спасибо за заказ! 📦 Мы отправили его сегодня, курьер привезёт посылку в четверг с девяти до полудня. " +
  "Если никого не будет дома, он оставит извещение. Grüße aus Berlin 👋";

interface Send {
  name: string;
  text: string;
  params: Record<string, string>;
  /** The SMS Kannel splits it into. */
  parts?: number;
}

const SENDS: Send[] = [
  { name: "gsm", text: GSM_TEXT, params: {} },
  { name: "long", text: LONG_TEXT, params: {}, parts: 2 },
  { name: "unicode", text: UNICODE_TEXT, params: { coding: "2", charset: "UTF-8" } },
];

async function throughKannel(extraEnv: Record<string, string>, sends: Send[], received: string[]) {
  const { rig, server } = await crashRig(null, { PIGEON_SMPP_PORT: "0", ...extraEnv });
  servers.push(server);
  const port = smppPort(server);
  expect(port).toBeGreaterThan(0);
  const issued = await runCommand(rig.bin, ["smpp", "credentials", "--json"], rig.env);
  expect(issued.code).toBe(0);
  const creds = JSON.parse(issued.stdout) as { system_id: string; password: string };
  expect(creds.password).toMatch(/^\S{8}$/);

  const { server_url: base, pairing_token: pairing } = (await server.api("/v1/api/device/pairing", rig.key)).body.data;
  const phone = await pairAppPhone(base, pairing, "Shop phone");
  // Kannel refuses a deliver_sm without a destination_addr, and the app does not tell its SIMs'
  // numbers: the phone's number is given as its pool member's.
  const device = (await server.api("/v1/api/device/list", rig.key)).body.data.devices[0] as { device_id: number };
  const pool = await server.api("/v1/api/pool/create", rig.key, {
    name: "Shop line",
    members: [{ device_id: device.device_id, number: SHOP_NUMBER }],
  });
  expect(pool.status).toBe(200);
  const recorder = startRecorder();
  const kannel = await startKannel({
    smppPort: port,
    systemId: creds.system_id,
    password: creds.password,
    getUrl: `${recorder.url}/mo?from=%p&to=%P&text=%a&coding=%c&charset=%C`,
  });
  kannels.push(kannel);
  const detail = kannel.logs;

  await waitFor(
    "Kannel's smsc online, bound to Pigeon as a transceiver, and its smsbox connected",
    async () => {
      const metrics = await (await server.fetch("/metrics")).text();
      return (await kannel.online()) && metrics.includes('pigeon_smpp_binds{kind="transceiver"} 1');
    },
    { timeoutMs: 20_000, intervalMs: 200, detail },
  );

  // Sent through smsbox as a user sends, each asking for delivery reports.
  for (const s of sends) {
    const dlrUrl = `${recorder.url}/dlr?type=%d&id=${s.name}`;
    const sent = await kannel.sendsms({ to: RECIPIENT, from: "Shop", text: s.text, "dlr-mask": "3", "dlr-url": dlrUrl, ...s.params });
    expect(sent).toMatchObject({ status: 202, body: expect.stringContaining("Accepted for delivery") });
  }
  // A message the phone has not reported on yet is handed to it again: it holds each once, as the app does.
  const held = new Map<string, { id: string; text: string; to: string }>();
  await waitFor(
    "every message pulled by the phone",
    async () => {
      for (const m of await phone.take()) held.set(m.id, m);
      return held.size >= sends.length;
    },
    { timeoutMs: 20_000, intervalMs: 200, detail },
  );
  const pulled = [...held.values()];
  expect(pulled.map((m) => m.text).sort()).toEqual(sends.map((s) => s.text).sort());
  expect(pulled.every((m) => m.to === RECIPIENT)).toBe(true);
  await phone.report(pulled, "Sent");
  await phone.report(pulled, "Delivered");

  // The receipts went back through Kannel: each message's dlr-url called with type 1 (delivered).
  const names = sends.map((s) => s.name);
  await waitFor(
    "a delivered report for every message",
    () => names.every((name) => recorder.dlr.some((d) => d.get("id") === name && d.get("type") === "1")),
    { timeoutMs: 20_000, intervalMs: 200, detail },
  );
  expect(recorder.dlr.map((d) => `${d.get("id")}:${d.get("type")}`).sort()).toEqual(names.map((name) => `${name}:1`).sort());

  // Kannel sent the long text in parts (a submit_sm each); Pigeon stored one message for each send, the long one whole.
  const metrics = await (await server.fetch("/metrics")).text();
  const parts = sends.reduce((n, s) => n + (s.parts ?? 1), 0);
  expect(metrics).toContain(`pigeon_smpp_pdus_total{command="submit_sm",status=""} ${parts}`);
  expect(metrics).toContain(`pigeon_smpp_pdus_total{command="submit_sm_resp",status="0"} ${parts}`);
  const list = (await server.api("/v1/api/notification/list?limit=20", rig.key)).body.data;
  const stored = list.notifications as { message: string; status: string; recipient: string }[];
  expect(stored.map((n) => n.message).sort()).toEqual(sends.map((s) => s.text).sort());
  expect(stored.every((n) => n.status === "delivered" && n.recipient === RECIPIENT)).toBe(true);

  // SMS the phone receives reach Kannel's sms-service, with their sender and text.
  for (const text of received) await phone.receive(SENDER, text);
  await waitFor("every received SMS at Kannel's sms-service", () => recorder.mo.length >= received.length, {
    timeoutMs: 20_000,
    intervalMs: 200,
    detail,
  });
  const byText = (a: { text: string | null }, b: { text: string | null }) => String(a.text).localeCompare(String(b.text));
  expect(recorder.mo.map((m) => ({ from: m.get("from"), to: m.get("to"), text: m.get("text") })).sort(byText)).toEqual(
    received.map((text) => ({ from: SENDER, to: SHOP_NUMBER, text })).sort(byText),
  );
  // Pigeon sent the long one in parts, and Kannel took every deliver_sm: each part's receipt and each part of what the phone received.
  const delivered = parts + received.reduce((n, text) => n + (RECEIVED_PARTS[text] ?? 1), 0);
  const settled = [
    `pigeon_smpp_pdus_total{command="deliver_sm_resp",status="0"} ${delivered}`,
    `pigeon_smpp_outbox_waiting{kind="message"} 0`,
    `pigeon_smpp_outbox_waiting{kind="receipt"} 0`,
  ];
  let metricsNow = "";
  const done = await settle(async () => {
    metricsNow = await (await server.fetch("/metrics")).text();
    return settled.every((line) => metricsNow.includes(line));
  }, 10_000);
  expect(done ? settled : metricsNow.split("\n").filter((l) => l.startsWith("pigeon_smpp"))).toEqual(settled);
}

const RECEIVED = ["Is the shop open on Sunday?", LONG_UNICODE];
/** The UCS-2 SMS Pigeon splits a received text into (67 characters each under a concatenation header). */
const RECEIVED_PARTS: Record<string, number> = { [LONG_UNICODE]: 3 };
const TITLE =
  "Kannel sends GSM, long and Unicode texts through a phone and gets their delivery reports; received SMS, long Unicode among them, reach its sms-service";

describe("on SQLite", () => {
  test(TITLE, () => throughKannel({}, SENDS, RECEIVED), 60_000);
});

describe.skipIf(!postgresBin())("on PostgreSQL", () => {
  test(TITLE, async () => {
    const pg = await postgresCluster();
    await throughKannel({ PIGEON_DATABASE_URL: await pg.createDatabase("smpp_kannel") }, SENDS, RECEIVED);
  }, 60_000);
});
