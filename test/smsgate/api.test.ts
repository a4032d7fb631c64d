// The SMSGate-compatible API in process: its credentials (Basic with a key and secret, Bearer tokens
// with scopes, refresh and revocation), its error shape, validation, and messages read back from the
// notifications they became. The compiled binary with the real npm client is test/binary/smsgate-e2e.test.ts.
import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { createTestContext, type CallOptions } from "../helpers/context";
import { startReceiver } from "../helpers/receiver";
import { recordInbound } from "../../src/modules/threads/inbound";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";

const ctx = await createTestContext();
const basic = (k = ctx.key) => `Basic ${btoa(`${k.api_key}:${k.api_secret}`)}`;

/** A call as SMSGate's clients make it: Authorization only, never X-API-SECRET. */
function gate(method: string, path: string, o: CallOptions & { authorization?: string | null } = {}) {
  const authorization = o.authorization === undefined ? basic() : o.authorization;
  return ctx.call(method, `/3rdparty/v1${path}`, {
    ...o,
    key: null,
    headers: { ...(authorization ? { authorization } : {}), ...o.headers },
  });
}

async function token(scopes: string[], ttl?: number) {
  const r = await gate("POST", "/auth/token", { body: { scopes, ...(ttl ? { ttl } : {}) } });
  expect(r.status).toBe(201);
  return r.body as { id: string; token_type: string; access_token: string; refresh_token: string; expires_at: string };
}

describe("credentials", () => {
  test("no credentials, a wrong secret and a foreign scheme answer 401 in SMSGate's shape", async () => {
    for (const authorization of [null, `Basic ${btoa(`${ctx.key.api_key}:wrong`)}`, `Bearer ${ctx.key.api_key}`, "Digest abc"]) {
      const r = await gate("GET", "/devices", { authorization });
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ message: expect.any(String), code: 401, data: { error_code: "unauthorized" } });
      expect(r.body.status_id).toBeUndefined();
    }
  });

  test("Basic with an API key and its secret may do everything, under both bases", async () => {
    expect((await gate("GET", "/devices")).status).toBe(200);
    const r = await ctx.call("GET", "/api/3rdparty/v1/devices", { key: null, headers: { authorization: basic() } });
    expect(r.status).toBe(200);
    expect(Array.isArray(r.body)).toBe(true);
  });

  test("health needs no credentials and has SMSGate's shape", async () => {
    for (const path of ["/health", "/health/live", "/health/ready", "/health/startup"]) {
      const r = await gate("GET", path, { authorization: null });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({
        status: "pass",
        version: expect.any(String),
        releaseId: expect.any(Number),
        checks: { "db:ping": { status: "pass" } },
      });
    }
  });

  test("a token answers 201 in SMSGate's shape and is held to its scopes", async () => {
    const t = await token(["devices:list"]);
    expect(t.token_type).toBe("Bearer");
    expect(Date.parse(t.expires_at) - ctx.clock.now()).toBe(3600_000);
    const bearer = `Bearer ${t.access_token}`;
    expect((await gate("GET", "/devices", { authorization: bearer })).status).toBe(200);
    const refused = await gate("GET", "/messages", { authorization: bearer });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 403, data: { error_code: "forbidden", scope: "messages:list" } });
    // Nor may it make a token with more than it holds, or any token without tokens:manage.
    expect((await gate("POST", "/auth/token", { authorization: bearer, body: { scopes: ["devices:list"] } })).status).toBe(403);
  });

  test("a token expires, and a refresh token is good once and only for refreshing", async () => {
    const t = await token(["devices:list", "tokens:manage"], 60);
    expect((await gate("GET", "/devices", { authorization: `Bearer ${t.refresh_token}` })).status).toBe(403);
    const renewed = await gate("POST", "/auth/token/refresh", { authorization: `Bearer ${t.refresh_token}` });
    expect(renewed.status).toBe(201);
    expect(renewed.body.id).not.toBe(t.id);
    // The old pair is spent: its access token is revoked and the refresh token replays to 401.
    expect((await gate("GET", "/devices", { authorization: `Bearer ${t.access_token}` })).status).toBe(401);
    expect((await gate("POST", "/auth/token/refresh", { authorization: `Bearer ${t.refresh_token}` })).status).toBe(401);
    const fresh = `Bearer ${renewed.body.access_token}`;
    expect((await gate("GET", "/devices", { authorization: fresh })).status).toBe(200);
    ctx.clock.advance(61_000);
    expect((await gate("GET", "/devices", { authorization: fresh })).status).toBe(401);
  });

  test("a revoked token stops working; another workspace cannot revoke it", async () => {
    const t = await token(["devices:list"]);
    const other = await ctx.otherWorkspace("Revoker");
    expect((await gate("DELETE", `/auth/token/${t.id}`, { authorization: basic(other.key) })).status).toBe(404);
    expect((await gate("GET", "/devices", { authorization: `Bearer ${t.access_token}` })).status).toBe(200);
    expect((await gate("DELETE", `/auth/token/${t.id}`)).status).toBe(204);
    expect((await gate("GET", "/devices", { authorization: `Bearer ${t.access_token}` })).status).toBe(401);
  });

  test("a token signed by someone else, or tampered with, is refused", async () => {
    const t = await token(["all:any"]);
    const [h, p] = t.access_token.split(".");
    const forged = `${h}.${p}.${Buffer.from("x".repeat(32)).toString("base64url")}`;
    expect((await gate("GET", "/devices", { authorization: `Bearer ${forged}` })).status).toBe(401);
  });

  test("unknown scopes and a bad body answer 400 and issue nothing", async () => {
    const r = await gate("POST", "/auth/token", { body: { scopes: ["messages:everything"] } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 400, data: { error_code: "validation_error" } });
    expect((await gate("POST", "/auth/token", { body: { scopes: [] } })).status).toBe(400);
    expect(await ctx.sql.get("SELECT count(*) AS n FROM smsgate_token WHERE scopes LIKE '%everything%'")).toEqual({ n: 0 });
  });

  test("wrong credentials count against the failed sign-in throttle", async () => {
    const local = await createTestContext();
    let last = 0;
    for (let i = 0; i < 40 && last !== 429; i++) {
      last = (
        await local.call("GET", "/3rdparty/v1/devices", { key: null, headers: { authorization: `Basic ${btoa("pk_nobody:nothing")}` } })
      ).status;
    }
    expect(last).toBe(429);
  });
});

describe("messages", () => {
  test("one message to two numbers is two notifications; its state is read back from them", async () => {
    const phone = await ctx.phone("Gate phone");
    const r = await gate("POST", "/messages", {
      body: {
        id: "order-1",
        textMessage: { text: "Your order is ready" },
        phoneNumbers: [RECIPIENT, SECOND_RECIPIENT],
        deviceId: String(phone.device_id),
        simNumber: 2,
        priority: 100,
        withDeliveryReport: false,
      },
    });
    expect(r.status).toBe(202);
    expect(r.headers.get("location")).toBe("/3rdparty/v1/messages/order-1");
    expect(r.body).toMatchObject({
      id: "order-1",
      deviceId: String(phone.device_id),
      state: "Pending",
      recipients: [
        { phoneNumber: RECIPIENT, state: "Pending" },
        { phoneNumber: SECOND_RECIPIENT, state: "Pending" },
      ],
    });
    expect(Object.keys(r.body.states)).toEqual(["Pending"]);
    const rows = await ctx.sql.all(
      "SELECT recipient, sim_number, priority, with_delivery_report FROM notification WHERE id IN (SELECT notification_id FROM smsgate_recipient) ORDER BY id",
    );
    expect(rows).toEqual([
      { recipient: RECIPIENT, sim_number: 2, priority: 100, with_delivery_report: 0 },
      { recipient: SECOND_RECIPIENT, sim_number: 2, priority: 100, with_delivery_report: 0 },
    ]);
    const again = await gate("POST", "/message", { body: { id: "order-1", message: "Twice", phoneNumbers: [RECIPIENT] } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 409, data: { error_code: "conflict" } });
  });

  test("a refused recipient stores nothing for any of them", async () => {
    await ctx.phone("Refusing phone");
    const before = await ctx.sql.get("SELECT count(*) AS n FROM notification");
    const r = await gate("POST", "/messages", { body: { id: "half", message: "Hi", phoneNumbers: [RECIPIENT, "not a number"] } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 400, data: { error_code: "invalid_phone_number" } });
    expect(await ctx.sql.get("SELECT count(*) AS n FROM notification")).toEqual(before);
    expect((await gate("GET", "/messages/half")).status).toBe(404);
  });

  test("skipPhoneValidation: a number with its country code is sent; one without is refused naming the option, and nothing is stored", async () => {
    await ctx.phone("Unvalidated phone");
    const send = (id: string, phoneNumbers: string[], skipPhoneValidation?: boolean) =>
      ctx.call("POST", "/3rdparty/v1/messages", {
        key: null,
        headers: { authorization: basic() },
        body: { id, message: "Balance?", phoneNumbers },
        query: skipPhoneValidation === undefined ? {} : { skipPhoneValidation },
      });
    const accepted = await send("skip-ok", ["+1 415 555 2674"], true);
    expect(accepted.status).toBe(202);
    expect(accepted.body.recipients).toEqual([expect.objectContaining({ phoneNumber: "+14155552674" })]);
    const before = await ctx.sql.get("SELECT count(*) AS n FROM notification");
    const refused = await send("skip-short", ["+14155552675", "900"], true);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      code: 400,
      data: { error_code: "option_not_supported", field: "skipPhoneValidation", phoneNumber: "900" },
    });
    expect(refused.body.message).toContain("skipPhoneValidation");
    expect(await ctx.sql.get("SELECT count(*) AS n FROM notification")).toEqual(before);
    expect((await gate("GET", "/messages/skip-short")).status).toBe(404);
    // Without the option the same number is the ordinary invalid number.
    expect((await send("plain-short", ["900"])).body.data.error_code).toBe("invalid_phone_number");
  });

  test("bad bodies answer 400 with a code, never 500", async () => {
    const bodies: unknown[] = [
      { message: "Hi", phoneNumbers: [] },
      { message: "Hi", phoneNumbers: Array.from({ length: 101 }, (_, i) => `+1415555${String(1000 + i)}`) },
      { message: "Hi" },
      { phoneNumbers: [RECIPIENT] },
      { message: "Hi", phoneNumbers: [RECIPIENT], simNumber: 4 },
      { message: "Hi", phoneNumbers: [RECIPIENT], ttl: 60, validUntil: "2099-01-01T00:00:00Z" },
      { dataMessage: { data: "not base64", port: 53739 }, phoneNumbers: [RECIPIENT] },
      { dataMessage: { data: "AAE=", port: 0 }, phoneNumbers: [RECIPIENT] },
      { message: "Hi", phoneNumbers: [RECIPIENT], scheduleAt: "tomorrow" },
    ];
    for (const body of bodies) {
      const r = await gate("POST", "/messages", { body });
      expect({ body, status: r.status }).toEqual({ body, status: 400 });
      expect(typeof r.body.data.error_code).toBe("string");
    }
    expect((await gate("POST", "/messages", { raw: "{", headers: { "content-type": "application/json" } })).status).toBe(400);
  });

  test("list filters by state, device and time, pages with X-Total-Count; cancel works while Pending", async () => {
    const local = await createTestContext();
    const call = (method: string, path: string, o: CallOptions = {}) =>
      local.call(method, `/3rdparty/v1${path}`, { ...o, key: null, headers: { authorization: basic(local.key) } });
    const a = await local.phone("A");
    const b = await local.phone("B");
    const later = new Date(local.clock.now() + 3600_000).toISOString();
    for (let i = 0; i < 3; i++)
      expect(
        (
          await call("POST", "/messages", {
            body: { id: `a${i}`, message: "Hi", phoneNumbers: [RECIPIENT], deviceId: String(a.device_id), scheduleAt: later },
          })
        ).status,
      ).toBe(202);
    local.clock.advance(1000);
    const middle = new Date(local.clock.now()).toISOString();
    expect(
      (
        await call("POST", "/messages", {
          body: { id: "b0", message: "Hi", phoneNumbers: [RECIPIENT], deviceId: String(b.device_id) },
        })
      ).status,
    ).toBe(202);

    const page = await call("GET", "/messages", { query: { limit: 2, offset: 1 } });
    expect(page.headers.get("x-total-count")).toBe("4");
    expect(page.body.map((m: { id: string }) => m.id)).toEqual(["a2", "a1"]);
    expect((await call("GET", "/messages", { query: { deviceId: String(b.device_id) } })).body.map((m: { id: string }) => m.id)).toEqual([
      "b0",
    ]);
    expect((await call("GET", "/messages", { query: { from: middle } })).body.map((m: { id: string }) => m.id)).toEqual(["b0"]);

    const cancelled = await call("DELETE", "/messages/a1");
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ state: "Cancelled", recipients: [{ state: "Cancelled" }] });
    expect(Object.keys(cancelled.body.states)).toEqual(["Pending", "Cancelled"]);
    const byState = await call("GET", "/messages", { query: { state: "Cancelled" } });
    expect(byState.headers.get("x-total-count")).toBe("1");
    expect(byState.body.map((m: { id: string }) => m.id)).toEqual(["a1"]);
    // Without a state filter, every state is listed.
    expect((await call("GET", "/messages")).headers.get("x-total-count")).toBe("4");
    expect((await call("DELETE", "/messages/a1")).status).toBe(409);
    expect((await call("GET", "/messages", { query: { limit: 101 } })).status).toBe(400);
    expect((await call("GET", "/messages", { query: { from: "yesterday" } })).status).toBe(400);
    // An offset past what SQLite binds is the caller's mistake, not a 500.
    expect((await call("GET", "/messages", { query: { offset: "100000000000000000000" } })).status).toBe(400);
  });

  test("the state filter is applied in SQL: pages past the first and X-Total-Count agree with each message's state", async () => {
    const local = await createTestContext();
    let calls = 0;
    // The key's 60 requests a minute: the test clock moves a minute on every 50.
    const call = (method: string, path: string, o: CallOptions = {}) => {
      if (++calls % 50 === 0) local.clock.advance(61_000);
      return local.call(method, `/3rdparty/v1${path}`, { ...o, key: null, headers: { authorization: basic(local.key) } });
    };
    await local.phone("Many");
    const later = new Date(local.clock.now() + 24 * 3600_000).toISOString();
    // One more Pending message than a page holds shows the second page and the total; a page of ten
    // keeps that to a few dozen messages.
    const PAGE = 10;
    const count = 22;
    for (let i = 0; i < count; i++) {
      const r = await call("POST", "/messages", {
        body: { id: `m${i}`, message: "Hi", phoneNumbers: [RECIPIENT, SECOND_RECIPIENT], scheduleAt: later },
      });
      expect(r.status).toBe(202);
    }
    // Each recipient pair moved to a combination of outcomes, and the state SMSGate gives the message.
    type Outcome = [status: string, stage: string, cancelPending?: number];
    const combos: [Outcome, Outcome, string][] = [
      [["pending", "dispatching"], ["pending", "queued"], "Pending"],
      [["pending", "handed"], ["sent", "done"], "Processed"],
      [["sent", "done"], ["delivered", "done"], "Sent"],
      [["delivered", "done"], ["delivered", "done"], "Delivered"],
      [["delivered", "done"], ["failed", "done"], "Delivered"],
      [["sent", "done"], ["failed", "done"], "Sent"],
      [["failed", "done"], ["failed", "done"], "Failed"],
      [["failed", "done"], ["cancelled", "done"], "Failed"],
      [["cancelled", "done"], ["cancelled", "done"], "Cancelled"],
      // A cancel asked of the phone, not answered yet: Cancelling, unless another recipient is still Pending.
      [["pending", "queued", 1], ["sent", "done"], "Cancelling"],
      [["pending", "queued", 1], ["pending", "queued"], "Pending"],
    ];
    for (const [i, [first, second]] of combos.entries()) {
      const ids = (
        await local.sql.all<{ id: number }>(
          "SELECT r.notification_id AS id FROM smsgate_recipient r JOIN smsgate_message m ON m.row_id = r.message_row_id WHERE m.id = ? ORDER BY r.position",
          [`m${i}`],
        )
      ).map((r) => r.id);
      for (const [k, [status, stage, cancelPending = 0]] of [first, second].entries()) {
        await local.sql.run("UPDATE notification SET status = ?, stage = ?, cancel_pending = ? WHERE id = ?", [
          status,
          stage,
          cancelPending,
          ids[k],
        ]);
      }
    }
    const expected = new Map(Array.from({ length: count }, (_, i) => [`m${i}`, combos[i]?.[2] ?? "Pending"]));

    /** Every page of a listing, checking X-Total-Count on each. */
    async function everything(query: Record<string, string | number>) {
      const ids: string[] = [];
      let total = -1;
      for (let offset = 0; ; offset += PAGE) {
        const page = await call("GET", "/messages", { query: { ...query, limit: PAGE, offset, sort: "createdAt_asc" } });
        expect(page.status).toBe(200);
        total = Number(page.headers.get("x-total-count"));
        for (const m of page.body as { id: string; state: string }[]) {
          // Each message listed is in the state asked for, as its own state says.
          if (query.state) expect({ id: m.id, state: m.state }).toEqual({ id: m.id, state: String(query.state) });
          expect(m.state).toBe(expected.get(m.id)!);
          ids.push(m.id);
        }
        if (page.body.length < PAGE) break;
      }
      expect(ids).toHaveLength(total);
      return ids;
    }
    const all = await everything({});
    expect(all).toHaveLength(count);
    for (const state of ["Pending", "Processed", "Sent", "Delivered", "Failed", "Cancelling", "Cancelled"]) {
      const want = all.filter((id) => expected.get(id) === state);
      expect({ state, ids: await everything({ state }) }).toEqual({ state, ids: want });
    }
    // More Pending than one page: the second page holds the rest, and the total counts them all.
    const second = await call("GET", "/messages", { query: { state: "Pending", limit: PAGE, offset: PAGE, sort: "createdAt_asc" } });
    const pendingCount = [...expected.values()].filter((state) => state === "Pending").length;
    expect(second.headers.get("x-total-count")).toBe(String(pendingCount));
    expect(second.body).toHaveLength(pendingCount - PAGE);
  });

  test("deviceActiveWithin picks a phone seen within that many hours, or refuses", async () => {
    const local = await createTestContext();
    const call = (body: unknown, hours: number) =>
      local.call("POST", "/3rdparty/v1/messages", {
        key: null,
        headers: { authorization: basic(local.key) },
        body,
        query: { deviceActiveWithin: hours },
      });
    const phone = await local.phone("Seen two hours ago");
    local.clock.advance(2 * 3600_000);
    const body = { message: "Later", phoneNumbers: [RECIPIENT], scheduleAt: new Date(local.clock.now() + 3600_000).toISOString() };
    const refused = await call(body, 1);
    expect(refused.status).toBe(400);
    expect(refused.body.data.error_code).toBe("no_active_device");
    const accepted = await call(body, 3);
    expect(accepted.status).toBe(202);
    expect(accepted.body.deviceId).toBe(String(phone.device_id));
  });

  test("another workspace's messages are not found", async () => {
    const other = await ctx.otherWorkspace("Stranger");
    expect((await gate("GET", "/messages/order-1", { authorization: basic(other.key) })).status).toBe(404);
    expect((await gate("DELETE", "/messages/order-1", { authorization: basic(other.key) })).status).toBe(404);
  });
});

describe("devices", () => {
  test("the older /device path lists and removes phones as /devices does, marked deprecated", async () => {
    const local = await createTestContext();
    const headers = { authorization: basic(local.key) };
    const phone = await local.phone("Old path phone");
    const listed = await local.call("GET", "/3rdparty/v1/device", { key: null, headers });
    expect(listed.status).toBe(200);
    expect(listed.headers.get("deprecation")).toBe("true");
    expect(listed.body).toEqual((await local.call("GET", "/3rdparty/v1/devices", { key: null, headers })).body);
    expect(listed.body.map((d: { id: string }) => d.id)).toEqual([String(phone.device_id)]);
    expect((await local.call("DELETE", `/api/3rdparty/v1/device/${phone.device_id}`, { key: null, headers })).status).toBe(204);
    expect((await local.call("GET", "/3rdparty/v1/devices", { key: null, headers })).body).toEqual([]);
    expect((await local.call("DELETE", "/3rdparty/v1/device/999", { key: null, headers })).status).toBe(404);
  });

  test("lists the paired phones and removes one", async () => {
    const local = await createTestContext();
    const phone = await local.phone("Removable");
    const auth = { authorization: basic(local.key) };
    const list = await local.call("GET", "/3rdparty/v1/devices", { key: null, headers: auth });
    expect(list.body).toEqual([expect.objectContaining({ id: String(phone.device_id), name: "Removable", lastSeen: expect.any(String) })]);
    expect((await local.call("DELETE", `/3rdparty/v1/devices/${phone.device_id}`, { key: null, headers: auth })).status).toBe(204);
    expect((await local.call("GET", "/3rdparty/v1/devices", { key: null, headers: auth })).body).toEqual([]);
    expect((await local.call("DELETE", `/3rdparty/v1/devices/${phone.device_id}`, { key: null, headers: auth })).status).toBe(404);
  });
});

describe("inbox refresh", () => {
  test("reaches the phone channel on each of its paths: unknown phone 404, a bad period 400, a phone without its stream 409", async () => {
    const phone = await ctx.phone("Inbox phone");
    const period = { since: "2026-01-01T00:00:00Z", until: "2026-01-02T00:00:00Z" };
    for (const path of ["/inbox/refresh", "/inbox/export", "/messages/inbox/export", "/message/inbox/export"]) {
      expect((await gate("POST", path, { body: { deviceId: "999999", ...period } })).status).toBe(404);
      const backwards = await gate("POST", path, { body: { deviceId: String(phone.device_id), since: period.until, until: period.since } });
      expect(backwards.status).toBe(400);
      const r = await gate("POST", path, { body: { deviceId: String(phone.device_id), ...period } });
      expect(r.status).toBe(409);
      expect(r.body.data.error_code).toMatch(/^(app_too_old|phone_not_connected)$/);
    }
  });
});

describe("received messages (GET /inbox)", () => {
  test("inbound SMS and MMS from the threads, newest first, filtered by type, time and phone, paged with X-Total-Count", async () => {
    const local = await createTestContext();
    const headers = { authorization: basic(local.key) };
    const call = (path: string, query: Record<string, string | number> = {}, h: Record<string, string> = headers) =>
      local.call("GET", `/3rdparty/v1${path}`, { key: null, headers: h, query });
    const a = await local.phone("Inbox A");
    const b = await local.phone("Inbox B");
    const receive = (
      deviceId: number,
      from: string,
      body: string,
      externalId: string,
      meta?: Parameters<typeof recordInbound>[2]["meta"],
    ) => {
      local.clock.advance(1000);
      return recordInbound(local.services.channelCore.threads, local.services.events, {
        workspaceId: local.workspace.id,
        channel: "sms",
        deviceId,
        from,
        body,
        externalId,
        at: local.clock.now(),
        meta,
      });
    };
    const start = new Date(local.clock.now()).toISOString();
    await receive(a.device_id, "+14155550101", "First", "x1");
    await receive(a.device_id, "+14155550102", "Second", "x2");
    const mms = { type: "mms" as const, transactionId: "T1", subject: "Photo", size: 100, contentClass: null, attachments: null };
    await receive(b.device_id, "+14155550103", "Photo", "mms:1", { ...mms, downloadId: null });
    await receive(b.device_id, "+14155550104", "Here it is", "mms:2", {
      ...mms,
      transactionId: "T2",
      downloadId: "55",
      attachments: [{ partId: 1, contentType: "image/jpeg", name: "a.jpg", size: 10 }],
    });
    // The same SMS posted again by the phone is one entry.
    await recordInbound(local.services.channelCore.threads, local.services.events, {
      workspaceId: local.workspace.id,
      channel: "sms",
      deviceId: a.device_id,
      from: "+14155550101",
      body: "First",
      externalId: "x1",
      at: local.clock.now(),
    });
    // What Pigeon sent is not received.
    expect(
      (
        await local.call("POST", "/3rdparty/v1/messages", {
          key: null,
          headers,
          body: { message: "Outbound", phoneNumbers: ["+14155550101"], deviceId: String(a.device_id) },
        })
      ).status,
    ).toBe(202);

    const all = await call("/inbox");
    expect(all.status).toBe(200);
    expect(all.headers.get("x-total-count")).toBe("4");
    expect(all.body).toEqual([
      {
        id: expect.any(String),
        type: "MMS_DOWNLOADED",
        sender: "+14155550104",
        contentPreview: "Here it is",
        createdAt: expect.any(String),
      },
      { id: expect.any(String), type: "MMS", sender: "+14155550103", contentPreview: "Photo", createdAt: expect.any(String) },
      { id: expect.any(String), type: "SMS", sender: "+14155550102", contentPreview: "Second", createdAt: expect.any(String) },
      { id: expect.any(String), type: "SMS", sender: "+14155550101", contentPreview: "First", createdAt: expect.any(String) },
    ]);
    expect(Date.parse(all.body[3].createdAt)).toBeGreaterThan(Date.parse(start));
    const ids = (r: { body: { contentPreview: string }[] }) => r.body.map((m) => m.contentPreview);
    expect(ids(await call("/inbox", { type: "SMS" }))).toEqual(["Second", "First"]);
    expect(ids(await call("/inbox", { type: "MMS" }))).toEqual(["Photo"]);
    expect(ids(await call("/inbox", { type: "DATA_SMS" }))).toEqual([]);
    expect(ids(await call("/inbox", { deviceId: String(b.device_id) }))).toEqual(["Here it is", "Photo"]);
    expect(ids(await call("/inbox", { deviceId: "not-a-phone" }))).toEqual([]);
    const from = all.body[2].createdAt;
    expect(ids(await call("/inbox", { from, to: all.body[0].createdAt }))).toEqual(["Photo", "Second"]);
    const page = await call("/inbox", { limit: 2, offset: 1 });
    expect(page.headers.get("x-total-count")).toBe("4");
    expect(ids(page)).toEqual(["Photo", "Second"]);
    // Bad input is 400 in SMSGate's shape, never 500.
    const bad: Record<string, string | number>[] = [{ limit: 501 }, { limit: 0 }, { type: "FAX" }, { from: "yesterday" }, { offset: -1 }];
    for (const query of bad) {
      const r = await call("/inbox", query);
      expect({ query, status: r.status }).toEqual({ query, status: 400 });
      expect(typeof r.body.data.error_code).toBe("string");
    }
    // Its scope is inbox:list; inbox:refresh alone is refused.
    const t = await local.call("POST", "/3rdparty/v1/auth/token", { key: null, headers, body: { scopes: ["inbox:refresh"] } });
    const refused = await call("/inbox", {}, { authorization: `Bearer ${t.body.access_token}` });
    expect(refused.status).toBe(403);
    expect(refused.body.data).toMatchObject({ error_code: "forbidden", scope: "inbox:list" });
    // Another workspace sees none of it.
    const other = await local.otherWorkspace("Inbox stranger");
    expect((await call("/inbox", {}, { authorization: basic(other.key) })).headers.get("x-total-count")).toBe("0");
  });
});

describe("webhooks", () => {
  test("registered in SMSGate's shape, delivered by the outbox in its body, signed as the app signs", async () => {
    const local = await createTestContext();
    const auth = { authorization: basic(local.key) };
    const call = (method: string, path: string, o: CallOptions = {}) =>
      local.call(method, `/3rdparty/v1${path}`, { ...o, key: null, headers: auth });
    const receiver = startReceiver();
    try {
      const phone = await local.phone("Hooked phone");
      const created = await call("POST", "/webhooks", { body: { id: "rx", url: receiver.url, event: "sms:received" } });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({ id: "rx", url: receiver.url, event: "sms:received", deviceId: null });
      expect(
        (await call("POST", "/webhooks", { body: { url: receiver.url, event: "sms:delivered", deviceId: String(phone.device_id) } }))
          .status,
      ).toBe(201);
      expect((await call("GET", "/webhooks")).body.map((w: { event: string }) => w.event)).toEqual(["sms:received", "sms:delivered"]);
      // Events Pigeon has no source for are refused by name, and nothing is stored.
      const ping = await call("POST", "/webhooks", { body: { url: receiver.url, event: "app:started" } });
      expect(ping.status).toBe(400);
      expect(ping.body.data.error_code).toBe("option_not_supported");
      expect((await call("GET", "/webhooks")).body).toHaveLength(2);

      const key = "my-signing-key";
      expect((await call("PATCH", "/settings", { body: { webhooks: { signing_key: key } } })).status).toBe(200);
      // An inbound SMS as the phone channel records it.
      await recordInbound(local.services.channelCore.threads, local.services.events, {
        workspaceId: local.workspace.id,
        channel: "sms",
        deviceId: phone.device_id,
        from: "+14155550123",
        body: "Is my order ready?",
        externalId: "phone-msg-1",
        at: local.clock.now(),
      });
      await local.services.webhooks.deliverDue();
      expect(receiver.received).toHaveLength(1);
      const [hit] = receiver.received;
      expect(hit.body).toMatchObject({
        webhookId: "rx",
        event: "sms:received",
        deviceId: String(phone.device_id),
        payload: { message: "Is my order ready?", phoneNumber: "+14155550123", sender: "+14155550123" },
      });
      expect(hit.body.id).toEqual(expect.any(String));
      const timestamp = hit.headers.get("x-timestamp")!;
      expect(hit.headers.get("x-signature")).toBe(
        createHmac("sha256", key)
          .update(hit.raw + timestamp)
          .digest("hex"),
      );
      expect(hit.headers.get("x-pigeon-signature")).toBeNull();

      // A repeated id replaces the webhook; a deleted one receives nothing more.
      expect((await call("POST", "/webhooks", { body: { id: "rx", url: `${receiver.url}?v=2`, event: "sms:received" } })).status).toBe(201);
      expect((await call("GET", "/webhooks")).body.filter((w: { id: string }) => w.id === "rx")).toEqual([
        { id: "rx", url: `${receiver.url}?v=2`, event: "sms:received", deviceId: null },
      ]);
      expect((await call("DELETE", "/webhooks/rx")).status).toBe(204);
      expect((await call("DELETE", "/webhooks/rx")).status).toBe(404);
      await recordInbound(local.services.channelCore.threads, local.services.events, {
        workspaceId: local.workspace.id,
        channel: "sms",
        deviceId: phone.device_id,
        from: "+14155550123",
        body: "Hello again",
        externalId: "phone-msg-2",
        at: local.clock.now(),
      });
      await local.services.webhooks.deliverDue();
      expect(receiver.received).toHaveLength(1);
    } finally {
      receiver.stop();
    }
  });

  test("sms:sent and sms:delivered carry the SMSGate message id and the recipient; another phone's webhook hears nothing", async () => {
    const local = await createTestContext();
    const auth = { authorization: basic(local.key) };
    const call = (method: string, path: string, o: CallOptions = {}) =>
      local.call(method, `/3rdparty/v1${path}`, { ...o, key: null, headers: auth });
    const receiver = startReceiver();
    try {
      const phone = await local.phone("Reporting phone");
      const otherPhone = await local.phone("Quiet phone");
      for (const event of ["sms:sent", "sms:delivered"])
        expect(
          (await call("POST", "/webhooks", { body: { id: event, url: receiver.url, event, deviceId: String(phone.device_id) } })).status,
        ).toBe(201);
      expect(
        (
          await call("POST", "/webhooks", {
            body: { id: "quiet", url: receiver.url, event: "sms:delivered", deviceId: String(otherPhone.device_id) },
          })
        ).status,
      ).toBe(201);
      expect(
        (
          await call("POST", "/messages", {
            body: { id: "hooked-1", message: "Hi", phoneNumbers: [RECIPIENT], deviceId: String(phone.device_id) },
          })
        ).status,
      ).toBe(202);
      const notificationId = (
        (await local.sql.get("SELECT notification_id AS id FROM smsgate_recipient ORDER BY notification_id DESC LIMIT 1")) as { id: number }
      ).id;
      await local.services.state.transition(notificationId, "sent");
      await local.services.state.transition(notificationId, "delivered");
      await local.services.webhooks.deliverDue();
      const byEvent = Object.fromEntries(receiver.received.map((r) => [r.body.webhookId, r.body]));
      expect(Object.keys(byEvent).sort()).toEqual(["sms:delivered", "sms:sent"]);
      expect(byEvent["sms:sent"]).toMatchObject({
        event: "sms:sent",
        deviceId: String(phone.device_id),
        payload: {
          messageId: "hooked-1",
          phoneNumber: RECIPIENT,
          recipient: RECIPIENT,
          partsCount: 1,
          sentAt: expect.any(String),
        },
      });
      expect(byEvent["sms:delivered"].payload).toMatchObject({ messageId: "hooked-1", deliveredAt: expect.any(String) });
      // The caller's rate-limit window is reported, as on /v1.
      expect((await call("GET", "/webhooks")).headers.get("x-ratelimit-limit")).toMatch(/^\d+$/);
    } finally {
      receiver.stop();
    }
  });

  test("a phone's pings are written as device.ping events only while a webhook wants them", async () => {
    const local = await createTestContext();
    const events = async () => (await local.sql.get("SELECT count(*) AS n FROM event WHERE type = 'device.ping'")) as { n: number };
    expect(await local.services.events.emitIfWanted(local.workspace.id, "device.ping", { device_id: 1 })).toBeNull();
    expect((await events()).n).toBe(0);
    const receiver = startReceiver();
    try {
      const created = await local.call("POST", "/3rdparty/v1/webhooks", {
        key: null,
        headers: { authorization: basic(local.key) },
        body: { url: receiver.url, event: "system:ping" },
      });
      expect(created.status).toBe(201);
      expect(
        (await local.services.events.emitIfWanted(local.workspace.id, "device.ping", { device_id: 1, health: { status: "pass" } }))
          ?.deliveryIds,
      ).toHaveLength(1);
      expect((await events()).n).toBe(1);
    } finally {
      receiver.stop();
    }
  });

  test("a webhook for another workspace's device is refused", async () => {
    const other = await ctx.otherWorkspace("Hook stranger");
    const foreign = await ctx.phone("Foreign", other.key);
    expect(
      (await gate("POST", "/webhooks", { body: { url: "https://example.com/h", event: "sms:sent", deviceId: String(foreign.device_id) } }))
        .status,
    ).toBe(404);
  });
});

describe("settings", () => {
  test("sending settings go to every phone; the signing key is write-only; refused settings change nothing", async () => {
    const local = await createTestContext();
    const auth = { authorization: basic(local.key) };
    const call = (method: string, path: string, o: CallOptions = {}) =>
      local.call(method, `/3rdparty/v1${path}`, { ...o, key: null, headers: auth });
    const a = await local.phone("One");
    const b = await local.phone("Two");
    const set = await call("PUT", "/settings", {
      body: { messages: { send_interval_min: 2, send_interval_max: 9, limit_period: "PerMinute", limit_value: 30 } },
    });
    expect(set.status).toBe(200);
    expect(set.body.messages).toEqual({ send_interval_min: 2, send_interval_max: 9, limit_period: "PerMinute", limit_value: 30 });
    for (const id of [a.device_id, b.device_id]) {
      expect(await local.services.devices.find(local.workspace.id, id)).toMatchObject({
        sendIntervalMin: 2,
        sendIntervalMax: 9,
        sendLimitPerMinute: 30,
      });
    }
    // The npm client's camelCase names work too.
    expect((await call("PATCH", "/settings", { body: { messages: { sendIntervalMax: 12 } } })).body.messages.send_interval_max).toBe(12);
    const read = await call("GET", "/settings");
    expect(JSON.stringify(read.body)).not.toContain("signing");
    for (const body of [
      { messages: { limit_period: "Weekly", limit_value: 5 } },
      { encryption: { passphrase: "" } },
      { messages: { send_interval_min: 2, sim_selection_mode: "Alternate" } },
      { messages: { send_interval_min: 50 } },
      { gateway: { private_token: "t" } },
    ]) {
      const r = await call("PATCH", "/settings", { body });
      expect({ body, status: r.status }).toEqual({ body, status: 400 });
    }
    expect((await call("GET", "/settings")).body).toEqual(read.body);
  });
});

describe("the signing key on the dashboard", () => {
  test("an owner sees the key the webhooks are signed with; a member does not", async () => {
    const local = await createTestContext();
    const key = await local.services.smsgateWebhooks.signingKey(local.workspace.id);
    const pageFor = async (email: string, role: "owner" | "member") => {
      await local.services.users.createUser({ email, password: "correct horse battery", role, accountId: local.account.id });
      const form = await local.app.handle(new Request("http://localhost/dashboard/sign-in"));
      const pre = /pigeon_presession=([^;]*)/.exec(form.headers.getSetCookie().join("\n"))![1];
      const signedIn = await local.app.handle(
        new Request("http://localhost/dashboard/sign-in", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", cookie: `pigeon_presession=${pre}` },
          body: new URLSearchParams({ _csrf: pre, email, password: "correct horse battery" }).toString(),
          redirect: "manual",
        }),
      );
      const session = /pigeon_session=([^;]*)/.exec(signedIn.headers.getSetCookie().join("\n"))![1];
      return await (
        await local.app.handle(new Request("http://localhost/dashboard/keys", { headers: { cookie: `pigeon_session=${session}` } }))
      ).text();
    };
    expect(await pageFor("owner@example.com", "owner")).toContain(key);
    const member = await pageFor("member@example.com", "member");
    expect(member).toContain("Keys of this workspace");
    expect(member).not.toContain(key);
  });
});

describe("the API document", () => {
  test("every SMSGate operation is under its own tag with Basic and Bearer security", async () => {
    const doc = (await ctx.call("GET", "/openapi.json", { key: null })).body;
    const ops = Object.entries(doc.paths as Record<string, Record<string, { tags: string[]; security?: unknown }>>).flatMap(
      ([path, methods]) =>
        path.includes("3rdparty") ? Object.entries(methods).map(([method, op]) => ({ key: `${method} ${path}`, op })) : [],
    );
    expect(ops.length).toBeGreaterThanOrEqual(16);
    // Documented once, under /3rdparty/v1; the /api/3rdparty/v1 copies are served, not listed again.
    expect(ops.filter((o) => o.key.includes(" /api/3rdparty/"))).toEqual([]);
    expect((await ctx.call("GET", "/api/3rdparty/v1/health", { key: null })).status).toBe(200);
    for (const { key, op } of ops) {
      expect({ key, tags: op.tags }).toEqual({ key, tags: ["SMSGate compatible"] });
      if (!key.includes("/health"))
        expect({ key, security: op.security }).toEqual({ key, security: [{ SmsGateBasic: [] }, { SmsGateBearer: [] }] });
    }
    expect(doc.tags.map((t: { name: string }) => t.name)).toContain("SMSGate compatible");
  });
});
