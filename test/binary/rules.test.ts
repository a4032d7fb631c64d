// Inbound rules on the compiled binary, with phones acting as the companion app does over HTTP
// (register with the pairing token, post signed sms:received webhooks, pull what to send): a
// keyword rule replies once within its window, through the SIM the message came in on, and not to
// an opted-out sender; a forward rule texts the staff number and a webhook rule posts the message
// signed; two servers whose rules answer every message stop after one reply each.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { waitFor } from "../helpers/api";
import type { RunningServer } from "../helpers/binary";
import { crashRig } from "../helpers/crash-setup";
import { pairAppPhone, type AppPhone } from "../helpers/app-phone-http";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";

const servers: RunningServer[] = [];
const receiver = { calls: [] as { headers: Headers; body: string }[], server: null as ReturnType<typeof Bun.serve> | null };

beforeAll(() => {
  receiver.server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (req) => {
      receiver.calls.push({ headers: req.headers, body: await req.text() });
      return new Response("ok");
    },
  });
});
afterAll(async () => {
  for (const s of servers) await s.stop("SIGKILL");
  receiver.server?.stop(true);
});

/** A server on a fresh data directory and a phone paired to it the way the app pairs. */
async function serverWithPhone() {
  const { rig, server } = await crashRig(null);
  servers.push(server);
  const key = rig.key;
  const { server_url: base, pairing_token: pairing } = (await server.api("/v1/api/device/pairing", key)).body.data;
  const phone = await pairAppPhone(base, pairing, "Shop phone");
  const rule = async (body: Record<string, unknown>) => {
    const reply = await server.api("/v1/api/rule/create", key, body);
    expect(reply.status).toBe(200);
    return reply.body.data;
  };
  return { server, key, phone, rule };
}

/** Pulls until something comes or `ms` pass (the reply is stored just after the inbound commits). */
async function pullWithin(phone: AppPhone, ms = 1500) {
  const got: { text: string; to: string; sim: number | null }[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until && got.length === 0) {
    got.push(...(await phone.pull()));
    if (got.length === 0) await Bun.sleep(50);
  }
  return got;
}

const ADA = RECIPIENT;
const BOB = SECOND_RECIPIENT;
const CAROL = "+14155552673";
const STAFF = "+14155550999";

describe("inbound rules on the binary", () => {
  let one: Awaited<ReturnType<typeof serverWithPhone>>;
  beforeAll(async () => {
    one = await serverWithPhone();
  }, 60_000);

  test("a keyword rule replies once within its window through the SIM it came in on, and not to an opted-out sender", async () => {
    await one.rule({ name: "Prices", match: { keyword: "PRICE" }, action: { reply: { text: "Our prices: example.com/prices" } } });
    await one.phone.receive(ADA, "Price?", 2);
    expect(await pullWithin(one.phone)).toEqual([{ text: "Our prices: example.com/prices", to: ADA, sim: 2 }]);
    await one.phone.receive(ADA, "price please");
    expect(await pullWithin(one.phone, 700)).toEqual([]);

    expect((await one.server.api("/v1/api/optout/add", one.key, { phone: BOB })).status).toBe(200);
    await one.phone.receive(BOB, "PRICE");
    expect(await pullWithin(one.phone, 700)).toEqual([]);
    const listed = (await one.server.api("/v1/api/rule/list", one.key)).body.data.rules[0];
    expect(listed.matched_count).toBe(3);
  });

  test("a forward rule texts the staff number; a webhook rule posts the message, signed with the rule's secret", async () => {
    await one.rule({ name: "Urgent", match: { regex: "urgent|asap" }, action: { forward: { to: STAFF } }, continue: true, priority: 1 });
    const hook = await one.rule({
      name: "CRM",
      match: { any: true },
      action: { webhook: { url: `http://127.0.0.1:${receiver.server!.port}/in` } },
      priority: 2,
    });
    await one.phone.receive(CAROL, "Urgent: the shop door is stuck");
    expect(await pullWithin(one.phone)).toEqual([{ text: "From +14155552673: Urgent: the shop door is stuck", to: STAFF, sim: null }]);
    // The worker delivers webhooks on its own rounds.
    await waitFor("the rule's webhook", () => receiver.calls.length > 0, { timeoutMs: 15_000 });
    const call = receiver.calls[0];
    expect(JSON.parse(call.body)).toMatchObject({
      type: "rule.matched",
      data: { rule_name: "CRM", message: { from: CAROL, body: "Urgent: the shop door is stuck", channel: "sms" } },
    });
    const [t, v1] = call.headers
      .get("x-pigeon-signature")!
      .split(",")
      .map((p) => p.split("=")[1]);
    expect(v1).toBe(createHmac("sha256", hook.action.webhook.secret).update(`${t}.${call.body}`).digest("hex"));
  });
});

describe("two servers answering each other", () => {
  test("their rules stop after one reply each", async () => {
    const [a, b] = [await serverWithPhone(), await serverWithPhone()];
    const numberA = "+14155550101";
    const numberB = "+14155550102";
    await a.rule({ name: "Echo", match: { any: true }, action: { reply: { text: "Thanks, A here" } } });
    await b.rule({ name: "Echo", match: { any: true }, action: { reply: { text: "Thanks, B here" } } });
    // What one phone is handed to send is received by the other, from the first's number.
    const carried: string[] = [];
    await a.phone.receive(numberB, "hello A");
    for (let round = 0; round < 6; round++) {
      for (const [from, to, fromNumber] of [
        [a, b, numberA],
        [b, a, numberB],
      ] as const) {
        for (const m of await pullWithin(from.phone, 400)) {
          carried.push(m.text);
          await to.phone.receive(fromNumber, m.text);
        }
      }
    }
    expect(carried).toEqual(["Thanks, A here", "Thanks, B here"]);
  }, 60_000);
});
