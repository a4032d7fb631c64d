// Twilio's Messages API on the compiled binary, judged by the real `twilio` package: the account
// SID and token from `pigeon twilio credentials --json`, a message sent and read back, a rotated
// token that takes over from the old one at once; status callbacks and incoming-message posts that
// `twilio.validateRequest` accepts, and a TwiML reply (written with the package's MessagingResponse)
// reaching the sender through the phone, which acts as the companion app does over HTTP; and
// Verify: a code the phone is handed, approved by `verificationChecks.create`, a wrong one refused.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import twilio from "twilio";
import { waitFor } from "../helpers/api";
import { pairAppPhone, type AppPhone } from "../helpers/app-phone-http";
import { runCommand, type RunningServer } from "../helpers/binary";
import { crashRig, type CrashRig } from "../helpers/crash-setup";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";

let rig: CrashRig;
let server: RunningServer;

let phone: AppPhone;
const posted: { path: string; url: string; signature: string; token: string; params: Record<string, string> }[] = [];
let holding = false;
let receiver: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  ({ rig, server } = await crashRig(null));
  const pairing = (await server.api("/v1/api/device/pairing", rig.key)).body.data;
  phone = await pairAppPhone(pairing.server_url, pairing.pairing_token, "Shop phone");
  // A customer's server: it records each post, and answers an incoming message with TwiML.
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const params = Object.fromEntries(new URLSearchParams(await req.text()));
      posted.push({
        path: url.pathname,
        url: req.url,
        signature: req.headers.get("x-twilio-signature") ?? "",
        token: req.headers.get("i-twilio-idempotency-token") ?? "",
        params,
      });
      // Held: the call stays unanswered while the test kills the server.
      if (url.pathname === "/held" && holding) await new Promise((resolve) => setTimeout(resolve, 60_000));
      if (url.pathname !== "/in" && url.pathname !== "/held") return new Response(null, { status: 204 });
      const answer = new twilio.twiml.MessagingResponse();
      answer.message(`Thanks ${params.From}, we got "${params.Body}"`);
      return new Response(answer.toString(), { headers: { "content-type": "text/xml" } });
    },
  });
}, 60_000);
afterAll(async () => {
  receiver?.stop(true);
  await server?.stop("SIGKILL");
});

async function credentials(...extra: string[]) {
  const r = await runCommand(rig.bin, ["twilio", "credentials", "--json", ...extra], rig.env);
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as {
    account_sid: string;
    auth_token: string;
    default_pool: { pool_id: number; name: string; messaging_service_sid: string } | null;
  };
}
function client(sid: string, token: string) {
  const c = twilio(sid, token);
  c.api.baseUrl = server.url;
  return c;
}

describe("Twilio's Messages API on the binary", () => {
  test("credentials from the command line send and read a message; a rotated token replaces the old one", async () => {
    const first = await credentials();
    expect(first.account_sid).toMatch(/^AC[0-9a-f]{32}$/);
    expect(await credentials()).toEqual(first);
    const c = client(first.account_sid, first.auth_token);
    const sent = await c.messages.create({ to: RECIPIENT, body: "Hello from a Twilio client" });
    expect(sent).toMatchObject({ status: "queued", to: RECIPIENT, body: "Hello from a Twilio client" });
    expect((await c.messages(sent.sid).fetch()).sid).toBe(sent.sid);

    const rotated = await credentials("--rotate");
    expect(rotated.account_sid).toBe(first.account_sid);
    expect(rotated.auth_token).not.toBe(first.auth_token);
    const old = await c
      .messages(sent.sid)
      .fetch()
      .catch((e: { status: number; code: number }) => e);
    expect(old).toMatchObject({ status: 401, code: 20003 });
    expect((await client(rotated.account_sid, rotated.auth_token).messages(sent.sid).fetch()).body).toBe("Hello from a Twilio client");
  });
});

describe("Twilio's Messages API on the binary, as its library uses it", () => {
  test("scheduled, through a Messaging Service, listed page by page with each(), canceled", async () => {
    const { account_sid: sid, auth_token: token } = await credentials();
    const c = client(sid, token);
    const devices = (await server.api("/v1/api/device/list", rig.key)).body.data.devices as { device_id: number }[];
    const pool = await server.api("/v1/api/pool/create", rig.key, { name: "Front desk", members: [{ device_id: devices[0].device_id }] });
    expect(pool.status).toBe(200);
    // The pool shows its Messaging Service SID; as the default pool, `twilio credentials` prints it too.
    const mg = pool.body.data.messaging_service_sid;
    expect(mg).toBe(`MG${pool.body.data.pool_id.toString(16).padStart(32, "0")}`);
    expect((await credentials()).default_pool).toBeNull();
    const shown = await runCommand(rig.bin, ["twilio", "credentials"], rig.env);
    expect(shown.stdout).toContain("No default pool");
    expect((await server.api("/v1/api/pool/update", rig.key, { pool_id: pool.body.data.pool_id, is_default: true })).status).toBe(200);
    expect((await credentials()).default_pool).toEqual({ pool_id: pool.body.data.pool_id, name: "Front desk", messaging_service_sid: mg });
    expect((await runCommand(rig.bin, ["twilio", "credentials"], rig.env)).stdout).toContain(
      `Messaging Service SID of the default pool "Front desk": ${mg}`,
    );
    const pooled = await c.messages.create({ to: "+14155552680", body: "Through the pool", messagingServiceSid: mg });
    expect(pooled).toMatchObject({ status: "accepted", messagingServiceSid: mg });
    const later = new Date(Date.now() + 3_600_000);
    const scheduled = await c.messages.create({ to: "+14155552681", body: "In an hour", sendAt: later, scheduleType: "fixed" });
    expect(scheduled.status).toBe("scheduled");
    for (let i = 0; i < 4; i++)
      await c.messages.create({ to: "+14155552682", body: `Page filler ${i}`, sendAt: later, scheduleType: "fixed" });
    // Pages of two, followed by the library through next_page_uri: every message once, newest first.
    const seen: string[] = [];
    await c.messages.each({ pageSize: 2 }, (m) => {
      seen.push(m.sid);
    });
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toContain(scheduled.sid);
    expect(seen).toContain(pooled.sid);
    expect(seen.length).toBeGreaterThanOrEqual(7);
    expect((await c.messages.list({ to: "+14155552682", pageSize: 2, limit: 10 })).map((m) => m.body).sort()).toEqual(
      [0, 1, 2, 3].map((i) => `Page filler ${i}`),
    );
    const canceled = await c.messages(scheduled.sid).update({ status: "canceled" });
    expect(canceled.status).toBe("canceled");
  });
});

describe("Twilio's posts from the binary", () => {
  test("a status callback at each change, and an incoming message answered with TwiML, all signed as Twilio signs", async () => {
    const { account_sid: sid, auth_token: token } = await credentials();
    const base = `http://127.0.0.1:${receiver.port}`;
    const set = await server.api("/v1/api/twilio/incoming", rig.key, { url: `${base}/in` });
    expect(set.status).toBe(200);

    const c = client(sid, token);
    const sent = await c.messages.create({ to: SECOND_RECIPIENT, body: "Table for two at 8", statusCallback: `${base}/status` });
    // The phone takes it and reports it sent: the callback follows.
    await waitFor("the phone to take the message", async () => (await phone.pull()).length > 0);
    const callback = await waitFor("the status callback", () => posted.find((p) => p.path === "/status"));
    expect(callback.params).toMatchObject({ MessageSid: sent.sid, MessageStatus: "sent", To: SECOND_RECIPIENT, AccountSid: sid });
    expect(twilio.validateRequest(token, callback.signature, callback.url, callback.params)).toBe(true);
    expect((await c.messages(sent.sid).fetch()).status).toBe("sent");

    await phone.receive("+14155552673", "Are you open?", 2);
    const incoming = await waitFor("the incoming-message post", () => posted.find((p) => p.path === "/in"));
    expect(incoming.params).toMatchObject({ From: "+14155552673", Body: "Are you open?", SmsStatus: "received", AccountSid: sid });
    expect(twilio.validateRequest(token, incoming.signature, incoming.url, incoming.params)).toBe(true);
    const reply = await waitFor("the TwiML reply at the phone", async () => (await phone.pull()).find((m) => m.to === "+14155552673"));
    expect(reply).toEqual({ to: "+14155552673", text: 'Thanks +14155552673, we got "Are you open?"', sim: 2 });
    expect((await c.messages(incoming.params.MessageSid).fetch()).direction).toBe("inbound");
    // A tampered copy fails the same check: the signature covers the parameters.
    expect(twilio.validateRequest(token, incoming.signature, incoming.url, { ...incoming.params, Body: "Are you closed?" })).toBe(false);
  });

  test("Verify: the phone is handed the code, which the twilio package's check approves; a wrong code is refused", async () => {
    const { account_sid: sid, auth_token: token } = await credentials();
    const c = twilio(sid, token);
    c.verify.baseUrl = server.url;
    const v2 = c.verify.v2;
    const service = await v2.services.create({ friendlyName: "Pigeon Bakery", codeLength: 6 });
    const to = "+14155552675";
    const started = await v2.services(service.sid).verifications.create({ to, channel: "sms" });
    expect(started.status).toBe("pending");
    const handed = await waitFor("the phone to be handed the code", async () => (await phone.pull()).find((m) => m.to === to));
    const code = /: (\d{6})$/.exec(handed.text)?.[1];
    expect(code).toMatch(/^\d{6}$/);
    const wrong = code === "000000" ? "111111" : "000000";
    expect((await v2.services(service.sid).verificationChecks.create({ to, code: wrong })).status).toBe("pending");
    expect(await v2.services(service.sid).verificationChecks.create({ to, code: code! })).toMatchObject({
      status: "approved",
      valid: true,
    });
    // The fraud limit, set to one code a number in 10 minutes through Pigeon's API: the next is 60203, nothing sent.
    const serviceId = Number.parseInt(service.sid.slice(2), 16);
    expect((await server.api("/v1/api/verify/service/update", rig.key, { service_id: serviceId, per_number_limit: 1 })).status).toBe(200);
    const refused = await v2
      .services(service.sid)
      .verifications.create({ to, channel: "sms" })
      .catch((e: { status: number; code: number }) => e);
    expect(refused).toMatchObject({ status: 429, code: 60203 });
    expect(await phone.pull()).toEqual([]);
    // Reported sent by the phone, the message reads masked in the API.
    const list = (await server.api(`/v1/api/notification/list?recipient=${encodeURIComponent(to)}`, rig.key)).body.data.notifications;
    expect(list[0].message).toBe("Your Pigeon Bakery verification code is: ******");
  });

  test("a post cut off by a kill is made again after the restart, with the same idempotency token, and its TwiML answered once", async () => {
    const { auth_token: token } = await credentials();
    const base = `http://127.0.0.1:${receiver.port}`;
    expect((await server.api("/v1/api/twilio/incoming", rig.key, { url: `${base}/held` })).status).toBe(200);
    holding = true;
    await phone.receive("+14155552674", "Anyone there?");
    const first = await waitFor("the held call", () => posted.find((p) => p.path === "/held"));
    await server.stop("SIGKILL");
    holding = false;
    server = await rig.start();
    const calls = await waitFor("the call made again", () => {
      const list = posted.filter((p) => p.path === "/held");
      return list.length >= 2 ? list : null;
    });
    expect(calls[1].token).toBe(first.token);
    expect(calls[1].params).toEqual(first.params);
    expect(twilio.validateRequest(token, calls[1].signature, calls[1].url, calls[1].params)).toBe(true);
    // The answer to the call made again is sent: one reply, waiting for the phone.
    const replies = async () =>
      ((await server.api("/v1/api/notification/list?recipient=%2B14155552674", rig.key)).body.data.notifications ?? []) as {
        message: string;
      }[];
    await waitFor("the TwiML reply", async () => (await replies()).length > 0);
    await Bun.sleep(1500);
    expect((await replies()).map((n) => n.message)).toEqual(['Thanks +14155552674, we got "Anyone there?"']);
    expect(posted.filter((p) => p.path === "/held")).toHaveLength(2);
  });
});
