// The email bridge's SMTP listener, judged by real sending clients: Python's smtplib (STARTTLS,
// implicit TLS, AUTH PLAIN and LOGIN, many recipients) and Debian's swaks. Each mail becomes sends
// through the same checks as the API; refusals come back at the SMTP step that must give them, and
// the listener never relays for a stranger. Both back ends (the sends are stored in the database).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { NetworkListener } from "../../src/modules/descriptor";
import { emailModule, listen } from "../../src/modules/email";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { appPhone } from "../helpers/phone";
import { mailText, selfSignedCert, smtplibSession, stepOf, swaks } from "../helpers/smtp-judge";

const CERT = selfSignedCert();
const ANN = { name: "Ann Example", phone: "+14155552671" };
const BOB = "+14155550199";

interface Rig {
  ctx: TestContext;
  listener: NetworkListener;
  smtp: number;
  smtps: number;
  user: string;
  password: string;
}

async function rig(config: { plainLoopback?: boolean } = {}): Promise<Rig> {
  const ctx = await createTestContext({
    config: {
      host: "127.0.0.1",
      tls: { cert: CERT.cert, key: CERT.key },
      smtp: { port: 0, tlsPort: 0, plainLoopback: config.plainLoopback ?? false, relay: null, from: "pigeon@test.example" },
    },
  });
  await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 100_000, requestsPerDay: 1_000_000 });
  await ctx.topUp(1000);
  await appPhone(ctx);
  expectEnvelope(await ctx.post("/v1/api/contact/create", { name: ANN.name, phone: ANN.phone, tags: ["staff"] }), 200);
  const listener = (await emailModule.listen!(ctx.services, ctx.app))!;
  const ports = [...listener.describe().matchAll(/:(\d+)/g)].map((m) => Number(m[1]));
  return { ctx, listener, smtp: ports[0], smtps: ports[1], user: ctx.key.api_key, password: ctx.key.api_secret };
}

/** A context of its own with its own listener on loopback: plain sign-in allowed, or with `tls` STARTTLS required. */
async function ownListener(o: { tls?: boolean; limits?: Parameters<typeof listen>[2]; testing?: Parameters<typeof listen>[3] } = {}) {
  const ctx = await createTestContext({
    config: {
      host: "127.0.0.1",
      ...(o.tls ? { tls: { cert: CERT.cert, key: CERT.key } } : {}),
      smtp: { port: 0, tlsPort: null, plainLoopback: !o.tls, relay: null, from: "pigeon@test.example" },
    },
  });
  const listener = (await listen(ctx.services, ctx.app, o.limits, o.testing))!;
  return { ctx, listener, port: Number(/:(\d+)/.exec(listener.describe())?.[1]) };
}

async function sent(ctx: TestContext): Promise<{ recipient: string; message: string }[]> {
  return ctx.sql.all<{ recipient: string; message: string }>("SELECT recipient, message FROM notification ORDER BY id");
}

describe("email to SMS over SMTP", () => {
  let r: Rig;
  beforeAll(async () => {
    r = await rig();
  });
  afterAll(async () => {
    await r.listener.stop(0);
  });

  test("smtplib: STARTTLS, AUTH PLAIN, a number with punctuation and a contact's name; quoted text and signature stripped", async () => {
    const before = (await sent(r.ctx)).length;
    const body = "Door 3 alarm at 14:02.\r\n\r\n-- \r\nAcme Alarm Panel v2\r\n";
    const steps = await smtplibSession({
      port: r.smtp,
      tls: "starttls",
      user: r.user,
      password: r.password,
      from: "panel@alarm.example",
      to: ["+1-415-555-0199@sms.example", "ann.example@sms.example"],
      message: mailText({ from: "panel@alarm.example", to: "ops@sms.example", subject: "Alarm", body }),
    });
    expect(stepOf(steps, "starttls")?.code).toBe(220);
    expect(stepOf(steps, "auth")?.code).toBe(235);
    expect(steps.filter((s) => s.step === "rcpt").map((s) => s.code)).toEqual([250, 250]);
    const data = stepOf(steps, "data")!;
    expect(data.code).toBe(250);
    expect(data.text).toContain("Queued as 2 messages");
    const rows = (await sent(r.ctx)).slice(before);
    expect(rows.map((row) => row.recipient).sort()).toEqual([BOB, ANN.phone].sort());
    expect(rows.every((row) => row.message === "Door 3 alarm at 14:02.")).toBe(true);
  });

  test("smtplib: implicit TLS with AUTH LOGIN; the same mail again (a sending server's retry) sends nothing twice", async () => {
    const before = (await sent(r.ctx)).length;
    const message = mailText({
      from: "zabbix@monitor.example",
      to: "x@sms.example",
      subject: "Disk full",
      body: "Disk /var at 97% on db1\r\n\r\nOn Mon, 1 Dec 2026 at 10:00, Ops <ops@example.com> wrote:\r\n> earlier alert\r\n",
      messageId: "<retry-1@monitor.example>",
    });
    const plan = {
      port: r.smtps,
      tls: "implicit" as const,
      user: r.user,
      password: r.password,
      mechanism: "LOGIN" as const,
      from: "zabbix@monitor.example",
      to: ["14155550199@sms.example"],
      message,
    };
    const first = await smtplibSession(plan);
    expect(stepOf(first, "auth")?.code).toBe(235);
    expect(stepOf(first, "data")?.code).toBe(250);
    const again = await smtplibSession(plan);
    expect(stepOf(again, "data")?.code).toBe(250);
    const rows = (await sent(r.ctx)).slice(before);
    expect(rows).toEqual([{ recipient: BOB, message: "Disk /var at 97% on db1" }]);
  });

  test("no relay for strangers: MAIL FROM without AUTH is 530, and AUTH before TLS is 538", async () => {
    const before = (await sent(r.ctx)).length;
    const stranger = await smtplibSession({
      port: r.smtp,
      tls: "none",
      from: "spam@evil.example",
      to: ["victim@gmail.com"],
      message: "Subject: x\r\n\r\ny",
    });
    expect(stepOf(stranger, "mail")?.code).toBe(530);
    expect(stepOf(stranger, "mail")?.text).toContain("5.7.0 Authentication required: sign in with AUTH");
    expect(stepOf(stranger, "rcpt")).toBeUndefined();
    const plain = await smtplibSession({
      port: r.smtp,
      tls: "none",
      user: r.user,
      password: r.password,
      from: "a@b.example",
      to: [`${BOB}@sms.example`],
    });
    expect(stepOf(plain, "auth")?.code).toBe(538);
    expect(stepOf(plain, "mail")?.code).toBe(530);
    expect((await sent(r.ctx)).length).toBe(before);
  });

  test("the settings show the ports the listener took (PIGEON_SMTP_PORT=0 picks one)", async () => {
    const read = expectEnvelope(await r.ctx.get("/v1/api/email/settings"), 200).data;
    expect(read.listener).toEqual({ smtp_port: r.smtp, smtps_port: r.smtps });
    expect(r.smtp).toBeGreaterThan(0);
  });

  test("a wrong secret is 535; a key without the send scope is refused too", async () => {
    const wrong = await smtplibSession({ port: r.smtp, tls: "starttls", user: r.user, password: "sk_wrong", from: "a@b.example", to: [] });
    expect(stepOf(wrong, "auth")?.code).toBe(535);
    const reader = await r.ctx.services.accounts.createKey("reader", r.ctx.workspace.id, { scopes: ["messages:read"] });
    const denied = await smtplibSession({
      port: r.smtp,
      tls: "starttls",
      user: reader.api_key,
      password: reader.api_secret,
      from: "a@b.example",
      to: [],
    });
    expect(stepOf(denied, "auth")?.code).toBe(535);
    expect(stepOf(denied, "auth")?.text).toContain("send scope");
  });

  test("RCPT TO refuses an invalid number, an unknown name and an opted-out recipient with 5xx and the reason", async () => {
    expectEnvelope(await r.ctx.post("/v1/api/optout/add", { phone: "+14155550111" }), 200);
    const before = (await sent(r.ctx)).length;
    const steps = await smtplibSession({
      port: r.smtp,
      tls: "starttls",
      user: r.user,
      password: r.password,
      from: "a@b.example",
      to: ["12@sms.example", "nobody.here@sms.example", "+14155550111@sms.example", `${BOB}@sms.example`],
      message: mailText({ from: "a@b.example", to: "x@sms.example", subject: "s", body: "Hello" }),
    });
    const rcpt = steps.filter((s) => s.step === "rcpt");
    expect(rcpt.map((s) => s.code)).toEqual([550, 550, 550, 250]);
    expect(rcpt[0].text).toContain("5.1.3");
    expect(rcpt[1].text).toContain('No contact is named "nobody here"');
    expect(rcpt[2].text).toContain("recipient_opted_out");
    expect(stepOf(steps, "data")?.code).toBe(250);
    expect((await sent(r.ctx)).slice(before).map((row) => row.recipient)).toEqual([BOB]);
  });

  test("a tag is a bulk to its contacts; a long body is cut to the cap with a marker; HTML alone becomes text", async () => {
    const before = (await sent(r.ctx)).length;
    const long = "word ".repeat(2000);
    const steps = await smtplibSession({
      port: r.smtp,
      tls: "starttls",
      user: r.user,
      password: r.password,
      from: "a@b.example",
      to: ["tag-staff@sms.example"],
      message: mailText({ from: "a@b.example", to: "x@sms.example", subject: "s", body: long }),
    });
    expect(stepOf(steps, "data")?.code).toBe(250);
    const [row] = (await sent(r.ctx)).slice(before);
    expect(row.recipient).toBe(ANN.phone);
    expect(row.message.endsWith(" [cut]")).toBe(true);
    expect([...row.message].length).toBe(
      r.ctx.key ? (await r.ctx.services.authenticate(new Headers({ "x-api-key": r.user, "x-api-secret": r.password }))).smsLengthCap : 0,
    );

    const html = await smtplibSession({
      port: r.smtp,
      tls: "starttls",
      user: r.user,
      password: r.password,
      from: "a@b.example",
      to: [`${BOB}@sms.example`],
      message: mailText({
        from: "a@b.example",
        to: "x",
        subject: "s",
        body: "",
        html: "<html><body><p>Pump <b>2</b> stopped &amp; restarted</p></body></html>",
      }),
    });
    expect(stepOf(html, "data")?.code).toBe(250);
    expect((await sent(r.ctx)).at(-1)?.message).toBe("Pump 2 stopped & restarted");
  });

  test("the workspace's settings: the subject as the text, and national numbers read with the default country", async () => {
    expectEnvelope(await r.ctx.call("PATCH", "/v1/api/email/settings", { body: { content: "subject", default_country: "us" } }), 200);
    try {
      const steps = await smtplibSession({
        port: r.smtp,
        tls: "starttls",
        user: r.user,
        password: r.password,
        from: "a@b.example",
        to: ["415.555.0199@sms.example"],
        message: mailText({ from: "a@b.example", to: "x", subject: "UPS on battery", body: "details nobody reads" }),
      });
      expect(stepOf(steps, "rcpt")?.code).toBe(250);
      expect(stepOf(steps, "data")?.code).toBe(250);
      expect((await sent(r.ctx)).at(-1)).toEqual({ recipient: BOB, message: "UPS on battery" });
    } finally {
      await r.ctx.call("PATCH", "/v1/api/email/settings", { body: { content: "body", default_country: null } });
    }
  });

  test("limits: the 51st recipient is 452 and a message over the size is 552, nothing stored for it", async () => {
    const before = (await sent(r.ctx)).length;
    const many = Array.from({ length: 51 }, (_, i) => `+1415555${String(1000 + i).padStart(4, "0")}@sms.example`);
    const steps = await smtplibSession({
      port: r.smtp,
      tls: "starttls",
      user: r.user,
      password: r.password,
      from: "a@b.example",
      to: many,
    });
    const rcpt = steps.filter((s) => s.step === "rcpt");
    expect(rcpt.slice(0, 50).every((s) => s.code === 250)).toBe(true);
    expect(rcpt[50].code).toBe(452);
    const big = await smtplibSession({
      port: r.smtp,
      tls: "starttls",
      user: r.user,
      password: r.password,
      from: "a@b.example",
      to: [`${BOB}@sms.example`],
      message: mailText({ from: "a@b.example", to: "x", subject: "s", body: "x".repeat(1100 * 1024) }),
    });
    expect([552, 0]).toContain((stepOf(big, "data") ?? stepOf(big, "error") ?? stepOf(big, "disconnected"))!.code);
    expect((await sent(r.ctx)).length).toBe(before);
  });

  test("swaks: STARTTLS and AUTH LOGIN, as a monitoring tool's mail", async () => {
    const before = (await sent(r.ctx)).length;
    const run = await swaks([
      "--server",
      `127.0.0.1:${r.smtp}`,
      "--tls",
      "--auth",
      "LOGIN",
      "--auth-user",
      r.user,
      "--auth-password",
      r.password,
      "--from",
      "kuma@uptime.example",
      "--to",
      `${BOB.slice(1)}@sms.example`,
      "--header",
      "Subject: [Down] shop.example",
      "--body",
      "shop.example is down (HTTP 502)",
    ]);
    expect(run.transcript).toContain("250 2.0.0 Queued as message");
    expect(run.code).toBe(0);
    expect((await sent(r.ctx)).slice(before)).toEqual([{ recipient: BOB, message: "shop.example is down (HTTP 502)" }]);
  });

  test("the secret address: an allowed sender needs no AUTH; another sender, or a wrong token, is refused", async () => {
    const issued = expectEnvelope(await r.ctx.post("/v1/api/email/secret-address/rotate"), 200).data as { token: string };
    expectEnvelope(
      await r.ctx.call("PATCH", "/v1/api/email/settings", { body: { senders: ["nas@home.example", "@printers.example"] } }),
      200,
    );
    const before = (await sent(r.ctx)).length;
    const mail = (from: string) => mailText({ from, to: "x", subject: "s", body: "Backup finished" });
    const ok = await smtplibSession({
      port: r.smtp,
      tls: "none",
      from: "NAS@home.example",
      to: [`${issued.token}+${BOB}@sms.example`],
      message: mail("nas@home.example"),
    });
    expect(stepOf(ok, "mail")?.code).toBe(250);
    expect(stepOf(ok, "rcpt")?.code).toBe(250);
    expect(stepOf(ok, "data")?.code).toBe(250);
    const domain = await smtplibSession({
      port: r.smtp,
      tls: "none",
      from: "hp@printers.example",
      to: [`${issued.token}+${BOB}@sms.example`],
      message: mail("hp@printers.example"),
    });
    expect(stepOf(domain, "data")?.code).toBe(250);
    const other = await smtplibSession({
      port: r.smtp,
      tls: "none",
      from: "x@elsewhere.example",
      to: [`${issued.token}+${BOB}@sms.example`],
    });
    expect(stepOf(other, "mail")?.code).toBe(530);
    const wrongToken = await smtplibSession({
      port: r.smtp,
      tls: "none",
      from: "nas@home.example",
      to: [`sWrongTokenWrongToken0123+${BOB}@sms.example`],
    });
    expect(stepOf(wrongToken, "rcpt")?.code).toBe(550);
    expect((await sent(r.ctx)).slice(before).length).toBe(2);

    // Removed: the token no longer opens anything.
    expectEnvelope(await r.ctx.call("DELETE", "/v1/api/email/secret-address"), 200);
    const closed = await smtplibSession({
      port: r.smtp,
      tls: "none",
      from: "nas@home.example",
      to: [`${issued.token}+${BOB}@sms.example`],
    });
    expect(stepOf(closed, "mail")?.code).toBe(530);
  });
});

describe("settings through the API", () => {
  test("bad values are 400 validation_error naming the field; the listener's ports are shown", async () => {
    const ctx = await createTestContext();
    const country = await ctx.call("PATCH", "/v1/api/email/settings", { body: { default_country: "XX" } });
    expect(expectEnvelope(country, 400).data.field).toBe("default_country");
    const senders = await ctx.call("PATCH", "/v1/api/email/settings", { body: { senders: ["not an address"] } });
    expect(expectEnvelope(senders, 400).data.field).toBe("senders");
    const unknown = await ctx.call("PATCH", "/v1/api/email/settings", { body: { colour: "red" } });
    expect(expectEnvelope(unknown, 400).data.error_code).toBe("validation_error");
    const read = expectEnvelope(await ctx.get("/v1/api/email/settings"), 200).data;
    expect(read).toMatchObject({
      content: "body",
      default_country: null,
      senders: [],
      secret_address: null,
      listener: { smtp_port: null },
    });
  });
});

describe("limits of memory and time", () => {
  test("mail past the bytes held for all sessions is 452 (retried later); a session past its time is closed with 421", async () => {
    const { ctx, listener, port } = await ownListener({ limits: { bufferedBytes: 4096, sessionMs: 1500 } });
    await appPhone(ctx);
    await ctx.topUp(100);
    try {
      const big = await smtplibSession({
        port,
        tls: "none",
        user: ctx.key.api_key,
        password: ctx.key.api_secret,
        from: "a@b.example",
        to: ["+14155550199@sms.example"],
        message: mailText({ from: "a@b.example", to: "x", subject: "s", body: "y".repeat(8000) }),
      });
      expect(stepOf(big, "data")).toMatchObject({ code: 452 });
      expect(stepOf(big, "data")?.text).toContain("4.3.1");
      // The budget is given back: a small mail goes right after.
      const small = await smtplibSession({
        port,
        tls: "none",
        user: ctx.key.api_key,
        password: ctx.key.api_secret,
        from: "a@b.example",
        to: ["+14155550199@sms.example"],
        message: mailText({ from: "a@b.example", to: "x", subject: "s", body: "short" }),
      });
      expect(stepOf(small, "data")?.code).toBe(250);

      const { connect } = await import("node:net");
      const heard = await new Promise<string>((resolve) => {
        let got = "";
        const socket = connect(port, "127.0.0.1");
        socket.on("data", (chunk) => {
          got += chunk.toString();
        });
        socket.once("data", () => socket.write("EHLO judge.example\r\n"));
        socket.on("close", () => resolve(got));
      });
      expect(heard).toContain("421 4.4.2 Session time limit reached");
    } finally {
      await listener.stop(0);
    }
  });
});

describe("STARTTLS when the terminator is slow to take the connection", () => {
  // Before the fix these handshakes timed out (and one hung a loaded CI run's swaks for its 30 s);
  // six at once make a regression show.
  test("a ClientHello that comes before the terminator is ready is kept: every handshake completes", async () => {
    const { ctx, listener, port } = await ownListener({ tls: true, testing: { terminatorDelayMs: 300 } });
    try {
      const plan = { port, tls: "starttls" as const, user: ctx.key.api_key, password: ctx.key.api_secret, from: "a@b.example", to: [] };
      const sessions = await Promise.all(Array.from({ length: 6 }, () => smtplibSession(plan)));
      for (const steps of sessions) {
        expect(stepOf(steps, "starttls")?.code).toBe(220);
        expect(stepOf(steps, "auth")?.code).toBe(235);
        expect(stepOf(steps, "mail")?.code).toBe(250);
      }
    } finally {
      await listener.stop(0);
    }
  });
});

describe("garbage on the wire", () => {
  test("commands out of turn, bad AUTH, NUL bytes and random lines each get a refusal, a 64 KB line 421; the listener serves on", async () => {
    const { ctx, listener, port } = await ownListener();
    try {
      const { connect } = await import("node:net");
      const lines = [
        "EHLO fuzz.example",
        "DATA",
        "RCPT TO:<+14155550199@sms.example>",
        "MAIL FROM:<not an address",
        "AUTH PLAIN !!!notbase64!!!",
        "AUTH CRAM-MD5",
        "\u0000\u0001\u0002 BOGUS",
        "VRFY root",
      ];
      let rng = 7;
      // (smtp-server closes a session after ten unknown commands: six random ones stay under that.)
      for (let i = 0; i < 6; i++) {
        rng = (rng * 1103515245 + 12345) % 2 ** 31;
        lines.push(Array.from({ length: 5 + (rng % 40) }, (_, j) => String.fromCharCode(33 + ((rng >> (j % 16)) % 90))).join(""));
      }
      // Last: a line far past any limit, which the listener answers 421 and closes on.
      lines.push(`MAIL FROM:<${"a".repeat(65_536)}@x.example>`);
      const transcript = await new Promise<string>((resolve) => {
        let got = "";
        const socket = connect(port, "127.0.0.1");
        socket.on("data", (chunk) => {
          got += chunk.toString();
        });
        socket.once("data", () => {
          socket.write(`${lines.join("\r\n")}\r\nQUIT\r\n`);
        });
        socket.on("close", () => resolve(got));
        setTimeout(() => socket.destroy(), 10_000);
      });
      const codes = transcript
        .split("\r\n")
        .map((l) => Number(l.slice(0, 3)))
        .filter((c) => c > 0);
      expect(codes[0]).toBe(220);
      // Every line is answered, none dropped: the seven after EHLO (VRFY with 252, the rest refused)
      // and the six random ones, then the overlong line with 421 and the close.
      const afterEhlo = codes.slice(codes.lastIndexOf(250) + 1);
      expect(afterEhlo.length).toBe(7 + 6 + 1);
      expect(afterEhlo.filter((c) => c >= 500).length).toBe(12);
      expect(afterEhlo.at(-1)).toBe(421);
      // Still serving: a real client goes through after it.
      const steps = await smtplibSession({
        port,
        tls: "none",
        user: ctx.key.api_key,
        password: ctx.key.api_secret,
        from: "a@b.example",
        to: [],
      });
      expect(stepOf(steps, "auth")?.code).toBe(235);
      expect(stepOf(steps, "mail")?.code).toBe(250);
    } finally {
      await listener.stop(0);
    }
  });
});

describe("a key's rate limit", () => {
  test("past the plan's requests a minute, RCPT TO is 451 4.7.1: the sending server tries again later", async () => {
    const limited = await rig({ plainLoopback: true });
    try {
      await limited.ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 2, requestsPerDay: 1000 });
      // A key of its own: the rig's key made requests of its own already this minute.
      const mailer = await limited.ctx.services.accounts.createKey("mailer", limited.ctx.workspace.id, { scopes: ["send"] });
      const to = ["+14155550101", "+14155550102", "+14155550103", "+14155550104"].map((n) => `${n}@sms.example`);
      const steps = await smtplibSession({
        port: limited.smtp,
        tls: "none",
        user: mailer.api_key,
        password: mailer.api_secret,
        from: "a@b.example",
        to,
      });
      const codes = steps.filter((s) => s.step === "rcpt").map((s) => s.code);
      expect(codes.slice(0, 2)).toEqual([250, 250]);
      expect(codes.slice(2)).toEqual([451, 451]);
      expect(steps.filter((s) => s.step === "rcpt")[2].text).toContain("4.7.1");
    } finally {
      await limited.listener.stop(0);
    }
  });
});

describe("a rule's email action without a relay", () => {
  test("the rule tester says it would email nothing, and why", async () => {
    const ctx = await createTestContext();
    expectEnvelope(
      await ctx.post("/v1/api/rule/create", { name: "Mail", match: { any: true }, action: { email: { to: ["a@shop.example"] } } }),
      200,
    );
    const matches = expectEnvelope(await ctx.post("/v1/api/rule/test", { body: "hello", from: "+14155552671" }), 200).data.matches as {
      actions: { action: string; done: boolean; reason: string | null }[];
    }[];
    expect(matches[0].actions).toEqual([{ action: "email", done: false, reason: "no mail relay is configured (PIGEON_SMTP_RELAY_URL)" }]);
  });
});

describe("loopback without TLS, when allowed", () => {
  test("PIGEON_SMTP_PLAIN_LOOPBACK=1 lets a loopback client sign in before STARTTLS", async () => {
    const loop = await rig({ plainLoopback: true });
    try {
      const steps = await smtplibSession({
        port: loop.smtp,
        tls: "none",
        user: loop.user,
        password: loop.password,
        from: "a@b.example",
        to: [`${BOB}@sms.example`],
        message: mailText({ from: "a@b.example", to: "x", subject: "s", body: "plain on loopback" }),
      });
      expect(stepOf(steps, "auth")?.code).toBe(235);
      expect(stepOf(steps, "data")?.code).toBe(250);
    } finally {
      await loop.listener.stop(0);
    }
  });
});

describe("limits per address", () => {
  test("a flood from one address is answered 451 at MAIL FROM; connections past the cap are 421", async () => {
    const { ctx, listener, port } = await ownListener({ limits: { messagesPerMinute: 2, perAddress: 2 } });
    try {
      const codes: number[] = [];
      for (let i = 0; i < 3; i++) {
        const steps = await smtplibSession({
          port,
          tls: "none",
          user: ctx.key.api_key,
          password: ctx.key.api_secret,
          from: "a@b.example",
          to: [],
        });
        codes.push(stepOf(steps, "mail")!.code);
      }
      expect(codes).toEqual([250, 250, 451]);

      // Two connections held open; the third is turned away at once.
      const { connect } = await import("node:net");
      const greet = (p: number) =>
        new Promise<{ socket: import("node:net").Socket; banner: string }>((resolve) => {
          const socket = connect(p, "127.0.0.1");
          socket.once("data", (chunk) => resolve({ socket, banner: chunk.toString() }));
        });
      const held = [await greet(port), await greet(port)];
      const third = await greet(port);
      expect(held.every((h) => h.banner.startsWith("220"))).toBe(true);
      expect(third.banner.startsWith("421")).toBe(true);
      for (const h of [...held, third]) h.socket.destroy();
    } finally {
      await listener.stop(0);
    }
  });
});
