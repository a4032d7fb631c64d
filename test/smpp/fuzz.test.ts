// A generated fuzzer of SMPP PDUs against the listener in process. A seeded generator (the seed is
// printed; PIGEON_FUZZ_SEED repeats a run) writes thousands of PDUs over a few connections: known and
// unknown commands, truncated bodies, fields without their NUL or past their length, TLVs that lie
// about their length, sm_length past the body, impossible command_length values, PDUs cut into tiny
// writes and many in one write, with valid binds and submits mixed in. The judge: nothing throws,
// every PDU is answered once by its sequence number, a connection closes only after an impossible
// command_length (or an unbind), the event loop is never held, unfinished PDUs hold bounded memory,
// every stored message is one answered ESME_ROK, and a fresh bind and submit still work after.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { NetworkListener } from "../../src/modules/descriptor";
import { listen } from "../../src/modules/smpp";
import { CMD, STATUS, TAG } from "../../src/modules/smpp/pdu";
import { createTestContext, type TestContext } from "../helpers/context";
import { appPhone } from "../helpers/phone";
import { bindEsme, rawSocket } from "../helpers/smpp-client";

const SEED = Number(process.env.PIGEON_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 32));
console.log(`smpp fuzz seed ${SEED} (PIGEON_FUZZ_SEED=${SEED} repeats this run)`);

/**
 * The event loop may pause no longer than this between two ticks of a short timer: a PDU that held
 * it (a loop over a lying length, a parse of a huge body) stalls it for seconds. It is no measure
 * of speed: a collection or a commit under a loaded CI machine pauses it a few hundred ms.
 */
const MAX_GAP_MS = 1500;
/** What connections holding unfinished PDUs of nearly the largest length may add to the process's resident memory. */
const MEMORY_BOUND = 64 * 1024 * 1024;

// mulberry32: small, fast and the same on every machine.
function generator(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  return {
    int,
    chance: (p: number) => next() < p,
    pick: <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)],
    bytes: (n: number) => Buffer.from(Array.from({ length: n }, () => int(0, 255))),
    ascii: (n: number) => String.fromCharCode(...Array.from({ length: n }, () => int(0x21, 0x7e))),
  };
}
type Gen = ReturnType<typeof generator>;

// A body as named fields, so a mutation can take one field's NUL away or make it too long.
type Field = { name: string; u8: number } | { name: string; c: string; nul: boolean } | { name: string; raw: Uint8Array };
const u8 = (name: string, v: number): Field => ({ name, u8: v & 0xff });
const cs = (name: string, v: string): Field => ({ name, c: v, nul: true });
const raw = (name: string, v: Uint8Array): Field => ({ name, raw: v });

function encode(fields: Field[]): Buffer {
  return Buffer.concat(
    fields.map((f) =>
      "u8" in f
        ? Buffer.of(f.u8)
        : "c" in f
          ? Buffer.concat([Buffer.from(f.c, "latin1"), f.nul ? Buffer.of(0) : Buffer.alloc(0)])
          : Buffer.from(f.raw),
    ),
  );
}

function header(length: number, id: number, sequence: number, status = 0): Buffer {
  const out = Buffer.alloc(16);
  out.writeUInt32BE(length >>> 0, 0);
  out.writeUInt32BE(id >>> 0, 4);
  out.writeUInt32BE(status >>> 0, 8);
  out.writeUInt32BE(sequence >>> 0, 12);
  return out;
}
const pdu = (id: number, sequence: number, body: Uint8Array, status = 0) =>
  Buffer.concat([header(16 + body.length, id, sequence, status), body]);

const tlv = (tag: number, value: Uint8Array, declared = value.length) => {
  const out = Buffer.alloc(4 + value.length);
  out.writeUInt16BE(tag, 0);
  out.writeUInt16BE(declared & 0xffff, 2);
  Buffer.from(value).copy(out, 4);
  return out;
};

const set = (fields: Field[], name: string, f: Partial<Field>) => {
  const i = fields.findIndex((x) => x.name === name);
  fields[i] = { ...fields[i], ...f } as Field;
};

/** The PDU builders, drawing on `rand`: each connection has its own, so a seed repeats a run whatever the timing. */
function makers(rand: Gen) {
  /** A recipient Pigeon takes (the fictional 555-01xx numbers), as SMPP writes it with TON 1. */
  const recipient = () => `141555501${String(rand.int(0, 99)).padStart(2, "0")}`;

  /** A short message Pigeon can send: its data_coding and octets. */
  function text(): { coding: number; octets: Buffer } {
    const words = `fuzz ${SEED} ${rand.int(0, 1e9)}`;
    switch (rand.int(0, 2)) {
      case 0:
        return { coding: 0, octets: Buffer.from(words, "latin1") };
      case 1:
        return { coding: 3, octets: Buffer.from(`${words} café`, "latin1") };
      default:
        return { coding: 8, octets: Buffer.from(`${words} привет`, "utf16le").swap16() };
    }
  }

  /** The fields of a valid submit_sm that asks for nothing a part of a set would wait for. */
  function submitFields(): Field[] {
    const t = text();
    return [
      cs("service_type", rand.pick(["", "CMT", "WAP"])),
      u8("source_ton", 1),
      u8("source_npi", 1),
      cs("source_addr", rand.pick(["", "Shop", "14155550000"])),
      u8("dest_ton", 1),
      u8("dest_npi", 1),
      cs("destination_addr", recipient()),
      u8("esm_class", 0),
      u8("protocol_id", 0),
      u8("priority_flag", rand.int(0, 3)),
      cs("schedule_delivery_time", ""),
      cs("validity_period", rand.pick(["", "000001000000000R"])),
      u8("registered_delivery", rand.pick([0, 1, 2, 0x11])),
      u8("replace_if_present_flag", 0),
      u8("data_coding", t.coding),
      u8("sm_default_msg_id", 0),
      u8("sm_length", t.octets.length),
      raw("short_message", t.octets),
    ];
  }

  const CSTRING_MAX: Record<string, number> = {
    service_type: 6,
    source_addr: 21,
    destination_addr: 21,
    schedule_delivery_time: 17,
    validity_period: 17,
    system_id: 16,
    password: 9,
    system_type: 13,
    address_range: 41,
    message_id: 65,
    dl_name: 21,
  };

  const SAR = new Set([TAG.sar_msg_ref_num, TAG.sar_total_segments, TAG.sar_segment_seqnum]);

  /** Optional parameters of every sort: known tags with odd lengths, unknown ones, lengths that lie, a cut-short tail. */
  function randomTlvs(): Buffer {
    const out: Buffer[] = [];
    for (let i = rand.int(1, 4); i > 0; i--) {
      let tag = rand.pick([
        TAG.destination_port,
        TAG.source_port,
        TAG.user_message_reference,
        TAG.message_payload,
        TAG.dest_addr_subunit,
        -1,
      ]);
      // Any tag but the concatenation's: a complete set of parts would wait for its other parts.
      while (tag === -1 || SAR.has(tag as never)) tag = rand.int(0, 0xffff);
      const value = rand.bytes(rand.int(0, 8));
      if (rand.chance(0.25)) {
        out.push(tlv(tag, value, value.length + rand.int(1, 400)));
        break;
      }
      out.push(tlv(tag, value));
    }
    if (rand.chance(0.2)) out.push(rand.bytes(rand.int(1, 3)));
    return Buffer.concat(out);
  }

  /** SAR parameters that never make a part waiting for others: a reference alone, a set of one, a part out of its set. */
  function sarTlvs(): Buffer {
    const ref = tlv(TAG.sar_msg_ref_num, Buffer.of(0, rand.int(0, 255)));
    switch (rand.int(0, 3)) {
      case 0:
        return ref;
      case 1:
        return Buffer.concat([ref, tlv(TAG.sar_total_segments, Buffer.of(1)), tlv(TAG.sar_segment_seqnum, Buffer.of(1))]);
      case 2:
        return Buffer.concat([
          ref,
          tlv(TAG.sar_total_segments, Buffer.of(3)),
          tlv(TAG.sar_segment_seqnum, Buffer.of(rand.pick([0, 4, 9]))),
        ]);
      default:
        return Buffer.concat([ref, tlv(TAG.sar_total_segments, Buffer.of(2, 0, 0)), tlv(TAG.sar_segment_seqnum, Buffer.of(1))]);
    }
  }

  /** A user data header that never makes a part waiting for others. */
  function udh(): { octets: Buffer; coding?: number } {
    switch (rand.int(0, 6)) {
      case 0:
        return { octets: Buffer.alloc(0) };
      case 1:
        return { octets: Buffer.of(9, 0, 3) };
      case 2:
        return { octets: Buffer.concat([Buffer.of(5, 0, 3, rand.int(0, 255), 1, 1), Buffer.from("one of one")]) };
      case 3:
        return { octets: Buffer.concat([Buffer.of(5, 0, 3, 7, 2, rand.pick([0, 3])), Buffer.from("out of its set")]) };
      case 4:
        return { octets: Buffer.concat([Buffer.of(6, 5, 4, 0x23, 0xf4, 0, 0), rand.bytes(rand.int(1, 30))]), coding: 4 };
      case 5:
        return { octets: Buffer.concat([Buffer.of(3, 0x24, 1, 9), Buffer.from("unknown element")]) };
      default:
        return { octets: Buffer.of(4, 0, 3, 1, 9) };
    }
  }

  /** A body that breaks a rule: every mutation the docs list an answer for, and random ones. */
  function mutate(fields: Field[]): Buffer {
    const cstrings = fields.filter((f) => "c" in f).map((f) => f.name);
    switch (rand.int(0, 13)) {
      case 0: {
        const body = encode(fields);
        return body.subarray(0, rand.int(0, body.length - 1));
      }
      case 1:
        set(fields, rand.pick(cstrings), { nul: false });
        return encode(fields);
      case 2: {
        const name = rand.pick(cstrings);
        set(fields, name, { c: rand.ascii((CSTRING_MAX[name] ?? 21) + rand.int(0, 40)) });
        return encode(fields);
      }
      case 3:
        if (!fields.some((f) => f.name === "sm_length")) return encode(fields).subarray(1);
        // Longer than what follows it; or past what SMPP allows.
        set(fields, "sm_length", {
          u8: rand.chance(0.5) ? 255 : Math.min(254, (fields.at(-1) as { raw: Uint8Array }).raw.length + rand.int(1, 60)),
        });
        return encode(fields);
      case 4:
        return Buffer.concat([encode(fields), randomTlvs()]);
      case 5:
        return Buffer.concat([encode(fields), tlv(TAG.message_payload, Buffer.from("and a payload too"))]);
      case 6:
        return Buffer.concat([encode(fields), sarTlvs()]);
      case 7: {
        const u = udh();
        if (!fields.some((f) => f.name === "esm_class")) return encode(fields);
        set(fields, "esm_class", { u8: 0x40 });
        if (u.coding !== undefined) set(fields, "data_coding", { u8: u.coding });
        set(fields, "sm_length", { u8: u.octets.length });
        set(fields, "short_message", { raw: u.octets });
        return encode(fields);
      }
      case 8: {
        // A field the docs give a range for, anywhere in its octet (never the header bit of esm_class).
        const name = rand.pick(["esm_class", "priority_flag", "data_coding", "dest_ton", "registered_delivery", "source_ton"]);
        if (!fields.some((f) => f.name === name)) return encode(fields);
        set(fields, name, { u8: name === "esm_class" ? rand.int(0, 255) & ~0x40 : rand.int(0, 255) });
        return encode(fields);
      }
      case 9: {
        const name = rand.pick(["schedule_delivery_time", "validity_period"]);
        if (!fields.some((f) => f.name === name)) return encode(fields);
        set(fields, name, {
          c: rand.pick([
            "tomorrow",
            "991301000000000+",
            "000000000000000R",
            "200101000000000+",
            "990101000000000+",
            "000000000001000R",
            rand.ascii(16),
          ]),
        });
        return encode(fields);
      }
      case 10:
        if (!fields.some((f) => f.name === "data_coding")) return encode(fields);
        set(fields, "data_coding", { u8: 8 });
        set(fields, "sm_length", { u8: 3 });
        set(fields, "short_message", { raw: Buffer.from("odd") });
        return encode(fields);
      case 11:
        if (!fields.some((f) => f.name === "destination_addr")) return encode(fields);
        set(fields, "destination_addr", { c: rand.pick(["", "12", "shop", "+", "0049301234567", "1".repeat(20), rand.ascii(10)]) });
        return encode(fields);
      case 12: {
        // A few octets flipped where they cannot make a header (esm_class keeps its bit clear).
        const body = encode(fields);
        const esm = fields.findIndex((f) => f.name === "esm_class");
        const at = esm === -1 ? -1 : encode(fields.slice(0, esm)).length;
        for (let i = rand.int(1, 4); i > 0; i--) {
          const j = rand.int(0, Math.max(0, body.length - 1));
          if (j !== at) body[j] = rand.int(0, 255);
        }
        return body;
      }
      default:
        return Buffer.concat([encode(fields), rand.bytes(rand.int(1, 20))]);
    }
  }

  const bindFields = (systemId: string, password: string): Field[] => [
    cs("system_id", systemId),
    cs("password", password),
    cs("system_type", ""),
    u8("interface_version", 0x34),
    u8("addr_ton", 0),
    u8("addr_npi", 0),
    cs("address_range", ""),
  ];

  /** A bind body that cannot be read: every way here fails before the password is checked. */
  function unreadableBind(fields: Field[]): Buffer {
    switch (rand.int(0, 2)) {
      case 0: {
        const body = encode(fields);
        return body.subarray(0, rand.int(0, body.length - 1));
      }
      case 1: {
        const name = rand.pick(["system_id", "password", "system_type", "address_range"]);
        set(fields, name, { c: rand.ascii(CSTRING_MAX[name] + rand.int(0, 30)) });
        return encode(fields);
      }
      default:
        // No NUL anywhere: nothing in it is a field.
        return Buffer.from(Array.from({ length: rand.int(0, 60) }, () => rand.int(1, 255)));
    }
  }

  function multiFields(): { fields: Field[]; sme: number; dl: number } {
    const t = text();
    const dests: Field[] = [];
    let sme = 0;
    let dl = 0;
    for (let i = rand.int(1, 4); i > 0; i--) {
      if (rand.chance(0.2)) {
        dl++;
        dests.push(u8("dest_flag", 2), cs("dl_name", `list${i}`));
      } else {
        sme++;
        dests.push(u8("dest_flag", 1), u8("dest_ton", 1), u8("dest_npi", 1), cs("destination_addr", rand.chance(0.2) ? "12" : recipient()));
      }
    }
    const fields = [
      cs("service_type", ""),
      u8("source_ton", 1),
      u8("source_npi", 1),
      cs("source_addr", ""),
      u8("number_of_dests", sme + dl),
      ...dests,
      u8("esm_class", 0),
      u8("protocol_id", 0),
      u8("priority_flag", 0),
      cs("schedule_delivery_time", ""),
      cs("validity_period", ""),
      u8("registered_delivery", 0),
      u8("replace_if_present_flag", 0),
      u8("data_coding", t.coding),
      u8("sm_default_msg_id", 0),
      u8("sm_length", t.octets.length),
      raw("short_message", t.octets),
    ];
    return { fields, sme, dl };
  }

  /** A submit_multi that is refused whole, before any send: none of its destinations is stored. */
  function refusedMulti(fields: Field[]): Buffer {
    switch (rand.int(0, 3)) {
      case 0: {
        const body = encode(fields);
        return body.subarray(0, rand.int(0, body.length - 1));
      }
      case 1:
        set(fields, "number_of_dests", { u8: 0 });
        return encode(fields);
      case 2:
        set(fields, "dest_flag", { u8: rand.pick([0, 3, 255]) });
        return encode(fields);
      default:
        set(fields, "data_coding", { u8: rand.pick([5, 6, 7, 0xf5]) });
        return encode(fields);
    }
  }

  return { submitFields, mutate, bindFields, unreadableBind, multiFields, refusedMulti, recipient };
}

interface Rig {
  ctx: TestContext;
  listener: NetworkListener;
  port: number;
  creds: { systemId: string; password: string };
}

type Role = "transceiver" | "transmitter" | "receiver" | null;

/** What a PDU sent is expected to bring back. */
interface Sent {
  id: number;
  what: string;
  /** A valid submit on a session that may submit: it must be ESME_ROK. */
  mustSucceed?: boolean;
  multi?: { sme: number; dl: number };
}

interface Answer {
  id: number;
  status: number;
  sequence: number;
  body: Buffer;
}

/** What the whole run saw, for the judge at the end. */
const tally = {
  pdus: 0,
  answers: 0,
  okSubmits: [] as string[],
  multiStored: 0,
  statuses: new Map<number, number>(),
};

const KNOWN = new Set<number>(Object.values(CMD));
/** Commands answered with their own response, never generic_nack. */
const OWN_RESPONSE = new Set<number>([
  CMD.submit_sm,
  CMD.submit_multi,
  CMD.query_sm,
  CMD.cancel_sm,
  CMD.enquire_link,
  CMD.bind_receiver,
  CMD.bind_transmitter,
  CMD.bind_transceiver,
  CMD.replace_sm,
  CMD.data_sm,
  CMD.deliver_sm,
  CMD.unbind,
]);

const BIND_IDS = { transceiver: CMD.bind_transceiver, transmitter: CMD.bind_transmitter, receiver: CMD.bind_receiver } as const;

/** One connection of the fuzz: its PDUs by sequence number, and the answers. */
class FuzzConnection {
  readonly sent = new Map<number, Sent>();
  private seen = 0;
  bound: Role = null;
  /** Ids this connection was answered with, for its query_sm and cancel_sm. */
  readonly acked: number[] = [];
  private wrongPasswords = 0;
  readonly rand: Gen;
  readonly m: ReturnType<typeof makers>;
  /** The listener ended the connection (its FIN, or the connection's close or reset). */
  ended = false;
  constructor(
    readonly socket: Awaited<ReturnType<typeof rawSocket>>,
    readonly rig: Rig,
    index: number,
  ) {
    this.rand = generator((SEED + Math.imul(index + 1, 0x9e3779b9)) >>> 0);
    this.m = makers(this.rand);
    for (const event of ["end", "close", "error"]) socket.socket.on(event, () => (this.ended = true));
  }

  /** Connection `index` of the run: its PDUs are drawn from the seed and the index alone. */
  static async open(rig: Rig, index: number) {
    return new FuzzConnection(await rawSocket(rig.port), rig, index);
  }

  private sequence(): number {
    const { rand } = this;
    for (;;) {
      const s = rand.chance(0.05) ? rand.pick([0, 1, 0x7fffffff, 0x80000000, 0xffffffff]) : rand.int(0, 0xffffffff);
      if (!this.sent.has(s)) return s;
    }
  }

  /** A PDU's bytes, noted as sent. */
  make(id: number, body: Uint8Array, sent: Omit<Sent, "id">, status = 0): Buffer {
    const sequence = this.sequence();
    this.sent.set(sequence, { id: id >>> 0, ...sent });
    tally.pdus++;
    return pdu(id, sequence, body, status);
  }

  bind(as: Exclude<Role, null>): Buffer {
    this.bound = as;
    return this.make(BIND_IDS[as], encode(this.m.bindFields(this.rig.creds.systemId, this.rig.creds.password)), { what: `bind_${as}` });
  }

  /** One PDU of any sort. */
  random(): Buffer {
    const { rand, m } = this;
    const transmits = this.bound === "transceiver" || this.bound === "transmitter";
    const roll = rand.int(0, 99);
    if (roll < 18) return this.make(CMD.submit_sm, encode(m.submitFields()), { what: "submit_sm", mustSucceed: transmits });
    if (roll < 48) return this.make(CMD.submit_sm, m.mutate(m.submitFields()), { what: "submit_sm mutated" });
    if (roll < 54) {
      const multi = m.multiFields();
      if (rand.chance(0.5)) return this.make(CMD.submit_multi, encode(multi.fields), { what: "submit_multi", multi });
      return this.make(CMD.submit_multi, m.refusedMulti(multi.fields), { what: "submit_multi refused", multi: { sme: 0, dl: 0 } });
    }
    if (roll < 60) {
      const as = rand.pick(["transceiver", "transmitter", "receiver"] as const);
      const fields = m.bindFields(this.rig.creds.systemId, this.rig.creds.password);
      // Bound already: any bind is ESME_RALYBND. Not bound: only binds that fail before the
      // password is checked, and a few wrong passwords (the address's throttle stays clear).
      if (this.bound) return this.make(BIND_IDS[as], rand.chance(0.5) ? encode(fields) : m.unreadableBind(fields), { what: "bind again" });
      if (this.wrongPasswords < 2 && rand.chance(0.2)) {
        this.wrongPasswords++;
        return this.make(BIND_IDS[as], encode(m.bindFields(this.rig.creds.systemId, "wrong123")), { what: "bind wrong password" });
      }
      return this.make(BIND_IDS[as], m.unreadableBind(fields), { what: "bind unreadable" });
    }
    if (roll < 66)
      return this.make(CMD.enquire_link, rand.chance(0.7) ? new Uint8Array(0) : rand.bytes(rand.int(1, 40)), { what: "enquire_link" });
    if (roll < 72) {
      const id =
        this.acked.length > 0 && rand.chance(0.5)
          ? String(rand.pick(this.acked))
          : rand.pick(["", "abc", "999999999", "1.2", rand.ascii(70)]);
      if (rand.chance(0.5)) {
        const fields = [cs("message_id", id), u8("source_ton", 1), u8("source_npi", 1), cs("source_addr", "")];
        return this.make(CMD.query_sm, rand.chance(0.6) ? encode(fields) : m.mutate(fields), { what: "query_sm" });
      }
      const fields = [
        cs("service_type", ""),
        cs("message_id", id),
        u8("source_ton", 1),
        u8("source_npi", 1),
        cs("source_addr", ""),
        u8("dest_ton", 1),
        u8("dest_npi", 1),
        cs("destination_addr", m.recipient()),
      ];
      return this.make(CMD.cancel_sm, rand.chance(0.6) ? encode(fields) : m.mutate(fields), { what: "cancel_sm" });
    }
    if (roll < 80) {
      // Commands Pigeon does not take, and ids nobody defined.
      let id = rand.pick([CMD.replace_sm, CMD.data_sm, CMD.deliver_sm, CMD.outbind, CMD.alert_notification, 0x0a, 0x7fffffff, -1]);
      if (id === -1)
        do id = rand.int(0, 0x7fffffff);
        while (KNOWN.has(id));
      return this.make(id, rand.bytes(rand.int(0, 80)), { what: `command 0x${id.toString(16)}` });
    }
    if (roll < 85) {
      // Responses (never unbind_resp, which ends the session): nothing answers them.
      let id = rand.pick([CMD.generic_nack, CMD.deliver_sm_resp, CMD.submit_sm_resp, CMD.enquire_link_resp, CMD.bind_transceiver_resp, -1]);
      while (id === -1 || id === CMD.unbind_resp) id = (rand.int(0, 0x7fffffff) | 0x80000000) >>> 0;
      return this.make(id, rand.bytes(rand.int(0, 20)), { what: "a response" }, rand.int(0, 0xff));
    }
    if (roll < 95) {
      // Known commands with random octets for a body (no NUL in them where a bind would be checked).
      const id = rand.pick([CMD.submit_sm, CMD.submit_multi, CMD.query_sm, CMD.cancel_sm, CMD.bind_transceiver, CMD.enquire_link]);
      const body = rand.bytes(rand.int(0, 200));
      if (id === CMD.bind_transceiver && !this.bound) for (let i = 0; i < body.length; i++) body[i] ||= 1;
      return this.make(id, body, { what: "random body", ...(id === CMD.submit_multi ? { multi: { sme: -1, dl: 0 } } : {}) });
    }
    // Large: a message_payload near the largest PDU, or random octets of that size.
    const size = rand.int(20_000, 69_900);
    if (rand.chance(0.5)) {
      const fields = m.submitFields();
      set(fields, "sm_length", { u8: 0 });
      set(fields, "short_message", { raw: new Uint8Array(0) });
      const payload = Buffer.alloc(size, "A".charCodeAt(0));
      return this.make(CMD.submit_sm, Buffer.concat([encode(fields), tlv(TAG.message_payload, payload.subarray(0, 0xffff))]), {
        what: "submit_sm large payload",
      });
    }
    return this.make(rand.pick([CMD.submit_sm, 0x1234]), rand.bytes(size), { what: "large random" });
  }

  /** Writes `pdus` the way a batch is chosen to go: at once, one by one, in tiny pieces, or cut anywhere. */
  async write(pdus: Buffer[]) {
    const { rand } = this;
    const all = Buffer.concat(pdus);
    const how = rand.int(0, 3);
    if (how === 0) this.socket.write(all);
    else if (how === 1) for (const p of pdus) this.socket.write(p);
    else {
      const tiny = how === 2;
      for (let at = 0; at < all.length; ) {
        const n = tiny ? rand.int(1, 7) : rand.int(1, 4096);
        this.socket.write(all.subarray(at, at + n));
        at += n;
        // Now and then let the bytes go, so the listener gets them in pieces.
        if (rand.chance(tiny ? 0.05 : 0.3)) await Bun.sleep(0);
      }
    }
  }

  /** The answers not judged yet, once every PDU sent that expects one has its answer. */
  async answers(ms = 15_000): Promise<Answer[]> {
    const expected = [...this.sent.values()].filter((s) => !(s.id & 0x80000000)).length;
    const until = Date.now() + ms;
    while (this.responses().length < expected && Date.now() < until && !this.ended) await Bun.sleep(5);
    const fresh = this.responses().slice(this.seen);
    this.seen += fresh.length;
    return fresh;
  }

  /** What the listener answered; the commands it sent of its own are receipts (a cancel_sm ends a message). */
  responses(): Answer[] {
    const all = this.socket.pdus as Answer[];
    const own = all.filter((p) => !(p.id & 0x80000000));
    expect(own.filter((p) => p.id !== CMD.deliver_sm)).toEqual([]);
    return all.filter((p) => p.id & 0x80000000);
  }
}

/** Every answer is to a PDU this connection sent, once, of the command's own response (or generic_nack). */
function judge(c: FuzzConnection, answers: Answer[], by: Map<number, Answer>) {
  for (const a of answers) {
    const sent = c.sent.get(a.sequence);
    expect({ sequence: a.sequence, to: sent?.what ?? "nothing sent" }).not.toEqual({ sequence: a.sequence, to: "nothing sent" });
    expect({ what: sent!.what, twice: by.has(a.sequence) }).toEqual({ what: sent!.what, twice: false });
    by.set(a.sequence, a);
    tally.answers++;
    tally.statuses.set(a.status, (tally.statuses.get(a.status) ?? 0) + 1);
    const resp = (sent!.id | 0x80000000) >>> 0;
    if (a.id !== CMD.generic_nack || OWN_RESPONSE.has(sent!.id))
      expect({ what: sent!.what, id: a.id }).toEqual({ what: sent!.what, id: resp });
    // Pigeon failing is ESME_RSYSERR: no input may cause it.
    expect({ what: sent!.what, status: a.status }).not.toEqual({ what: sent!.what, status: STATUS.ESME_RSYSERR });
    if (sent!.mustSucceed) expect({ what: sent!.what, status: a.status }).toEqual({ what: sent!.what, status: 0 });
    if (a.id === CMD.submit_sm_resp && a.status === 0) {
      const id = a.body.subarray(0, a.body.indexOf(0)).toString("latin1");
      expect(id).toMatch(/^\d+$/);
      tally.okSubmits.push(id);
      c.acked.push(Number(id));
    }
    if (a.id === CMD.submit_multi_resp && a.status === 0) {
      const end = a.body.indexOf(0);
      const unsuccessful = a.body[end + 1];
      // Refused whole unless it was well formed; well formed, each listed destination stored nothing.
      expect(sent!.multi && sent!.multi.sme > 0).toBe(true);
      tally.multiStored += sent!.multi!.sme - (unsuccessful - sent!.multi!.dl);
    }
  }
}

let r: Rig;
const rejections: unknown[] = [];
const onRejection = (reason: unknown) => rejections.push(reason);
const onException = (error: unknown) => rejections.push(error);

beforeAll(async () => {
  process.on("unhandledRejection", onRejection);
  process.on("uncaughtException", onException);
  const ctx = await createTestContext({ config: { host: "127.0.0.1", smpp: { port: 0, tlsPort: null } } });
  await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 100_000, requestsPerDay: 1_000_000 });
  await appPhone(ctx);
  const issued = await ctx.services.smpp.credentials.issue(ctx.workspace.id);
  // The bind and idle timeouts close connections that were never bound or went quiet: on a loaded
  // machine a run outlasts them, and a close they make is no finding of the fuzzer's.
  const listener = (await listen(ctx.services, ctx.app, { failedBindDelayMs: 20, bindTimeoutMs: 600_000, idleTimeoutMs: 600_000 }))!;
  const port = Number(/:(\d+)/.exec(listener.describe())?.[1]);
  r = { ctx, listener, port, creds: { systemId: issued.systemId, password: issued.password! } };
});

afterAll(async () => {
  process.off("unhandledRejection", onRejection);
  process.off("uncaughtException", onException);
  await r.listener.stop(0);
});

/**
 * The longest pause between two ticks of a 10 ms timer while `run` runs. `unmeasured` runs what is
 * the test's own and not the listener's (a forced collection) with the timer's clock stopped.
 */
async function longestPause<T>(run: (unmeasured: (fn: () => void) => void) => Promise<T>): Promise<{ value: T; gap: number }> {
  let last = performance.now();
  let gap = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    gap = Math.max(gap, now - last);
    last = now;
  }, 10);
  const unmeasured = (fn: () => void) => {
    fn();
    last = performance.now();
  };
  try {
    const value = await run(unmeasured);
    return { value, gap };
  } finally {
    clearInterval(timer);
  }
}

const notifications = async () => Number((await r.ctx.sql.get<{ n: number }>("SELECT count(*) AS n FROM notification"))!.n);

/** The impossible command_length values docs/smpp.md names, each ending its connection. */
const IMPOSSIBLE = [0, 1, 2, 3, 4, 8, 12, 15, 70_001, 0xffffffff];

async function waitClosed(c: FuzzConnection) {
  const until = Date.now() + 3000;
  while (!c.ended && Date.now() < until) await Bun.sleep(5);
  expect(c.ended).toBe(true);
  c.socket.close();
}

test("thousands of fuzzed PDUs: each answered by its sequence number, nothing thrown, nothing half-stored", async () => {
  const before = await notifications();
  const closedAfterImpossible: number[] = [];

  /** A connection's life: maybe a bind, batches of random PDUs each answered before the next, then an end of some sort. */
  async function life(index: number, role: Role | "late", batches: number) {
    const c = await FuzzConnection.open(r, index);
    const { rand } = c;
    const by = new Map<number, Answer>();
    if (role && role !== "late") await c.write([c.bind(role)]);
    for (let b = 0; b < batches; b++) {
      const pdus: Buffer[] = [];
      for (let i = rand.int(1, 120); i > 0; i--) {
        if (role === "late" && !c.bound && rand.chance(0.02)) pdus.push(c.bind(rand.pick(["transceiver", "transmitter"] as const)));
        else pdus.push(c.random());
      }
      await c.write(pdus);
      judge(c, await c.answers(), by);
      // A connection closes only after an impossible command_length: none was sent yet.
      expect({ index, ended: c.ended }).toEqual({ index, ended: false });
    }
    const unanswered = [...c.sent.entries()].filter(([seq, s]) => !(s.id & 0x80000000) && !by.has(seq)).map(([, s]) => s.what);
    expect({ index, unanswered }).toEqual({ index, unanswered: [] });
    const end = rand.int(0, 2);
    if (end === 0) {
      // An unbind: answered, then the connection ends.
      await c.write([c.make(CMD.unbind, new Uint8Array(0), { what: "unbind" })]);
      judge(c, await c.answers(), by);
      await waitClosed(c);
    } else if (end === 1) {
      const length = rand.pick(IMPOSSIBLE);
      const id = rand.pick([CMD.submit_sm, CMD.enquire_link, 0x777]);
      const whole = c.make(id, new Uint8Array(0), { what: `command_length ${length}` });
      const sequence = whole.readUInt32BE(12);
      // Octets after it are never read.
      await c.write([header(length, id, sequence), rand.bytes(rand.int(0, 64))]);
      const [nack] = await c.answers(3000);
      expect({ length, nack }).toMatchObject({ length, nack: { id: CMD.generic_nack, status: STATUS.ESME_RINVCMDLEN, sequence } });
      await waitClosed(c);
      expect(c.responses().at(-1)).toBe(nack);
      closedAfterImpossible.push(length);
    } else {
      await Bun.sleep(50);
      expect(c.ended).toBe(false);
      c.socket.close();
    }
  }

  /** An impossible length after PDUs in work: those are answered too, then the connection ends. */
  async function impossibleAfterWork(index: number, length: number) {
    const c = await FuzzConnection.open(r, index);
    const { rand } = c;
    const by = new Map<number, Answer>();
    const pdus = [c.bind("transmitter")];
    for (let i = rand.int(0, 6); i > 0; i--)
      pdus.push(c.make(CMD.submit_sm, encode(c.m.submitFields()), { what: "submit_sm", mustSucceed: true }));
    pdus.push(c.make(CMD.enquire_link, new Uint8Array(0), { what: "enquire_link" }));
    const sequence = 0x5eed0000 + rand.int(0, 0xffff);
    pdus.push(header(length, CMD.submit_sm, sequence), rand.bytes(rand.int(0, 100)));
    await c.write(pdus);
    await waitClosed(c);
    const got = c.socket.pdus as Answer[];
    const nack = got.find((p) => p.sequence === sequence);
    expect({ length, nack }).toMatchObject({ length, nack: { id: CMD.generic_nack, status: STATUS.ESME_RINVCMDLEN } });
    judge(
      c,
      got.filter((p) => p !== nack),
      by,
    );
    expect({ length, unanswered: [...c.sent.keys()].filter((s) => !by.has(s)) }).toEqual({ length, unanswered: [] });
    closedAfterImpossible.push(length);
  }

  const started = performance.now();
  const lengths = [...IMPOSSIBLE, generator(SEED).int(70_002, 0xfffffffe)];
  const { gap } = await longestPause(async () => {
    for (let wave = 0; wave < 3; wave++) {
      const at = wave * 4;
      await Promise.all([
        life(at, "transceiver", 6),
        life(at + 1, "transmitter", 6),
        life(at + 2, "receiver", 4),
        life(at + 3, wave === 1 ? "late" : null, 4),
      ]);
    }
    for (const [i, length] of lengths.entries()) await impossibleAfterWork(100 + i, length);
  });
  console.log(
    `smpp fuzz: ${tally.pdus} PDUs, ${tally.answers} answers in ${Math.round(performance.now() - started)} ms, longest pause ${Math.round(gap)} ms; ` +
      `statuses ${JSON.stringify(Object.fromEntries([...tally.statuses].map(([s, n]) => [`0x${s.toString(16)}`, n])))}`,
  );
  expect(tally.pdus).toBeGreaterThan(2000);
  expect(closedAfterImpossible.length).toBeGreaterThanOrEqual(lengths.length);
  expect(gap).toBeLessThan(MAX_GAP_MS);
  expect(rejections).toEqual([]);
  expect(r.ctx.logs.filter((l) => /smpp (command|outbox push|sweep|concatenated submit) failed/.test(l))).toEqual([]);

  // Nothing half-stored: every stored message is one answered ESME_ROK, and each id answered once.
  expect(new Set(tally.okSubmits).size).toBe(tally.okSubmits.length);
  expect(tally.okSubmits.length).toBeGreaterThan(100);
  expect((await notifications()) - before).toBe(tally.okSubmits.length + tally.multiStored);
  const ids = new Set((await r.ctx.sql.all<{ id: number }>("SELECT id FROM notification")).map((x) => String(x.id)));
  expect(tally.okSubmits.filter((id) => !ids.has(id))).toEqual([]);
}, 60_000);

test("hundreds of connections holding unfinished 70,000-octet PDUs: memory stays bounded, the loop is not held", async () => {
  const rand = generator(SEED ^ 0x5a5a5a5a);
  Bun.gc(true);
  const rss = process.memoryUsage().rss;
  const waves = 4;
  const perWave = 350;
  const { gap, value: peak } = await longestPause(async (unmeasured) => {
    let peak = 0;
    for (let wave = 0; wave < waves; wave++) {
      const conns = [];
      for (let i = 0; i < perWave; i += 50) conns.push(...(await Promise.all(Array.from({ length: 50 }, () => rawSocket(r.port)))));
      // One buffer for every connection's body, so the client's own copies do not count.
      const body = Buffer.alloc(70_000, wave + 1);
      for (const [i, c] of conns.entries()) {
        const length = rand.int(69_000, 70_000);
        const head = header(length, CMD.submit_sm, i);
        // Now whole, now the header a byte at a time: either way never finished.
        if (i % 10 === 0) for (let at = 0; at < 16; at++) c.write(head.subarray(at, at + 1));
        else c.write(head);
        c.write(body.subarray(16, length - rand.int(1, 500)));
      }
      await Bun.sleep(400);
      unmeasured(() => Bun.gc(true));
      peak = Math.max(peak, process.memoryUsage().rss - rss);
      // Nothing answered an unfinished PDU, and nothing closed a connection for it.
      expect(conns.filter((c) => c.pdus.length > 0 || c.ended)).toHaveLength(0);
      for (const c of conns) c.close();
      await Bun.sleep(100);
    }
    return peak;
  });
  Bun.gc(true);
  const after = process.memoryUsage().rss - rss;
  console.log(
    `smpp fuzz: ${waves * perWave} unfinished PDUs (${perWave} at once), resident memory grew ${(peak / 2 ** 20).toFixed(1)} MB at most ` +
      `(${(after / 2 ** 20).toFixed(1)} MB after), longest pause ${Math.round(gap)} ms`,
  );
  expect(peak).toBeLessThan(MEMORY_BOUND);
  expect(after).toBeLessThan(MEMORY_BOUND);
  expect(gap).toBeLessThan(MAX_GAP_MS);
  expect(rejections).toEqual([]);
}, 60_000);

test("after the fuzz a fresh bind and submit_sm still work", async () => {
  const before = await notifications();
  const { esme, resp } = await bindEsme(r.port, r.creds);
  expect(resp.command_status).toBe(0);
  const sent = await esme.call("submit_sm", { destination_addr: "14155550142", dest_addr_ton: 1, short_message: "after the fuzz" });
  expect(sent.command_status).toBe(0);
  const row = await r.ctx.sql.get<{ message: string; recipient: string }>("SELECT message, recipient FROM notification WHERE id = ?", [
    Number(sent.message_id),
  ]);
  expect(row).toEqual({ message: "after the fuzz", recipient: "+14155550142" });
  expect((await notifications()) - before).toBe(1);
  esme.close();
  expect(rejections).toEqual([]);
});
