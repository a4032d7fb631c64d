// A short message's octets and text: the data_coding schemes Pigeon reads (0, the GSM 7-bit
// default alphabet, one septet per octet as SMSCs and Kannel send it; 1 and 3, Latin-1; 8, UCS-2)
// and the user data header that carries a concatenation reference or ports. Outgoing text is GSM
// when every character is in the alphabet, else UCS-2, split with a header when one SMS cannot
// hold it. Pure.
import { GSM7_BASIC, GSM7_EXTENDED } from "../../lib/segments";
import { PduError, STATUS } from "./pdu";

const ESCAPE = 0x1b;
/** The extension table's codes, in GSM7_EXTENDED's order. */
const EXTENDED_CODES = [0x14, 0x28, 0x29, 0x2f, 0x3c, 0x3d, 0x3e, 0x40, 0x65, 0x0a];
const basicCode = new Map([...GSM7_BASIC].map((ch, i) => [ch, i]));
const extendedCode = new Map([...GSM7_EXTENDED].map((ch, i) => [ch, EXTENDED_CODES[i]]));
const extendedChar = new Map(EXTENDED_CODES.map((code, i) => [code, [...GSM7_EXTENDED][i]]));
const basicChar = [...GSM7_BASIC];

/** The data_coding values whose text Pigeon reads. */
export const TEXT_CODINGS = new Set([0, 1, 3, 8]);
export const BINARY_CODINGS = new Set([2, 4]);

/** A NUL is no character of a message (and PostgreSQL cannot store one in text): refused, not sent. */
function textOnly(text: string): string {
  if (text.includes("\u0000")) throw new PduError(STATUS.ESME_RINVMSGLEN, "the text has a NUL character");
  return text;
}

/** Octets in `coding` as text; a PduError when they cannot be (an odd UCS-2 length, a NUL, an unknown scheme). */
export function decodeText(octets: Uint8Array, coding: number): string {
  if (coding === 0) {
    let out = "";
    for (let i = 0; i < octets.length; i++) {
      const code = octets[i] & 0x7f;
      if (code === ESCAPE && i + 1 < octets.length) {
        out += extendedChar.get(octets[++i] & 0x7f) ?? " ";
      } else out += basicChar[code];
    }
    return out;
  }
  if (coding === 1 || coding === 3) return textOnly(Buffer.from(octets).toString("latin1"));
  if (coding === 8) {
    if (octets.length % 2 !== 0) throw new PduError(STATUS.ESME_RINVMSGLEN, "a UCS-2 message has an odd number of octets");
    let out = "";
    for (let i = 0; i < octets.length; i += 2) out += String.fromCharCode((octets[i] << 8) | octets[i + 1]);
    return textOnly(out);
  }
  throw new PduError(STATUS.ESME_RINVOPTPARAMVAL, `data_coding ${coding} is not one Pigeon reads (0, 1, 3, 8; 4 for binary)`);
}

/** The GSM default alphabet's codes for `text` (escape pairs for the extension table), or null when a character is outside it. */
export function encodeGsm(text: string): Uint8Array | null {
  const out: number[] = [];
  for (const ch of text) {
    const basic = basicCode.get(ch);
    if (basic !== undefined && ch !== "\x1b") out.push(basic);
    else {
      const ext = extendedCode.get(ch);
      if (ext === undefined) return null;
      out.push(ESCAPE, ext);
    }
  }
  return Uint8Array.from(out);
}

export function encodeUcs2(text: string): Uint8Array {
  const out = new Uint8Array(text.length * 2);
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    out[i * 2] = unit >> 8;
    out[i * 2 + 1] = unit & 0xff;
  }
  return out;
}

/** What a user data header says: the concatenation (reference, total, this part) and the ports. */
export interface Udh {
  concat: { ref: number; total: number; seq: number } | null;
  ports: { destination: number; source: number } | null;
}

/** Splits a message with a UDH into the header's elements and the text after it. */
export function splitUdh(octets: Uint8Array): { udh: Udh; rest: Uint8Array } {
  if (octets.length < 1) throw new PduError(STATUS.ESME_RINVESMCLASS, "esm_class says a header comes first, but the message is empty");
  const length = octets[0];
  if (length + 1 > octets.length) throw new PduError(STATUS.ESME_RINVESMCLASS, "the user data header is longer than the message");
  const udh: Udh = { concat: null, ports: null };
  let at = 1;
  while (at + 2 <= length + 1) {
    const iei = octets[at];
    const ieLength = octets[at + 1];
    const value = octets.subarray(at + 2, at + 2 + ieLength);
    if (at + 2 + ieLength > length + 1) throw new PduError(STATUS.ESME_RINVESMCLASS, "a user data header element is cut short");
    if (iei === 0x00 && ieLength === 3) udh.concat = { ref: value[0], total: value[1], seq: value[2] };
    else if (iei === 0x08 && ieLength === 4) udh.concat = { ref: (value[0] << 8) | value[1], total: value[2], seq: value[3] };
    else if (iei === 0x05 && ieLength === 4) udh.ports = { destination: (value[0] << 8) | value[1], source: (value[2] << 8) | value[3] };
    else if (iei === 0x04 && ieLength === 2) udh.ports = { destination: value[0], source: value[1] };
    at += 2 + ieLength;
  }
  return { udh, rest: octets.subarray(length + 1) };
}

/** One SMS's octets for an outgoing deliver_sm: the data_coding, the octets, and whether a header leads them. */
export interface OutgoingPart {
  dataCoding: number;
  octets: Uint8Array;
  udhi: boolean;
}

/**
 * `text` as the deliver_sm short messages that carry it: one when it fits 160 GSM characters (70
 * UCS-2), else parts of 153 (67) under an 8-bit concatenation header with reference `ref`.
 */
export function partsOf(text: string, ref: number): OutgoingPart[] {
  const gsm = encodeGsm(text);
  const coding = gsm ? 0 : 8;
  const units: Uint8Array[] = [];
  if (gsm) {
    if (gsm.length <= 160) return [{ dataCoding: 0, octets: gsm, udhi: false }];
    // Split between characters: an escape pair stays whole.
    let start = 0;
    while (start < gsm.length) {
      let end = Math.min(start + 153, gsm.length);
      if (end < gsm.length && gsm[end - 1] === ESCAPE) end--;
      units.push(gsm.subarray(start, end));
      start = end;
    }
  } else {
    const all = encodeUcs2(text);
    if (all.length <= 140) return [{ dataCoding: 8, octets: all, udhi: false }];
    let start = 0;
    while (start < all.length) {
      let end = Math.min(start + 134, all.length);
      // A surrogate pair stays whole.
      const high = all[end - 2];
      if (end < all.length && high >= 0xd8 && high <= 0xdb) end -= 2;
      units.push(all.subarray(start, end));
      start = end;
    }
  }
  return units.map((unit, i) => {
    const octets = new Uint8Array(6 + unit.length);
    octets.set([5, 0x00, 3, ref & 0xff, units.length, i + 1]);
    octets.set(unit, 6);
    return { dataCoding: coding, octets, udhi: true };
  });
}
