// SMPP 3.4's wire format: the 16-octet header, the bodies of the commands Pigeon answers and sends,
// and the optional parameters (TLVs). Pure: bytes in, objects out, and back. A body that does not
// parse is a PduError carrying the command_status to answer with; the session lives on.

export const CMD = {
  generic_nack: 0x80000000,
  bind_receiver: 0x00000001,
  bind_receiver_resp: 0x80000001,
  bind_transmitter: 0x00000002,
  bind_transmitter_resp: 0x80000002,
  query_sm: 0x00000003,
  query_sm_resp: 0x80000003,
  submit_sm: 0x00000004,
  submit_sm_resp: 0x80000004,
  deliver_sm: 0x00000005,
  deliver_sm_resp: 0x80000005,
  unbind: 0x00000006,
  unbind_resp: 0x80000006,
  replace_sm: 0x00000007,
  replace_sm_resp: 0x80000007,
  cancel_sm: 0x00000008,
  cancel_sm_resp: 0x80000008,
  bind_transceiver: 0x00000009,
  bind_transceiver_resp: 0x80000009,
  outbind: 0x0000000b,
  enquire_link: 0x00000015,
  enquire_link_resp: 0x80000015,
  submit_multi: 0x00000021,
  submit_multi_resp: 0x80000021,
  alert_notification: 0x00000102,
  data_sm: 0x00000103,
  data_sm_resp: 0x80000103,
} as const;

/** A command's name by its id, for logs and metrics ("unknown" for any other). */
export const COMMAND_NAMES: ReadonlyMap<number, string> = new Map(Object.entries(CMD).map(([name, id]) => [id, name]));
export const commandName = (id: number) => COMMAND_NAMES.get(id >>> 0) ?? "unknown";

/** The command_status values Pigeon answers with (docs/smpp.md lists when). */
export const STATUS = {
  ESME_ROK: 0x00,
  ESME_RINVMSGLEN: 0x01,
  ESME_RINVCMDLEN: 0x02,
  ESME_RINVCMDID: 0x03,
  ESME_RINVBNDSTS: 0x04,
  ESME_RALYBND: 0x05,
  ESME_RINVPRTFLG: 0x06,
  ESME_RINVREGDLVFLG: 0x07,
  ESME_RSYSERR: 0x08,
  ESME_RINVSRCADR: 0x0a,
  ESME_RINVDSTADR: 0x0b,
  ESME_RINVMSGID: 0x0c,
  ESME_RBINDFAIL: 0x0d,
  ESME_RINVPASWD: 0x0e,
  ESME_RINVSYSID: 0x0f,
  ESME_RCANCELFAIL: 0x11,
  ESME_RMSGQFUL: 0x14,
  ESME_RINVNUMDESTS: 0x33,
  ESME_RINVDESTFLAG: 0x40,
  ESME_RINVESMCLASS: 0x43,
  ESME_RSUBMITFAIL: 0x45,
  ESME_RINVDSTTON: 0x50,
  ESME_RTHROTTLED: 0x58,
  ESME_RINVSCHED: 0x61,
  ESME_RINVEXPIRY: 0x62,
  ESME_RQUERYFAIL: 0x67,
  ESME_RINVOPTPARSTREAM: 0xc0,
  ESME_RINVPARLEN: 0xc2,
  ESME_RINVOPTPARAMVAL: 0xc4,
  ESME_RUNKNOWNERR: 0xff,
} as const;

export const STATUS_NAMES: ReadonlyMap<number, string> = new Map(Object.entries(STATUS).map(([name, id]) => [id, name]));
export const statusName = (status: number) => STATUS_NAMES.get(status) ?? `0x${status.toString(16).padStart(8, "0")}`;

/** Optional parameters Pigeon reads or writes. */
export const TAG = {
  dest_addr_subunit: 0x0005,
  receipted_message_id: 0x001e,
  user_message_reference: 0x0204,
  source_port: 0x020a,
  destination_port: 0x020b,
  sar_msg_ref_num: 0x020c,
  sar_total_segments: 0x020e,
  sar_segment_seqnum: 0x020f,
  sc_interface_version: 0x0210,
  network_error_code: 0x0423,
  message_payload: 0x0424,
  message_state: 0x0427,
} as const;

/** message_state, as query_sm_resp and a receipt's TLV carry it. */
export const MESSAGE_STATE = {
  ENROUTE: 1,
  DELIVERED: 2,
  EXPIRED: 3,
  DELETED: 4,
  UNDELIVERABLE: 5,
  ACCEPTED: 6,
  UNKNOWN: 7,
  REJECTED: 8,
} as const;

/** The largest PDU Pigeon reads: a short message's 254 octets and a 64 KiB message_payload fit. */
export const MAX_PDU_LENGTH = 70_000;
export const HEADER_LENGTH = 16;

export interface Header {
  length: number;
  id: number;
  status: number;
  sequence: number;
}

/** A body that could not be read: the command_status its answer carries. */
export class PduError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function readHeader(buf: Uint8Array, at = 0): Header {
  const view = new DataView(buf.buffer, buf.byteOffset + at, HEADER_LENGTH);
  return { length: view.getUint32(0), id: view.getUint32(4), status: view.getUint32(8), sequence: view.getUint32(12) };
}

/** Reads a body field by field; every read past the end or past a field's limit is a PduError. */
export class Reader {
  private at = 0;
  constructor(private readonly buf: Uint8Array) {}

  get remaining() {
    return this.buf.length - this.at;
  }

  u8(): number {
    if (this.at + 1 > this.buf.length) throw new PduError(STATUS.ESME_RINVCMDLEN, "the body ends early");
    return this.buf[this.at++];
  }

  u32(): number {
    if (this.at + 4 > this.buf.length) throw new PduError(STATUS.ESME_RINVCMDLEN, "the body ends early");
    const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.at, 4).getUint32(0);
    this.at += 4;
    return v;
  }

  /** A NUL-terminated string of at most `max` octets with its NUL; Latin-1, as SMPP's fields are ASCII. */
  cstring(max: number, field: string, status: number = STATUS.ESME_RINVCMDLEN): string {
    const end = this.buf.indexOf(0, this.at);
    if (end === -1) throw new PduError(STATUS.ESME_RINVCMDLEN, `${field} has no terminating NUL`);
    if (end - this.at + 1 > max) throw new PduError(status, `${field} is longer than ${max - 1} octets`);
    let out = "";
    for (let i = this.at; i < end; i++) out += String.fromCharCode(this.buf[i]);
    this.at = end + 1;
    return out;
  }

  octets(n: number): Uint8Array {
    if (this.at + n > this.buf.length) throw new PduError(STATUS.ESME_RINVMSGLEN, "sm_length is more than the body holds");
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }

  /** The optional parameters after the mandatory ones. */
  tlvs(): Map<number, Uint8Array> {
    const out = new Map<number, Uint8Array>();
    while (this.remaining > 0) {
      if (this.remaining < 4) throw new PduError(STATUS.ESME_RINVOPTPARSTREAM, "an optional parameter is cut short");
      const view = new DataView(this.buf.buffer, this.buf.byteOffset + this.at, 4);
      const tag = view.getUint16(0);
      const length = view.getUint16(2);
      this.at += 4;
      if (this.at + length > this.buf.length)
        throw new PduError(STATUS.ESME_RINVPARLEN, `optional parameter 0x${tag.toString(16)} is cut short`);
      out.set(tag, this.buf.subarray(this.at, this.at + length));
      this.at += length;
    }
    return out;
  }
}

/** Builds a body. */
export class Writer {
  private parts: number[] = [];

  u8(v: number): this {
    this.parts.push(v & 0xff);
    return this;
  }

  u16(v: number): this {
    this.parts.push((v >> 8) & 0xff, v & 0xff);
    return this;
  }

  u32(v: number): this {
    this.parts.push((v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff);
    return this;
  }

  cstring(s: string): this {
    for (let i = 0; i < s.length; i++) this.parts.push(s.charCodeAt(i) & 0xff);
    this.parts.push(0);
    return this;
  }

  octets(b: Uint8Array): this {
    for (const v of b) this.parts.push(v);
    return this;
  }

  tlv(tag: number, value: Uint8Array): this {
    this.u16(tag).u16(value.length);
    return this.octets(value);
  }

  bytes(): Uint8Array {
    return Uint8Array.from(this.parts);
  }
}

/** A whole PDU: the header (its length counted) and the body. */
export function encodePdu(id: number, status: number, sequence: number, body: Uint8Array = new Uint8Array(0)): Uint8Array {
  const out = new Uint8Array(HEADER_LENGTH + body.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, out.length);
  view.setUint32(4, id >>> 0);
  view.setUint32(8, status >>> 0);
  view.setUint32(12, sequence >>> 0);
  out.set(body, HEADER_LENGTH);
  return out;
}

export interface Bind {
  systemId: string;
  password: string;
  systemType: string;
  interfaceVersion: number;
}

export function parseBind(body: Uint8Array): Bind {
  const r = new Reader(body);
  const systemId = r.cstring(16, "system_id", STATUS.ESME_RINVSYSID);
  const password = r.cstring(9, "password", STATUS.ESME_RINVPASWD);
  const systemType = r.cstring(13, "system_type");
  const interfaceVersion = r.u8();
  r.u8();
  r.u8();
  r.cstring(41, "address_range");
  return { systemId, password, systemType, interfaceVersion };
}

/** An address with its type of number and numbering plan. */
export interface Address {
  ton: number;
  npi: number;
  addr: string;
}

/** What submit_sm, submit_multi and deliver_sm share after their addresses. */
export interface ShortMessage {
  serviceType: string;
  source: Address;
  esmClass: number;
  protocolId: number;
  priorityFlag: number;
  scheduleDeliveryTime: string;
  validityPeriod: string;
  registeredDelivery: number;
  dataCoding: number;
  shortMessage: Uint8Array;
  tlvs: Map<number, Uint8Array>;
}

export interface Submit extends ShortMessage {
  destinations: Address[];
  /** Distribution list names submit_multi named (Pigeon has none: each is refused). */
  lists: string[];
}

const address = (r: Reader, field: string, max = 21): Address => ({
  ton: r.u8(),
  npi: r.u8(),
  addr: r.cstring(max, field, STATUS.ESME_RINVDSTADR),
});

function messageTail(r: Reader, head: { serviceType: string; source: Address }): ShortMessage {
  const esmClass = r.u8();
  const protocolId = r.u8();
  const priorityFlag = r.u8();
  const scheduleDeliveryTime = r.cstring(17, "schedule_delivery_time", STATUS.ESME_RINVSCHED);
  const validityPeriod = r.cstring(17, "validity_period", STATUS.ESME_RINVEXPIRY);
  const registeredDelivery = r.u8();
  r.u8(); // replace_if_present_flag: Pigeon replaces nothing.
  const dataCoding = r.u8();
  r.u8(); // sm_default_msg_id: no canned messages.
  const length = r.u8();
  if (length > 254) throw new PduError(STATUS.ESME_RINVMSGLEN, "sm_length is more than 254");
  const shortMessage = r.octets(length);
  const tlvs = r.tlvs();
  return {
    ...head,
    esmClass,
    protocolId,
    priorityFlag,
    scheduleDeliveryTime,
    validityPeriod,
    registeredDelivery,
    dataCoding,
    shortMessage,
    tlvs,
  };
}

export function parseSubmit(body: Uint8Array): Submit {
  const r = new Reader(body);
  const serviceType = r.cstring(6, "service_type");
  const source = { ton: r.u8(), npi: r.u8(), addr: r.cstring(21, "source_addr") };
  const destination = address(r, "destination_addr");
  return { ...messageTail(r, { serviceType, source }), destinations: [destination], lists: [] };
}

/** The most destinations one submit_multi may name (SMPP's own limit). */
export const MULTI_MAX = 254;

export function parseSubmitMulti(body: Uint8Array): Submit {
  const r = new Reader(body);
  const serviceType = r.cstring(6, "service_type");
  const source = { ton: r.u8(), npi: r.u8(), addr: r.cstring(21, "source_addr") };
  const count = r.u8();
  if (count === 0) throw new PduError(STATUS.ESME_RINVNUMDESTS, "number_of_dests is 0");
  const destinations: Address[] = [];
  const lists: string[] = [];
  for (let i = 0; i < count; i++) {
    const flag = r.u8();
    if (flag === 1) destinations.push(address(r, "destination_addr"));
    else if (flag === 2) lists.push(r.cstring(21, "dl_name"));
    else throw new PduError(STATUS.ESME_RINVDESTFLAG, `dest_flag ${flag} is neither 1 (an address) nor 2 (a list)`);
  }
  return { ...messageTail(r, { serviceType, source }), destinations, lists };
}

export interface QueryOrCancel {
  messageId: string;
  source: Address;
  destination: Address | null;
}

export function parseQuery(body: Uint8Array): QueryOrCancel {
  const r = new Reader(body);
  const messageId = r.cstring(65, "message_id", STATUS.ESME_RINVMSGID);
  return { messageId, source: { ton: r.u8(), npi: r.u8(), addr: r.cstring(21, "source_addr") }, destination: null };
}

export function parseCancel(body: Uint8Array): QueryOrCancel {
  const r = new Reader(body);
  r.cstring(6, "service_type");
  const messageId = r.cstring(65, "message_id", STATUS.ESME_RINVMSGID);
  const source = { ton: r.u8(), npi: r.u8(), addr: r.cstring(21, "source_addr") };
  return { messageId, source, destination: address(r, "destination_addr") };
}

/** A deliver_sm's body: a receipt or an incoming message. */
export interface Deliver {
  source: Address;
  destination: Address;
  esmClass: number;
  dataCoding: number;
  shortMessage: Uint8Array;
  tlvs: [number, Uint8Array][];
}

export function encodeDeliver(d: Deliver): Uint8Array {
  const w = new Writer()
    .cstring("")
    .u8(d.source.ton)
    .u8(d.source.npi)
    .cstring(d.source.addr)
    .u8(d.destination.ton)
    .u8(d.destination.npi)
    .cstring(d.destination.addr)
    .u8(d.esmClass)
    .u8(0)
    .u8(0)
    .cstring("")
    .cstring("")
    .u8(0)
    .u8(0)
    .u8(d.dataCoding)
    .u8(0)
    .u8(d.shortMessage.length)
    .octets(d.shortMessage);
  for (const [tag, value] of d.tlvs) w.tlv(tag, value);
  return w.bytes();
}

/** A TLV's value as an unsigned integer of its length (1, 2 or 4 octets); null when absent. */
export function tlvInt(tlvs: Map<number, Uint8Array>, tag: number): number | null {
  const v = tlvs.get(tag);
  if (!v) return null;
  if (v.length === 1) return v[0];
  if (v.length === 2) return (v[0] << 8) | v[1];
  if (v.length === 4) return ((v[0] << 24) | (v[1] << 16) | (v[2] << 8) | v[3]) >>> 0;
  throw new PduError(STATUS.ESME_RINVPARLEN, `optional parameter 0x${tag.toString(16)} has length ${v.length}`);
}

export const u8Value = (v: number) => Uint8Array.of(v & 0xff);
export const u16Value = (v: number) => Uint8Array.of((v >> 8) & 0xff, v & 0xff);
export const cstringValue = (s: string) => new Writer().cstring(s).bytes();
