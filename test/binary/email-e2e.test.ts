// The email bridge both ways on the compiled binary, with a phone acting as the companion app over
// HTTP, Python's aiosmtpd as the mail relay and smtplib as the staff's mail server: a received SMS
// is forwarded by email through the relay, the reply to it comes back through the listener and is
// pulled by the phone as an SMS to the customer on the SIM they wrote to, and the conversation
// shows both directions. A restart between the two loses nothing. On SQLite and on PostgreSQL.
import { afterAll, describe, expect, test } from "bun:test";
import { waitFor } from "../helpers/api";
import { pairAppPhone } from "../helpers/app-phone-http";
import type { RunningServer } from "../helpers/binary";
import { crashRig } from "../helpers/crash-setup";
import { RECIPIENT } from "../helpers/numbers";
import { postgresBin, postgresCluster } from "../helpers/postgres";
import { headerOf, mailText, smtplibSession, startAiosmtpdRelay, stepOf } from "../helpers/smtp-judge";

const servers: RunningServer[] = [];
const relays: { stop(): void }[] = [];
afterAll(async () => {
  for (const s of servers) await s.stop("SIGKILL");
  for (const r of relays) r.stop();
});

const smtpPort = (s: RunningServer) => Number(/smtp on [^:\s]+:(\d+)/.exec(s.output())?.[1]);

/** A port free now, so the restarted server answers the phone where the first one did. */
function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

async function bothWays(extraEnv: Record<string, string>) {
  const relay = await startAiosmtpdRelay();
  relays.push(relay);
  const { rig, server: first } = await crashRig(null, {
    PIGEON_PORT: String(freePort()),
    PIGEON_SMTP_PORT: "0",
    PIGEON_SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}`,
    PIGEON_SMTP_FROM: "pigeon@shop.example",
    ...extraEnv,
  });
  let server = first;
  servers.push(server);
  const key = rig.key;
  const settings = await server.api("/v1/api/email/settings", key);
  expect(settings.body.data.relay).toBe(true);
  const patch = await server.fetch("/v1/api/email/settings", {
    method: "PATCH",
    key,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ forward_to: ["desk@shop.example"], reply_domain: "sms.shop.example" }),
  });
  expect(patch.status).toBe(200);
  const { server_url: base, pairing_token: pairing } = (await server.api("/v1/api/device/pairing", key)).body.data;
  const phone = await pairAppPhone(base, pairing, "Shop phone");

  await phone.receive(RECIPIENT, "Do you open on Sunday?", 2);
  const mail = await waitFor("the forward at the relay", () => relay.mails[0], { timeoutMs: 20_000 });
  expect(mail.to).toEqual(["desk@shop.example"]);
  expect(mail.data).toContain("Do you open on Sunday?");
  const replyTo = headerOf(mail.data, "Reply-To")!;
  expect(replyTo).toMatch(/@sms\.shop\.example$/);

  // A restart between the forward and the reply: the reply address still works.
  expect(await server.stop("SIGTERM")).toBe(0);
  server = await rig.start();
  servers.push(server);
  const answer = mailText({
    from: "desk@shop.example",
    to: replyTo,
    subject: "Re: SMS",
    body: "Yes, 10 to 4.\r\n\r\nOn Thu, Pigeon wrote:\r\n> Do you open on Sunday?\r\n",
  });
  const steps = await smtplibSession({ port: smtpPort(server), tls: "none", from: "desk@shop.example", to: [replyTo], message: answer });
  expect(stepOf(steps, "data")?.code).toBe(250);

  const pulled = await waitFor(
    "the reply pulled by the phone",
    async () => {
      const got = await phone.pull();
      return got.length > 0 ? got : null;
    },
    { timeoutMs: 20_000, intervalMs: 200 },
  );
  expect(pulled).toMatchObject([{ text: "Yes, 10 to 4.", to: RECIPIENT, sim: 2 }]);

  const threads = (await server.api("/v1/api/thread/list?limit=5", key)).body.data.threads as { thread_id: number; peer: string }[];
  const thread = threads.find((t) => t.peer === RECIPIENT)!;
  const messages = await waitFor(
    "both directions in the conversation",
    async () => {
      const list = (await server.api(`/v1/api/thread/${thread.thread_id}/messages?limit=10`, key)).body.data.messages as {
        direction: string;
        body: string;
      }[];
      return list.length >= 2 ? list : null;
    },
    { timeoutMs: 20_000, intervalMs: 250 },
  );
  expect(messages.map((m) => `${m.direction}: ${m.body}`).sort()).toEqual(["inbound: Do you open on Sunday?", "outbound: Yes, 10 to 4."]);
  expect(await server.stop("SIGTERM")).toBe(0);
}

const TITLE = "a received SMS is forwarded by email, and the reply by email reaches the customer by SMS, across a restart";

describe("on SQLite", () => {
  test(TITLE, () => bothWays({}), 120_000);
});

describe.skipIf(!postgresBin())("on PostgreSQL", () => {
  test(TITLE, async () => {
    const pg = await postgresCluster();
    await bothWays({ PIGEON_DATABASE_URL: await pg.createDatabase("email_e2e") });
  }, 120_000);
});
