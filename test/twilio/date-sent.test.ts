// Twilio's DateSent filters on Messages.json. The judge is the real `twilio` package: its
// dateSent, dateSentBefore and dateSentAfter serialise a Date as an ISO 8601 date-time, and a
// hand-written query may send a bare date. Both forms, Twilio's meaning of each, and Twilio's 400
// for a value that is neither; the parsing itself gets unit tests.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sentWindow, spanOf } from "../../src/modules/twilio/date-sent";
import type { TestContext } from "../helpers/context";
import { startTwilioRig, twilioRefusal, type TwilioRig } from "../helpers/twilio-rig";
import { RECIPIENT } from "../helpers/numbers";

describe("DateSent values", () => {
  test("a bare date is its UTC day; a date-time its second, with Z or an offset", () => {
    expect(spanOf("2026-11-30")).toEqual({ from: Date.parse("2026-11-30T00:00:00Z"), to: Date.parse("2026-12-01T00:00:00Z") });
    expect(spanOf("2026-11-30T20:29:00Z")).toEqual({ from: Date.parse("2026-11-30T20:29:00Z"), to: Date.parse("2026-11-30T20:29:01Z") });
    expect(spanOf("2026-11-30T20:29:00.123Z")).toEqual({
      from: Date.parse("2026-11-30T20:29:00Z"),
      to: Date.parse("2026-11-30T20:29:01Z"),
    });
    expect(spanOf("2026-11-30T22:29:00+02:00")?.from).toBe(Date.parse("2026-11-30T20:29:00Z"));
    expect(spanOf("2026-11-30T15:29:00-05:00")?.from).toBe(Date.parse("2026-11-30T20:29:00Z"));
  });

  test("anything else is no date: none is ignored", () => {
    for (const bad of [
      "",
      "yesterday",
      "2026-02-30",
      "2026-13-01",
      "2026-11-30T25:00:00Z",
      "2026-11-30T20:29:00",
      "2026-11-30T20:29Z",
      "1764534540",
      "2026-11-30T20:29:00+24:00",
      "30/11/2026",
    ])
      expect({ bad, span: spanOf(bad) }).toEqual({ bad, span: null });
    expect(() => sentWindow({ "DateSent<": "yesterday" })).toThrow(/DateSent< must be a date/);
    expect(() => sentWindow({ DateSent: "2026-02-30" })).toThrow(/DateSent must be a date/);
  });

  test("the three filters meet: on a day, on or before, on or after", () => {
    expect(sentWindow({})).toEqual({});
    expect(sentWindow({ DateSent: "2026-11-30" })).toEqual({ sentFrom: Date.parse("2026-11-30"), sentTo: Date.parse("2026-12-01") });
    expect(sentWindow({ "DateSent<": "2026-11-30" })).toEqual({ sentTo: Date.parse("2026-12-01") });
    expect(sentWindow({ "DateSent>": "2026-11-30" })).toEqual({ sentFrom: Date.parse("2026-11-30") });
    expect(sentWindow({ "DateSent<": "2026-11-30T20:29:00Z" })).toEqual({ sentTo: Date.parse("2026-11-30T20:29:01Z") });
    expect(sentWindow({ "DateSent>": "2026-11-29", "DateSent<": "2026-11-30T06:00:00Z" })).toEqual({
      sentFrom: Date.parse("2026-11-29"),
      sentTo: Date.parse("2026-11-30T06:00:01Z"),
    });
  });
});

describe("DateSent through the twilio package", () => {
  let rig: TwilioRig;
  let ctx: TestContext;
  /** Message SIDs by when they were sent. */
  const sids: Record<string, string> = {};
  const AT = {
    twoDaysAgo: "2026-11-28T23:59:59.000Z",
    yesterday: "2026-11-29T12:00:00.000Z",
    todayEarly: "2026-11-30T08:00:00.000Z",
    todayLate: "2026-11-30T20:29:30.000Z",
  };

  beforeAll(async () => {
    rig = await startTwilioRig();
    ctx = rig.ctx;
    await ctx.phone("Shop phone");
    const c = rig.client(rig.sid, rig.token);
    for (const [name, at] of Object.entries(AT)) {
      const m = await c.messages.create({ to: RECIPIENT, body: name });
      sids[name] = m.sid;
      // When it was sent, set as the phone would have reported it.
      await ctx.sql.run("UPDATE notification SET sent_at = ? WHERE id = ?", [Date.parse(at), Number.parseInt(m.sid.slice(2), 16)]);
    }
  });
  afterAll(() => rig?.stop());

  /** A GET of Twilio's API as a hand-written query sends it; status and body. */
  const twilioGet = async (path: string) => {
    const res = await fetch(`${rig.url}/2010-04-01/Accounts/${rig.sid}${path}`, {
      headers: { authorization: `Basic ${btoa(`${rig.sid}:${rig.token}`)}` },
    });
    return { status: res.status, body: await res.json() };
  };

  const listed = async (filter: Record<string, Date | string>) => {
    const found = await rig.client(rig.sid, rig.token).messages.list(filter);
    return found.map((m) => m.body).sort();
  };

  test("dateSentBefore a date-time: only what was sent at or before that second", async () => {
    // Yesterday at 20:29: the message sent today is not listed (it was, when the time was read as a day and a day added).
    expect(await listed({ dateSentBefore: new Date("2026-11-29T20:29:00Z") })).toEqual(["twoDaysAgo", "yesterday"]);
    expect(await listed({ dateSentBefore: new Date(AT.todayLate) })).toEqual(["todayEarly", "todayLate", "twoDaysAgo", "yesterday"]);
    expect(await listed({ dateSentBefore: new Date(Date.parse(AT.todayLate) - 1000) })).toEqual(["todayEarly", "twoDaysAgo", "yesterday"]);
  });

  test("dateSentAfter a date-time: at or after that second", async () => {
    expect(await listed({ dateSentAfter: new Date("2026-11-30T08:00:00Z") })).toEqual(["todayEarly", "todayLate"]);
    expect(await listed({ dateSentAfter: new Date("2026-11-30T08:00:01Z") })).toEqual(["todayLate"]);
    expect(await listed({ dateSentAfter: new Date("2026-11-29T00:00:00Z"), dateSentBefore: new Date("2026-11-30T12:00:00Z") })).toEqual([
      "todayEarly",
      "yesterday",
    ]);
  });

  test("dateSent: a date-time is that second; a bare date in the query is that UTC day", async () => {
    expect(await listed({ dateSent: new Date(AT.yesterday) })).toEqual(["yesterday"]);
    expect(await listed({ dateSent: new Date("2026-11-29T12:00:01Z") })).toEqual([]);
    const day = await twilioGet(`/Messages.json?DateSent=2026-11-30`);
    expect(day.status).toBe(200);
    expect(day.body.messages.map((m: { body: string }) => m.body).sort()).toEqual(["todayEarly", "todayLate"]);
    const before = await twilioGet(`/Messages.json?${encodeURIComponent("DateSent<")}=2026-11-29`);
    expect(before.body.messages.map((m: { body: string }) => m.body).sort()).toEqual(["twoDaysAgo", "yesterday"]);
    const after = await twilioGet(`/Messages.json?${encodeURIComponent("DateSent>")}=2026-11-29`);
    expect(after.body.messages.map((m: { body: string }) => m.body).sort()).toEqual(["todayEarly", "todayLate", "yesterday"]);
  });

  test("a value neither form is Twilio's 400, code 20001, not ignored", async () => {
    const c = rig.client(rig.sid, rig.token);
    expect(await twilioRefusal(c.messages.list({ dateSentBefore: "yesterday" as unknown as Date }))).toEqual({ status: 400, code: 20001 });
    const bad = await twilioGet(`/Messages.json?${encodeURIComponent("DateSent>")}=2026-02-30`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 20001, status: 400 });
    expect(bad.body.message).toContain("DateSent>");
  });
});
