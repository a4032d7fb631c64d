// SMS to email and back, judged by Python's aiosmtpd as the relay Pigeon forwards through and
// smtplib as the staff's mail server answering: a received SMS is forwarded once, after its unit of
// work, retried when the relay is busy; its Reply-To leads back through the listener, and the reply
// goes out as an SMS to the customer from the device they wrote to, its quote stripped, in the same
// thread. Both back ends.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { simpleParser } from "mailparser";
import type { NetworkListener } from "../../src/modules/descriptor";
import { listen } from "../../src/modules/email";
import { FORWARD_RETRY_DELAYS_MS } from "../../src/modules/email/forward";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { appPhone } from "../helpers/phone";
import { headerOf, mailText, smtplibSession, startAiosmtpdRelay, stepOf } from "../helpers/smtp-judge";

const ANN = { name: "Ann Example", phone: "+14155552671" };

describe("received SMS forwarded by email, and replies", () => {
  let ctx: TestContext;
  let relay: Awaited<ReturnType<typeof startAiosmtpdRelay>>;
  let listener: NetworkListener;
  let smtp: number;
  let phone: Awaited<ReturnType<typeof appPhone>>;

  beforeAll(async () => {
    // The relay refuses the first mail it is given (451): the outbox must try again later.
    relay = await startAiosmtpdRelay(1);
    ctx = await createTestContext({
      config: {
        host: "127.0.0.1",
        smtp: {
          port: 0,
          tlsPort: null,
          plainLoopback: false,
          relay: { host: "127.0.0.1", port: relay.port, secure: false, requireTls: false, user: null, pass: null },
          from: "pigeon@shop.example",
        },
      },
    });
    await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 100_000, requestsPerDay: 1_000_000 });
    await ctx.topUp(1000);
    phone = await appPhone(ctx);
    expectEnvelope(await ctx.post("/v1/api/contact/create", { name: ANN.name, phone: ANN.phone }), 200);
    expectEnvelope(
      await ctx.call("PATCH", "/v1/api/email/settings", { body: { forward_to: ["Staff@Shop.example"], reply_domain: "sms.shop.example" } }),
      200,
    );
    listener = (await listen(ctx.services, ctx.app))!;
    smtp = Number(/:(\d+)/.exec(listener.describe())?.[1]);
  });
  afterAll(async () => {
    await listener.stop(0);
    relay.stop();
  });

  test("a received SMS is queued with it, sent once through the relay after a busy answer, with the thread's Reply-To", async () => {
    await phone.receive(ANN.phone, "Is my order ready?");
    const queued = expectEnvelope(await ctx.get("/v1/api/email/outbox"), 200).data.forwards as { status: string; to: string[] }[];
    expect(queued).toMatchObject([{ status: "pending", to: ["staff@shop.example"] }]);

    // First try: the relay answers 451; nothing is lost, the forward waits for its retry.
    expect(await ctx.services.emailForward.deliverDue()).toBe(0);
    expect(relay.mails.length).toBe(0);
    const waiting = expectEnvelope(await ctx.get("/v1/api/email/outbox"), 200).data.forwards[0];
    expect(waiting).toMatchObject({ status: "pending", attempts: 1 });
    expect(waiting.last_error).toContain("451");
    // Not before its time.
    expect(await ctx.services.emailForward.deliverDue()).toBe(0);
    ctx.clock.advance(FORWARD_RETRY_DELAYS_MS[0]);
    expect(await ctx.services.emailForward.deliverDue()).toBe(1);
    // Never twice.
    expect(await ctx.services.emailForward.deliverDue()).toBe(0);
    expect(relay.mails.length).toBe(1);

    const [mail] = relay.mails;
    expect(mail.from).toBe("pigeon@shop.example");
    expect(mail.to).toEqual(["staff@shop.example"]);
    const parsed = await simpleParser(mail.data);
    expect(parsed.subject).toBe(`SMS from ${ANN.name} (${ANN.phone})`);
    expect(parsed.text).toContain("Is my order ready?");
    expect(headerOf(mail.data, "Reply-To")).toMatch(/^reply-\d+-\d+-\d+-\d+-[0-9a-f]{20}@sms\.shop\.example$/);
    expect(expectEnvelope(await ctx.get("/v1/api/email/outbox"), 200).data.forwards[0]).toMatchObject({ status: "sent", attempts: 2 });
  });

  test("a reply to the forward is sent as an SMS to the customer through the device they wrote to, without the quote", async () => {
    const replyTo = headerOf(relay.mails[0].data, "Reply-To")!;
    const answer = mailText({
      from: "staff@shop.example",
      to: replyTo,
      subject: "Re: SMS",
      body: `Yes, come by after 3pm.\r\n\r\nOn Thu, 3 Dec 2026, Pigeon <pigeon@shop.example> wrote:\r\n> Is my order ready?\r\n`,
    });
    const steps = await smtplibSession({ port: smtp, tls: "none", from: "staff@shop.example", to: [replyTo], message: answer });
    expect(stepOf(steps, "mail")?.code).toBe(250);
    expect(stepOf(steps, "rcpt")?.code).toBe(250);
    expect(stepOf(steps, "data")?.code).toBe(250);
    const [sent] = await ctx.sql.all<{ recipient: string; message: string; device_id: number }>(
      "SELECT recipient, message, device_id FROM notification ORDER BY id DESC LIMIT 1",
    );
    expect(sent).toEqual({ recipient: ANN.phone, message: "Yes, come by after 3pm.", device_id: phone.deviceId });
    // Sent with the workspace's "Email bridge" key, made for it.
    const keys = await ctx.services.accounts.listKeys(ctx.workspace.id);
    expect(keys.find((k) => k.name === "Email bridge")?.scopes).toEqual(["send"]);
  });

  test("a reply that fails later: its sender gets a delivery status notification, and forward_to a failure notice", async () => {
    expectEnvelope(await ctx.call("PATCH", "/v1/api/email/settings", { body: { dsn: true, forward_failures: true } }), 200);
    const replyTo = headerOf(relay.mails[0].data, "Reply-To")!;
    const answer = mailText({ from: "staff@shop.example", to: replyTo, subject: "Re: pickup", body: "We close at 6." });
    const steps = await smtplibSession({ port: smtp, tls: "none", from: "staff@shop.example", to: [replyTo], message: answer });
    expect(stepOf(steps, "data")).toMatchObject({ code: 250 });
    const [{ id }] = await ctx.sql.all<{ id: number }>("SELECT id FROM notification ORDER BY id DESC LIMIT 1");
    expect(await ctx.services.state.transition(id, "failed", { errorCode: "carrier_rejected", reason: "The carrier refused it" })).toBe(
      true,
    );
    ctx.clock.advance(FORWARD_RETRY_DELAYS_MS.at(-1)!);
    const before = relay.mails.length;
    expect(await ctx.services.emailForward.deliverDue()).toBe(2);
    const [first, second] = relay.mails.slice(before);
    const byTo = new Map([first, second].map((m) => [m.to[0], m]));
    const dsn = await simpleParser(byTo.get("staff@shop.example")!.data);
    // staff@ is both the reply's sender and on forward_to: it gets the notice and the DSN, one each.
    expect([first, second].every((m) => m.to[0] === "staff@shop.example")).toBe(true);
    const subjects = (await Promise.all([first, second].map(async (m) => (await simpleParser(m.data)).subject))).sort();
    expect(subjects).toEqual([`Not delivered: message ${id} to ${ANN.phone}`, "Undelivered: Re: pickup"]);
    expect(dsn.headers.get("auto-submitted")).toBe("auto-generated");
    const texts = await Promise.all([first, second].map(async (m) => (await simpleParser(m.data)).text ?? ""));
    expect(texts.every((t) => t.includes("The carrier refused it (carrier_rejected)"))).toBe(true);
    // Once: a repeat of the failure (a late report) queues nothing more.
    await ctx.services.state.transition(id, "failed", { errorCode: "carrier_rejected" });
    expect(await ctx.services.emailForward.deliverDue()).toBe(0);
    expectEnvelope(await ctx.call("PATCH", "/v1/api/email/settings", { body: { dsn: false, forward_failures: false } }), 200);
  });

  test("an inbound rule's email action: its own addresses and subject, once per message; refused addresses name the field", async () => {
    const bad = await ctx.post("/v1/api/rule/create", {
      name: "Bad",
      match: { keyword: "x" },
      action: { email: { to: ["not-an-address"] } },
    });
    expect(expectEnvelope(bad, 400).data.field).toBe("action.email.to");
    const made = await ctx.post("/v1/api/rule/create", {
      name: "Urgent to the manager",
      match: { keyword: "urgent" },
      action: { email: { to: ["Manager@Shop.example"], subject: "URGENT from {name}: {text}" } },
    });
    expect(made.status).toBe(200);
    const before = relay.mails.length;
    await phone.receive(ANN.phone, "urgent: the door is jammed");
    ctx.clock.advance(FORWARD_RETRY_DELAYS_MS.at(-1)!);
    // Two forwards of the one message: the workspace's forward_to, and the rule's.
    expect(await ctx.services.emailForward.deliverDue()).toBe(2);
    expect(await ctx.services.emailForward.deliverDue()).toBe(0);
    const fresh = relay.mails.slice(before);
    const ruleMail = fresh.find((m) => m.to[0] === "manager@shop.example")!;
    expect((await simpleParser(ruleMail.data)).subject).toBe(`URGENT from ${ANN.name}: urgent: the door is jammed`);
    expect(fresh.map((m) => m.to[0]).sort()).toEqual(["manager@shop.example", "staff@shop.example"]);
  });

  test("erasing the customer's data removes the forwards that name them", async () => {
    const queued = await ctx.sql.all<{ n: number }>("SELECT COUNT(*) AS n FROM email_outbox WHERE subject LIKE ?", [
      `%${ANN.phone.slice(1)}%`,
    ]);
    expect(Number(queued[0].n)).toBeGreaterThan(0);
    const erased = expectEnvelope(await ctx.post("/v1/api/privacy/erase", { phone: ANN.phone }), 200).data.erased;
    expect(erased.email_forwards).toBeGreaterThanOrEqual(Number(queued[0].n));
    const left = await ctx.sql.all<{ n: number }>("SELECT COUNT(*) AS n FROM email_outbox WHERE subject LIKE ? OR body LIKE ?", [
      `%${ANN.phone.slice(1)}%`,
      `%${ANN.phone.slice(1)}%`,
    ]);
    expect(Number(left[0].n)).toBe(0);
  });

  test("no one else may reply: a stranger, or a reply address whose digest is wrong", async () => {
    const replyTo = headerOf(relay.mails[0].data, "Reply-To")!;
    const stranger = await smtplibSession({ port: smtp, tls: "none", from: "eve@evil.example", to: [replyTo] });
    expect(stepOf(stranger, "mail")?.code).toBe(530);
    const forged = replyTo.replace(/-([0-9a-f]{20})@/, (_m, mac: string) => `-${mac.slice(0, 19)}${mac[19] === "0" ? "1" : "0"}@`);
    const steps = await smtplibSession({ port: smtp, tls: "none", from: "staff@shop.example", to: [forged] });
    expect(stepOf(steps, "rcpt")?.code).toBe(550);
  });
});
