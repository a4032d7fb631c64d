// The SMPP listener in process, judged by the `smpp` package from npm (an ESME we did not write)
// and by raw PDUs where no library goes: binds and their refusals, submit_sm as a send in every
// coding, concatenated parts, windows answered by sequence number, submit_multi, query_sm and
// cancel_sm, receipts (also to an ESME that binds later), received SMS, and malformed PDUs that
// leave the session alive.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { NetworkListener } from "../../src/modules/descriptor";
import { listen } from "../../src/modules/smpp";
import { CMD, STATUS } from "../../src/modules/smpp/pdu";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { appPhone } from "../helpers/phone";
import { selfSignedCert } from "../helpers/smtp-judge";
import { bindBody, bindEsme, connectEsme, type Esme, rawPdu, rawSocket, submitBody } from "../helpers/smpp-client";

const ANN = "+14155552671";
const BOB = "+14155550199";

interface Rig {
  ctx: TestContext;
  listener: NetworkListener;
  port: number;
  creds: { systemId: string; password: string };
  phone: Awaited<ReturnType<typeof appPhone>>;
}

async function rig(limits: Parameters<typeof listen>[2] = {}): Promise<Rig> {
  const ctx = await createTestContext({ config: { host: "127.0.0.1", smpp: { port: 0, tlsPort: null } } });
  await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 100_000, requestsPerDay: 1_000_000 });
  const phone = await appPhone(ctx);
  const issued = await ctx.services.smpp.credentials.issue(ctx.workspace.id);
  const listener = (await listen(ctx.services, ctx.app, { failedBindDelayMs: 20, ...limits }))!;
  const port = Number(/:(\d+)/.exec(listener.describe())?.[1]);
  return { ctx, listener, port, phone, creds: { systemId: issued.systemId, password: issued.password! } };
}

const stored = (ctx: TestContext) =>
  ctx.sql.all<{ id: number; recipient: string; message: string; status: string; schedule_at: number | null; valid_until: number | null }>(
    "SELECT id, recipient, message, status, schedule_at, valid_until FROM notification ORDER BY id",
  );

describe("binds", () => {
  let r: Rig;
  beforeAll(async () => {
    r = await rig();
  });
  afterAll(() => r.listener.stop(0));

  test("credentials: a system_id and an 8-character password, sealed at rest, shown once", async () => {
    expect(r.creds.systemId).toBe(`pigeon${r.ctx.workspace.id}`);
    expect(r.creds.password).toMatch(/^[A-Za-z0-9]{8}$/);
    const row = await r.ctx.sql.get<{ password: string }>("SELECT password FROM smpp_credential WHERE workspace_id = ?", [
      r.ctx.workspace.id,
    ]);
    expect(row!.password).not.toContain(r.creds.password);
    expect((await r.ctx.services.smpp.credentials.issue(r.ctx.workspace.id)).password).toBeNull();
    const api = expectEnvelope(await r.ctx.get("/v1/api/smpp/credentials"), 200).data;
    expect(api).toMatchObject({ system_id: r.creds.systemId, password: null, listener: { port: r.port } });
  });

  test("a wrong password, an unknown system_id: refused with their codes; a good bind of each kind", async () => {
    const wrong = await bindEsme(r.port, { systemId: r.creds.systemId, password: "nope1234" });
    expect(wrong.resp.command_status).toBe(STATUS.ESME_RINVPASWD);
    wrong.esme.close();
    const unknown = await bindEsme(r.port, { systemId: "nobody", password: r.creds.password });
    expect(unknown.resp.command_status).toBe(STATUS.ESME_RINVSYSID);
    unknown.esme.close();
    for (const as of ["transmitter", "receiver", "transceiver"] as const) {
      const ok = await bindEsme(r.port, r.creds, as);
      expect(ok.resp.command_status).toBe(0);
      expect(ok.resp.system_id).toBe("Pigeon");
      // Bound twice: refused, and the first bind stands.
      expect((await ok.esme.call(`bind_${as}`, { system_id: r.creds.systemId, password: r.creds.password })).command_status).toBe(
        STATUS.ESME_RALYBND,
      );
      expect((await ok.esme.call("enquire_link")).command_status).toBe(0);
      ok.esme.close();
    }
  });

  test("a receiver may not submit; unbind is answered and the connection ends", async () => {
    const { esme } = await bindEsme(r.port, r.creds, "receiver");
    const resp = await esme.call("submit_sm", { destination_addr: ANN.slice(1), short_message: "Hi" });
    expect(resp.command_status).toBe(STATUS.ESME_RINVBNDSTS);
    expect((await esme.call("unbind")).command_status).toBe(0);
    await esme.closed;
  });

  test("failed binds from one address are throttled as the dashboard's sign-ins are", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++) {
      const b = await bindEsme(r.port, { systemId: r.creds.systemId, password: `bad${i}xxxx`.slice(0, 8) });
      statuses.push(b.resp.command_status);
      b.esme.close();
    }
    expect(statuses.slice(0, 3).every((s) => s === STATUS.ESME_RINVPASWD)).toBe(true);
    expect(statuses.at(-1)).toBe(STATUS.ESME_RBINDFAIL);
    // Throttled, even the right password is refused for now.
    const good = await bindEsme(r.port, r.creds);
    expect(good.resp.command_status).toBe(STATUS.ESME_RBINDFAIL);
    good.esme.close();
  });
});

describe("submit_sm is a send", () => {
  let r: Rig;
  let esme: Esme;
  beforeAll(async () => {
    r = await rig();
    esme = (await bindEsme(r.port, r.creds)).esme;
  });
  afterAll(async () => {
    esme.close();
    await r.listener.stop(0);
  });

  test("GSM 7-bit (unpacked, with the extension table), Latin-1 and UCS-2: stored as the text, the id after the commit", async () => {
    const gsm = Buffer.from([0x48, 0x69, 0x20, 0x00, 0x20, 0x1b, 0x65, 0x35, 0x20, 0x1b, 0x3c, 0x78, 0x1b, 0x3e]); // "Hi @ €5 [x]"
    const a = await esme.call("submit_sm", { destination_addr: ANN.slice(1), dest_addr_ton: 1, data_coding: 0, short_message: gsm });
    expect(a.command_status).toBe(0);
    const b = await esme.call("submit_sm", {
      destination_addr: ANN.slice(1),
      dest_addr_ton: 1,
      data_coding: 3,
      short_message: Buffer.from("Café 5°", "latin1"),
    });
    const c = await esme.call("submit_sm", {
      destination_addr: ANN.slice(1),
      dest_addr_ton: 1,
      data_coding: 8,
      short_message: Buffer.from("Привет 👋", "utf16le").swap16(),
    });
    const rows = await stored(r.ctx);
    const byId = new Map(rows.map((row) => [String(row.id), row]));
    expect(byId.get(a.message_id)).toMatchObject({ recipient: ANN, message: "Hi @ €5 [x]" });
    expect(byId.get(b.message_id)?.message).toBe("Café 5°");
    expect(byId.get(c.message_id)?.message).toBe("Привет 👋");
  });

  test("national numbers with the workspace's default country; an invalid number is ESME_RINVDSTADR and stores nothing", async () => {
    expectEnvelope(await r.ctx.post("/v1/api/workspace/settings", { default_country: "DE" }), 200);
    const national = await esme.call("submit_sm", { destination_addr: "030 1234567", dest_addr_ton: 2, short_message: "Hallo" });
    expect(national.command_status).toBe(0);
    const unknownTon = await esme.call("submit_sm", { destination_addr: "03012345678", dest_addr_ton: 0, short_message: "Hallo" });
    expect(unknownTon.command_status).toBe(0);
    const rows = await stored(r.ctx);
    expect(rows.find((x) => String(x.id) === national.message_id)?.recipient).toBe("+49301234567");
    expect(rows.find((x) => String(x.id) === unknownTon.message_id)?.recipient).toBe("+493012345678");
    const before = rows.length;
    for (const bad of [
      { destination_addr: "12", dest_addr_ton: 1 },
      { destination_addr: "shop", dest_addr_ton: 5 },
      { destination_addr: "" },
    ]) {
      const resp = await esme.call("submit_sm", { ...bad, short_message: "x" });
      expect({ bad, status: resp.command_status, id: resp.message_id }).toEqual({ bad, status: STATUS.ESME_RINVDSTADR, id: "" });
    }
    expect((await stored(r.ctx)).length).toBe(before);
    expectEnvelope(await r.ctx.post("/v1/api/workspace/settings", { default_country: null }), 200);
  });

  test("message_payload, a schedule and a validity (relative), priority_flag 3 as expedited", async () => {
    const text = "A".repeat(300);
    const resp = await esme.call("submit_sm", {
      destination_addr: BOB.slice(1),
      dest_addr_ton: 1,
      message_payload: text,
      schedule_delivery_time: "000000010000000R",
      validity_period: "000001000000000R",
      priority_flag: 3,
    });
    expect(resp.command_status).toBe(0);
    const row = (await stored(r.ctx)).find((x) => String(x.id) === resp.message_id)!;
    expect(row.message).toBe(text);
    const now = r.ctx.clock.now();
    expect(row.schedule_at! - now).toBeGreaterThan(3590_000);
    expect(row.schedule_at! - now).toBeLessThanOrEqual(3600_000);
    expect(row.valid_until! - now).toBeGreaterThan(86_390_000);
    const priority = await r.ctx.sql.get<{ priority: number }>("SELECT priority FROM notification WHERE id = ?", [Number(resp.message_id)]);
    expect(priority!.priority).toBe(127);
    // A time that is no SMPP time: its own code, nothing stored.
    const bad = await esme.call("submit_sm", { destination_addr: BOB.slice(1), short_message: "x", schedule_delivery_time: "tomorrow" });
    expect(bad.command_status).toBe(STATUS.ESME_RINVSCHED);
    const past = await esme.call("submit_sm", { destination_addr: BOB.slice(1), short_message: "x", validity_period: "200101000000000+" });
    expect(past.command_status).toBe(STATUS.ESME_RINVEXPIRY);
  });

  test("concatenated parts (8-bit and 16-bit UDH, SAR), in any order, are one message; each part answered with its id", async () => {
    const udh8 = (ref: number, total: number, seq: number) => Buffer.of(5, 0, 3, ref, total, seq);
    const udh16 = (ref: number, total: number, seq: number) => Buffer.of(6, 8, 4, ref >> 8, ref & 0xff, total, seq);
    const parts = ["First part, ", "second part, ", "third."];
    const send = (i: number, udh: Buffer) =>
      esme.call("submit_sm", {
        destination_addr: ANN.slice(1),
        esm_class: 0x40,
        data_coding: 3,
        short_message: Buffer.concat([udh, Buffer.from(parts[i], "latin1")]),
      });
    const eight = await Promise.all([send(2, udh8(7, 3, 3)), send(0, udh8(7, 3, 1)), send(1, udh8(7, 3, 2))]);
    expect(eight.map((p) => p.command_status)).toEqual([0, 0, 0]);
    const id = eight[1].message_id;
    // Every part is answered with the message's id, decimal digits as ESMEs read them.
    expect(eight.map((p) => p.message_id)).toEqual([id, id, id]);
    expect(id).toMatch(/^\d+$/);
    expect((await stored(r.ctx)).find((x) => String(x.id) === id)?.message).toBe(parts.join(""));

    const sixteen = await Promise.all([send(1, udh16(300, 3, 2)), send(0, udh16(300, 3, 1)), send(2, udh16(300, 3, 3))]);
    expect((await stored(r.ctx)).find((x) => String(x.id) === sixteen[1].message_id)?.message).toBe(parts.join(""));

    const sar = (i: number) =>
      esme.call("submit_sm", {
        destination_addr: BOB.slice(1),
        short_message: parts[i],
        sar_msg_ref_num: 9,
        sar_total_segments: 3,
        sar_segment_seqnum: i + 1,
      });
    const bySar = await Promise.all([sar(0), sar(2), sar(1)]);
    expect(bySar.map((p) => p.command_status)).toEqual([0, 0, 0]);
    expect((await stored(r.ctx)).find((x) => String(x.id) === bySar[0].message_id)?.message).toBe(parts.join(""));
  });

  test("a window of 20 submits written at once: each answered by its sequence number", async () => {
    const raw = await rawSocket(r.port);
    raw.write(rawPdu(CMD.bind_transceiver, 1, bindBody(r.creds.systemId, r.creds.password)));
    await raw.waitFor(1);
    const pdus = Buffer.concat(
      Array.from({ length: 20 }, (_, i) =>
        rawPdu(CMD.submit_sm, 100 + i, submitBody({ to: ANN.slice(1), message: Buffer.from(`window ${i}`) })),
      ),
    );
    raw.write(pdus);
    const answers = (await raw.waitFor(21)).slice(1);
    expect(answers.every((a) => a.id === CMD.submit_sm_resp && a.status === 0)).toBe(true);
    expect(answers.map((a) => a.sequence).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => 100 + i));
    const rows = await stored(r.ctx);
    for (const a of answers) {
      const id = Number(a.body.subarray(0, a.body.indexOf(0)).toString());
      expect(rows.find((x) => x.id === id)?.message).toBe(`window ${a.sequence - 100}`);
    }
    raw.close();
  });

  test("submit_multi: each destination a send; those refused listed with their status", async () => {
    const resp = await esme.call("submit_multi", {
      dest_address: [
        { dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: ANN.slice(1) },
        { dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: "12" },
        { dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: BOB.slice(1) },
      ],
      short_message: "To all",
    });
    expect(resp.command_status).toBe(0);
    expect(resp.unsuccess_sme).toEqual([expect.objectContaining({ destination_addr: "12", error_status_code: STATUS.ESME_RINVDSTADR })]);
    const rows = (await stored(r.ctx)).filter((x) => x.message === "To all");
    expect(rows.map((x) => x.recipient).sort()).toEqual([BOB, ANN].sort());
    expect(String(rows[0].id)).toBe(resp.message_id);
  });

  test("query_sm and cancel_sm answer from the message's state", async () => {
    const later = await esme.call("submit_sm", {
      destination_addr: BOB.slice(1),
      short_message: "Later",
      schedule_delivery_time: "000001000000000R",
    });
    const q = await esme.call("query_sm", { message_id: later.message_id });
    expect(q.command_status).toBe(0);
    expect(q.message_state).toBe(6); // ACCEPTED
    expect((await esme.call("cancel_sm", { message_id: later.message_id })).command_status).toBe(0);
    const after = await esme.call("query_sm", { message_id: later.message_id });
    expect(after.message_state).toBe(4); // DELETED
    // The library reads final_date as the SMPP time it is: the instant of the cancel, to the second.
    expect(new Date(after.final_date).getTime()).toBe(Math.floor(r.ctx.clock.now() / 1000) * 1000);
    // Cancelled already, unknown, not an id.
    expect((await esme.call("cancel_sm", { message_id: later.message_id })).command_status).toBe(STATUS.ESME_RCANCELFAIL);
    expect((await esme.call("query_sm", { message_id: "999999" })).command_status).toBe(STATUS.ESME_RQUERYFAIL);
    expect((await esme.call("query_sm", { message_id: "abc" })).command_status).toBe(STATUS.ESME_RINVMSGID);
  });

  test("an opted-out recipient is ESME_RSUBMITFAIL, the key's daily cap ESME_RTHROTTLED; nothing stored", async () => {
    expectEnvelope(await r.ctx.post("/v1/api/optout/add", { phone: "+14155550123" }), 200);
    const before = (await stored(r.ctx)).length;
    const out = await esme.call("submit_sm", { destination_addr: "14155550123", dest_addr_ton: 1, short_message: "x" });
    expect(out.command_status).toBe(STATUS.ESME_RSUBMITFAIL);
    expect((await stored(r.ctx)).length).toBe(before);
    // The SMPP key is a key like any: its daily cap holds for submits.
    const { keyId } = (await r.ctx.sql.get<{ keyId: number }>('SELECT key_id AS "keyId" FROM smpp_credential WHERE workspace_id = ?', [
      r.ctx.workspace.id,
    ]))!;
    const today = await r.ctx.services.accounts.keySendsToday(Number(keyId));
    expectEnvelope(await r.ctx.post("/v1/api/key/update", { key_id: Number(keyId), daily_cap: today + 1 }), 200);
    const first = await esme.call("submit_sm", { destination_addr: ANN.slice(1), short_message: "capped" });
    const second = await esme.call("submit_sm", { destination_addr: ANN.slice(1), short_message: "capped" });
    expect([first.command_status, second.command_status]).toEqual([0, STATUS.ESME_RTHROTTLED]);
    expect((await stored(r.ctx)).length).toBe(before + 1);
    expectEnvelope(await r.ctx.post("/v1/api/key/update", { key_id: Number(keyId), daily_cap: null }), 200);
  });
});

describe("limits", () => {
  test("the plan's rate limit is ESME_RTHROTTLED, the submits within it sent", async () => {
    const r = await rig();
    await r.ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 2, requestsPerDay: 1_000_000 });
    const { esme } = await bindEsme(r.port, r.creds);
    const answers = [];
    for (let i = 0; i < 4; i++)
      answers.push((await esme.call("submit_sm", { destination_addr: ANN.slice(1), short_message: `rate ${i}` })).command_status);
    expect(answers).toContain(STATUS.ESME_RTHROTTLED);
    const sent = answers.filter((a) => a === 0).length;
    expect(sent).toBeGreaterThan(0);
    expect((await stored(r.ctx)).filter((x) => x.message.startsWith("rate ")).length).toBe(sent);
    esme.close();
    await r.listener.stop(0);
  });
});

describe("parts, data SMS and TLS", () => {
  test("a set that never completes: its parts answered ESME_RSUBMITFAIL after the wait, nothing stored", async () => {
    const r = await rig({ concatWaitMs: 200 });
    const { esme } = await bindEsme(r.port, r.creds);
    const before = (await stored(r.ctx)).length;
    const udh = Buffer.of(5, 0, 3, 42, 3, 1);
    const first = await esme.call("submit_sm", {
      destination_addr: ANN.slice(1),
      esm_class: 0x40,
      short_message: Buffer.concat([udh, Buffer.from("only part one")]),
    });
    expect(first).toMatchObject({ command_status: STATUS.ESME_RSUBMITFAIL, message_id: "" });
    expect((await stored(r.ctx)).length).toBe(before);
    esme.close();
    await r.listener.stop(0);
  });

  test("data_coding 4 with destination_port (or a port header) is a data SMS through the phone; without a port ESME_RSUBMITFAIL", async () => {
    const r = await rig();
    const raw = await rawSocket(r.port);
    raw.write(rawPdu(CMD.bind_transceiver, 1, bindBody(r.creds.systemId, r.creds.password)));
    await raw.waitFor(1);
    const bytes = Buffer.of(0xca, 0xfe, 0x00, 0x01);
    const portTlv = Buffer.of(0x02, 0x0b, 0, 2, 2948 >> 8, 2948 & 0xff);
    const portHeader = Buffer.of(6, 0x05, 4, 0x0b, 0x84, 0, 0); // 16-bit ports: destination 2948
    raw.write(rawPdu(CMD.submit_sm, 2, submitBody({ to: ANN.slice(1), message: bytes, dataCoding: 4, tlvs: portTlv })));
    raw.write(
      rawPdu(
        CMD.submit_sm,
        3,
        submitBody({ to: ANN.slice(1), message: Buffer.concat([portHeader, bytes]), dataCoding: 4, esmClass: 0x40 }),
      ),
    );
    raw.write(rawPdu(CMD.submit_sm, 4, submitBody({ to: ANN.slice(1), message: bytes, dataCoding: 4 })));
    const answers = new Map((await raw.waitFor(4)).slice(1).map((p) => [p.sequence, p]));
    expect([2, 3, 4].map((seq) => answers.get(seq)?.status)).toEqual([0, 0, STATUS.ESME_RSUBMITFAIL]);
    for (const seq of [2, 3]) {
      const id = Number(answers.get(seq)!.body.subarray(0, -1).toString());
      const row = await r.ctx.sql.get<{ data_message: string }>("SELECT data_message FROM notification WHERE id = ?", [id]);
      expect(JSON.parse(row!.data_message)).toEqual({ data: bytes.toString("base64"), port: 2948 });
    }
    raw.close();
    await r.listener.stop(0);
  });

  test("SMPP over TLS (PIGEON_SMPP_TLS_PORT) binds and submits as the plain port does", async () => {
    const cert = selfSignedCert();
    const ctx = await createTestContext({
      config: { host: "127.0.0.1", tls: { cert: cert.cert, key: cert.key }, smpp: { port: null, tlsPort: 0 } },
    });
    await appPhone(ctx);
    const issued = await ctx.services.smpp.credentials.issue(ctx.workspace.id);
    const listener = (await listen(ctx.services, ctx.app))!;
    expect(listener.describe()).toMatch(/^smpp over TLS on 127\.0\.0\.1:\d+$/);
    const esme = await connectEsme(Number(/:(\d+)/.exec(listener.describe())?.[1]), "127.0.0.1", true);
    expect((await esme.call("bind_transceiver", { system_id: issued.systemId, password: issued.password })).command_status).toBe(0);
    const resp = await esme.call("submit_sm", { destination_addr: ANN.slice(1), short_message: "Over TLS" });
    expect(resp.command_status).toBe(0);
    expect((await stored(ctx)).find((x) => String(x.id) === resp.message_id)?.message).toBe("Over TLS");
    esme.close();
    await listener.stop(0);
  });
});

describe("receipts and received SMS", () => {
  let r: Rig;
  beforeAll(async () => {
    r = await rig();
  });
  afterAll(() => r.listener.stop(0));

  test("a receipt when the message is delivered: the customary text and the TLVs", async () => {
    const { esme } = await bindEsme(r.port, r.creds);
    const resp = await esme.call("submit_sm", {
      destination_addr: ANN.slice(1),
      short_message: "Your order shipped",
      registered_delivery: 1,
    });
    const id = Number(resp.message_id);
    await r.ctx.services.state.transition(id, "sent");
    await r.ctx.services.state.transition(id, "delivered");
    const [receipt] = await esme.waitDelivered(1);
    expect(receipt.esm_class & 0x3c).toBe(0x04);
    const text = receipt.short_message.message as string;
    expect(text).toMatch(
      new RegExp(`^id:${id} sub:001 dlvrd:001 submit date:\\d{10} done date:\\d{10} stat:DELIVRD err:000 text:Your order shipped$`),
    );
    expect(receipt.receipted_message_id).toBe(String(id));
    expect(receipt.message_state).toBe(2);
    expect(receipt.source_addr).toBe(ANN.slice(1));
    esme.close();
  });

  test("receipts owed while no receiver is bound wait, and go when one binds", async () => {
    const tx = (await bindEsme(r.port, r.creds, "transmitter")).esme;
    const resp = await tx.call("submit_sm", { destination_addr: BOB.slice(1), short_message: "Failing", registered_delivery: 2 });
    const id = Number(resp.message_id);
    await r.ctx.services.state.transition(id, "failed", { errorCode: "carrier_rejected", reason: "rejected" });
    tx.close();
    const waiting = await r.ctx.sql.all<{ kind: string }>("SELECT kind FROM smpp_outbox");
    expect(waiting.map((w) => w.kind)).toContain("receipt");
    const rx = (await bindEsme(r.port, r.creds, "receiver")).esme;
    const [receipt] = await rx.waitDelivered(1);
    expect(receipt.short_message.message).toContain(`id:${id} `);
    expect(receipt.short_message.message).toContain("stat:UNDELIV");
    expect(receipt.message_state).toBe(5);
    await Bun.sleep(100);
    expect(await r.ctx.sql.all("SELECT id FROM smpp_outbox")).toHaveLength(0);
    rx.close();
  });

  test("an ESME that refuses a deliver_sm gets it again later; nothing is lost", async () => {
    const rx = await connectEsme(r.port);
    await rx.call("bind_receiver", { system_id: r.creds.systemId, password: r.creds.password });
    rx.refuse = STATUS.ESME_RSYSERR;
    await r.phone.receive(ANN, "Is the shop open?");
    await rx.waitDelivered(1);
    rx.refuse = 0;
    // Once the refusal is noted, the outbox's first retry waits a few seconds: move the clock past it.
    const until = Date.now() + 5000;
    while (Date.now() < until && !(await r.ctx.sql.get("SELECT id FROM smpp_outbox WHERE attempts = 1"))) await Bun.sleep(10);
    r.ctx.clock.advance(10_000);
    const all = await rx.waitDelivered(2, 5000);
    expect(all[1].short_message.message).toBe("Is the shop open?");
    expect(all[1].source_addr).toBe(ANN.slice(1));
    rx.close();
  });

  test("a received data SMS is deliver_sm in data_coding 4 behind a 16-bit port header; the device names an unknown number", async () => {
    const rx = await connectEsme(r.port);
    await rx.call("bind_receiver", { system_id: r.creds.systemId, password: r.creds.password });
    const before = rx.delivered.length;
    await r.phone.receiveData(BOB, Buffer.of(1, 2, 3, 250).toString("base64"));
    const [pdu] = (await rx.waitDelivered(before + 1)).slice(before);
    expect(pdu.data_coding).toBe(4);
    expect(pdu.esm_class & 0x40).toBe(0x40);
    expect(pdu.destination_addr).toBe(`device${r.phone.deviceId}`);
    // The header's port element, then the bytes as the phone received them.
    expect([...pdu.short_message.udh[0]].slice(0, 2)).toEqual([0x05, 4]);
    expect([...Buffer.from(pdu.short_message.message)]).toEqual([1, 2, 3, 250]);
    rx.close();
  });

  test("a received SMS, long and Unicode, is deliver_sm in UCS-2 parts with a concatenation header", async () => {
    const rx = (await bindEsme(r.port, r.creds, "receiver")).esme;
    const text = `Grüße 👋 ${"ж".repeat(100)}`;
    await r.phone.receive(BOB, text);
    const parts = await rx.waitDelivered(2);
    expect(parts.every((p) => p.data_coding === 8 && (p.esm_class & 0x40) === 0x40)).toBe(true);
    const joined = parts
      .map((p) => ({ seq: p.short_message.udh[0][4], text: p.short_message.message as string }))
      .sort((a, b) => a.seq - b.seq)
      .map((p) => p.text)
      .join("");
    expect(joined).toBe(text);
    rx.close();
  });
});

describe("malformed PDUs", () => {
  let r: Rig;
  beforeAll(async () => {
    r = await rig();
  });
  afterAll(() => r.listener.stop(0));

  test("an unknown command is generic_nack; a truncated body its own error; the session lives on", async () => {
    const raw = await rawSocket(r.port);
    raw.write(rawPdu(CMD.bind_transceiver, 1, bindBody(r.creds.systemId, r.creds.password)));
    raw.write(rawPdu(0x00000777, 2));
    raw.write(rawPdu(CMD.submit_sm, 3, Buffer.from([0, 1, 1])));
    raw.write(rawPdu(CMD.submit_sm, 4, submitBody({ to: ANN.slice(1), message: Buffer.from("x"), dataCoding: 8 })));
    raw.write(rawPdu(CMD.submit_sm, 5, submitBody({ to: ANN.slice(1), message: Buffer.from("ok") }).subarray(0, 20)));
    raw.write(rawPdu(CMD.replace_sm, 6, Buffer.of(0)));
    raw.write(rawPdu(CMD.enquire_link, 7));
    const got = await raw.waitFor(7);
    const bySeq = new Map(got.map((p) => [p.sequence, p]));
    expect(bySeq.get(1)?.status).toBe(0);
    expect(bySeq.get(2)).toMatchObject({ id: CMD.generic_nack, status: STATUS.ESME_RINVCMDID });
    expect(bySeq.get(3)).toMatchObject({ id: CMD.submit_sm_resp, status: STATUS.ESME_RINVCMDLEN });
    expect(bySeq.get(4)).toMatchObject({ id: CMD.submit_sm_resp, status: STATUS.ESME_RINVMSGLEN });
    expect(bySeq.get(5)?.id).toBe(CMD.submit_sm_resp);
    expect(bySeq.get(5)?.status).not.toBe(0);
    expect(bySeq.get(6)).toMatchObject({ id: CMD.replace_sm_resp, status: STATUS.ESME_RINVCMDID });
    expect(bySeq.get(7)).toMatchObject({ id: CMD.enquire_link_resp, status: 0 });
    expect(raw.ended).toBe(false);
    raw.close();
  });

  test("an unbind behind submits in work: each submit answered, then unbind_resp, then the connection ends", async () => {
    const raw = await rawSocket(r.port);
    raw.write(rawPdu(CMD.bind_transceiver, 1, bindBody(r.creds.systemId, r.creds.password)));
    await raw.waitFor(1);
    raw.write(
      Buffer.concat([
        ...Array.from({ length: 5 }, (_, i) =>
          rawPdu(CMD.submit_sm, 10 + i, submitBody({ to: ANN.slice(1), message: Buffer.from(`before unbind ${i}`) })),
        ),
        rawPdu(CMD.unbind, 20),
        rawPdu(CMD.submit_sm, 21, submitBody({ to: ANN.slice(1), message: Buffer.from("after unbind") })),
      ]),
    );
    const got = (await raw.waitFor(7)).slice(1);
    expect(got.slice(0, 5).every((p) => p.id === CMD.submit_sm_resp && p.status === 0)).toBe(true);
    expect(got[5]).toMatchObject({ id: CMD.unbind_resp, sequence: 20 });
    const until = Date.now() + 2000;
    while (!raw.ended && Date.now() < until) await Bun.sleep(10);
    expect(raw.ended).toBe(true);
    const texts = (await r.ctx.sql.all<{ message: string }>("SELECT message FROM notification")).map((n) => n.message);
    expect(texts.filter((t) => t.startsWith("before unbind"))).toHaveLength(5);
    expect(texts).not.toContain("after unbind");
  });

  test("a command_length no PDU can have: generic_nack, then the connection is closed", async () => {
    const raw = await rawSocket(r.port);
    const huge = Buffer.alloc(16);
    huge.writeUInt32BE(0xfffffff0, 0);
    huge.writeUInt32BE(CMD.submit_sm, 4);
    huge.writeUInt32BE(42, 12);
    raw.write(huge);
    const [nack] = await raw.waitFor(1);
    expect(nack).toMatchObject({ id: CMD.generic_nack, status: STATUS.ESME_RINVCMDLEN, sequence: 42 });
    const until = Date.now() + 2000;
    while (!raw.ended && Date.now() < until) await Bun.sleep(10);
    expect(raw.ended).toBe(true);
  });

  test("a submit before bind is ESME_RINVBNDSTS; an idle session is unbound", async () => {
    const own = await rig({ idleTimeoutMs: 300 });
    const raw = await rawSocket(own.port);
    raw.write(rawPdu(CMD.submit_sm, 1, submitBody({ to: ANN.slice(1), message: Buffer.from("x") })));
    expect((await raw.waitFor(1))[0]).toMatchObject({ id: CMD.submit_sm_resp, status: STATUS.ESME_RINVBNDSTS });
    raw.write(rawPdu(CMD.bind_transmitter, 2, bindBody(own.creds.systemId, own.creds.password)));
    await raw.waitFor(2);
    const [, , unbind] = await raw.waitFor(3, 3000);
    expect(unbind.id).toBe(CMD.unbind);
    raw.close();
    await own.listener.stop(0);
  });
});
