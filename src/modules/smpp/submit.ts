// What a submit_sm (or submit_multi, query_sm, cancel_sm) asks of Pigeon, in Pigeon's terms. Every
// submit is a send through the same path as the API's POST /v1/api/sms/send, with the workspace's
// SMPP key as its caller: the key checked and counted against the plan's rate limit (admitKey), its
// send scope, then the send prepared and accepted with the API's other sends (acceptTogether) —
// so the key's recipients, cap and approval, credits, opt-outs, pools and channels apply, and the
// answer's message id exists only once the send is committed. Where it came from (for receipts)
// is written in the same unit of work (the `stored` listener). query_sm and cancel_sm go through
// the API in process (src/modules/mcp/port.ts). A refusal becomes the command_status docs/smpp.md
// lists; the reason goes to the log.
import type { Clock } from "../../clock";
import type { KeyAuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import { requireKeyScope } from "../../core/scopes";
import type { RateLimiter } from "../../http/rate-limit/types";
import { isDiskFull } from "../../lib/disk";
import { toE164, toE164In } from "../../lib/phone";
import type { Logger } from "../../lib/log";
import { encodeBase64 } from "../../lib/data-sms";
import { type ApiCall, requestPort } from "../mcp/port";
import type { BoundAccount } from "./credentials";
import { type Address, MESSAGE_STATE, PduError, type QueryOrCancel, STATUS, type Submit, TAG, tlvInt } from "./pdu";
import type { SmppRepository } from "./repository";
import type { SendingService } from "../sending/service";
import type { SendInput } from "../sending/types";
import type { AccountsService } from "../accounts/service";

type AccountsAuthenticate = AccountsService["authenticate"];
import { BINARY_CODINGS, decodeText, splitUdh, TEXT_CODINGS, type Udh } from "./text";

/** A part whose set is not complete this long after its first part arrived is answered ESME_RSUBMITFAIL. */
export const CONCAT_WAIT_MS = 30_000;
/** How long what a source_addr names is kept before it is looked up again. */
const ROUTING_KEPT_MS = 5000;
/** The longest a message may live: the API's own time-to-live limit (30 days). */
const VALIDITY_MAX_MS = 30 * 24 * 3600 * 1000;

/** What an answer to a submit carries: the status and, when it went, the id of each part. */
export interface SubmitAnswer {
  status: number;
  messageId: string;
}

/** An API refusal as SMPP says it (docs/smpp.md, "Refusals"). */
export function smppStatusOf(httpStatus: number, code: string): number {
  switch (code) {
    case "invalid_phone_number":
      return STATUS.ESME_RINVDSTADR;
    case "rate_limited":
    case "key_daily_cap":
      return STATUS.ESME_RTHROTTLED;
    case "message_too_long":
    case "message_required":
    case "invalid_unicode":
      return STATUS.ESME_RINVMSGLEN;
    case "invalid_schedule_time":
    case "schedule_time_in_past":
      return STATUS.ESME_RINVSCHED;
    case "invalid_valid_until":
    case "ttl_with_valid_until":
      return STATUS.ESME_RINVEXPIRY;
    case "service_unavailable":
    case "storage_full":
      return STATUS.ESME_RMSGQFUL;
  }
  if (httpStatus === 429) return STATUS.ESME_RTHROTTLED;
  if (httpStatus === 503 || httpStatus === 507) return STATUS.ESME_RMSGQFUL;
  if (httpStatus >= 500) return STATUS.ESME_RSYSERR;
  return STATUS.ESME_RSUBMITFAIL;
}

/**
 * A destination in E.164 by its type of number: international (1) is the digits after a +;
 * national (2) is read in `country`; unknown (0) is E.164 with its +, international after 00, else
 * national when there is a country, else international. Null when it is no number.
 */
export function recipientOf(a: Address, country: string | null): string | null {
  const digits = a.addr.replace(/[\s().-]/g, "");
  if (!/^\+?\d{2,20}$/.test(digits)) return null;
  if (a.ton === 1) return toE164(`+${digits.replace(/^\+/, "")}`);
  if (a.ton === 2) return digits.startsWith("+") ? toE164(digits) : toE164In(digits, country);
  if (a.ton !== 0) return null;
  if (digits.startsWith("+")) return toE164(digits);
  return toE164In(digits, country) ?? toE164(`+${digits}`);
}

/**
 * An SMPP time (YYMMDDhhmmsstnnp): an absolute instant (p is + or -, nn quarter hours from UTC), or
 * relative to `now` (p is R). Null for the empty string; a PduError with `status` when malformed.
 */
export function smppTime(value: string, now: number, status: number): number | null {
  if (value === "") return null;
  const m = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d)(\d{2})([+\-R])$/.exec(value);
  if (!m) throw new PduError(status, `"${value}" is not an SMPP time (YYMMDDhhmmsstnnp)`);
  const [yy, mo, dd, hh, mi, ss, t, nn] = m.slice(1, 9).map(Number);
  if (m[9] === "R") {
    const d = new Date(now);
    d.setUTCFullYear(d.getUTCFullYear() + yy, d.getUTCMonth() + mo, d.getUTCDate() + dd);
    return d.getTime() + ((hh * 60 + mi) * 60 + ss) * 1000;
  }
  if (mo < 1 || mo > 12 || dd < 1 || dd > 31 || hh > 23 || mi > 59 || ss > 59 || nn > 48)
    throw new PduError(status, `"${value}" is not a valid SMPP time`);
  const local = Date.UTC(2000 + yy, mo - 1, dd, hh, mi, ss, t * 100);
  const offset = nn * 15 * 60 * 1000;
  return m[9] === "+" ? local - offset : local + offset;
}

/** The API's priority for SMPP's priority_flag: 0 normal, 1 higher, 2 and 3 expedited (as one-time codes). */
const PRIORITY = [0, 50, 100, 127];

/** What a submit's content is, once its parts (if any) are read: text or a data SMS. */
type Content = { text: string } | { data: Uint8Array; port: number };

/** A submit's content and where it stands in a concatenated set. */
interface Read {
  octets: Uint8Array;
  coding: number;
  udh: Udh | null;
  concat: { ref: number; total: number; seq: number } | null;
}

/** A submit's short message (or message_payload), its header split off, its concatenation read. */
export function readMessage(s: Submit): Read {
  const payload = s.tlvs.get(TAG.message_payload);
  if (payload && s.shortMessage.length > 0)
    throw new PduError(STATUS.ESME_RINVMSGLEN, "a message is in both short_message and message_payload");
  let octets = payload ?? s.shortMessage;
  let udh: Udh | null = null;
  if (s.esmClass & 0x40) {
    const split = splitUdh(octets);
    udh = split.udh;
    octets = split.rest;
  }
  let concat = udh?.concat ?? null;
  const sarRef = tlvInt(s.tlvs, TAG.sar_msg_ref_num);
  if (sarRef !== null) {
    const total = tlvInt(s.tlvs, TAG.sar_total_segments);
    const seq = tlvInt(s.tlvs, TAG.sar_segment_seqnum);
    if (total === null || seq === null)
      throw new PduError(STATUS.ESME_RINVOPTPARAMVAL, "sar_msg_ref_num without sar_total_segments and sar_segment_seqnum");
    concat = { ref: sarRef, total, seq };
  }
  if (concat && (concat.total < 1 || concat.seq < 1 || concat.seq > concat.total))
    throw new PduError(STATUS.ESME_RINVOPTPARAMVAL, `part ${concat.seq} of ${concat.total} is not a part of a set`);
  if (concat?.total === 1) concat = null;
  if (!TEXT_CODINGS.has(s.dataCoding) && !BINARY_CODINGS.has(s.dataCoding))
    throw new PduError(STATUS.ESME_RINVOPTPARAMVAL, `data_coding ${s.dataCoding} is not one Pigeon reads (0, 1, 3, 8; 2 or 4 for binary)`);
  return { octets, coding: s.dataCoding, udh, concat };
}

/** The content of a whole message from its parts, in order. */
function contentOf(parts: Read[], s: Submit): Content {
  const first = parts[0];
  if (BINARY_CODINGS.has(first.coding)) {
    if (parts.length > 1) throw new PduError(STATUS.ESME_RSUBMITFAIL, "a binary message in parts: a data SMS is one SMS");
    const port = tlvInt(s.tlvs, TAG.destination_port) ?? first.udh?.ports?.destination ?? null;
    if (port === null) throw new PduError(STATUS.ESME_RSUBMITFAIL, "binary data_coding without a port (destination_port or a port header)");
    return { data: first.octets, port };
  }
  const sameCoding = parts.every((p) => p.coding === first.coding);
  if (sameCoding) {
    const all = new Uint8Array(parts.reduce((n, p) => n + p.octets.length, 0));
    let at = 0;
    for (const p of parts) {
      all.set(p.octets, at);
      at += p.octets.length;
    }
    return { text: decodeText(all, first.coding) };
  }
  return { text: parts.map((p) => decodeText(p.octets, p.coding)).join("") };
}

/** Where a send came from, noted with it in its unit of work (see originOf). */
export interface SubmitOrigin {
  workspaceId: number;
  systemId: string;
  registeredDelivery: number;
  parts: number;
  addresses: { source: Address; destination: Address };
}

/** The origin of each send the listener prepared, read by the `stored` listener inside the send's unit of work. */
export const originOf = new WeakMap<object, SubmitOrigin>();

export interface SubmitDeps {
  handle: (request: Request) => Promise<Response>;
  authenticate: (headers: Headers, freshness?: Parameters<AccountsAuthenticate>[1]) => Promise<KeyAuthContext>;
  rateLimiter: Pick<RateLimiter, "admitKey">;
  sending: Pick<SendingService, "prepare" | "acceptTogether">;
  clock: Clock;
  logger: Pick<Logger, "info" | "warn" | "error">;
  repo: SmppRepository;
  /** The workspace's own numbers (a source_addr naming one picks its device and SIM). */
  ownNumbers: (workspaceId: number) => Promise<{ number: string; deviceId: number; simNumber: number | null }[]>;
  /** The workspace's pools (a source_addr naming one by its name sends through it). */
  pools: (workspaceId: number) => Promise<{ pool_id: number; name: string }[]>;
  workspaceCountry: (workspaceId: number) => Promise<string | null>;
  /** How long a concatenated set may take to complete (CONCAT_WAIT_MS unless a test says). */
  concatWaitMs?: number;
}

/** A set of parts being put back together: the parts so far and the submits waiting for their answer. */
interface Assembly {
  parts: Map<number, Read>;
  waiting: { seq: number; resolve: (a: SubmitAnswer) => void }[];
  timer: ReturnType<typeof setTimeout>;
  submit: Submit;
}

/**
 * The id a part is answered with: the message's, for every part. Ids are decimal digits only, as
 * Kannel (msg-id-type 0x00) and most ESMEs read them; each part's receipt carries it too.
 */
export const partId = (notificationId: number, _seq: number) => String(notificationId);

/** The notification a message id names; null when it names none. */
export function notificationOfId(id: string): number | null {
  const m = /^(\d{1,15})$/.exec(id.trim());
  return m ? Number(m[1]) : null;
}

export function createSubmitter(deps: SubmitDeps) {
  const { clock, logger } = deps;
  const assemblies = new Map<string, Assembly>();
  const apiOf = (account: BoundAccount): ApiCall => requestPort(deps.handle, "http://pigeon.smpp", account.api);

  /**
   * What a source_addr picked, kept a few seconds: an ESME sends every submit from the same one or
   * two, and the answer is two reads. A number or pool added shows within ROUTING_KEPT_MS.
   */
  const routings = new Map<string, { routing: Partial<SendInput>; until: number }>();

  /** Where the send goes from: a number of the workspace, a pool's name, or the routing. */
  async function routingOf(account: BoundAccount, source: Address): Promise<Partial<SendInput>> {
    const addr = source.addr.trim();
    if (addr === "") return {};
    const key = `${account.workspaceId}\n${addr}`;
    const kept = routings.get(key);
    if (kept && kept.until > Date.now()) return kept.routing;
    const routing = await lookUpRouting(account, addr);
    if (routings.size >= 1000) routings.clear();
    routings.set(key, { routing, until: Date.now() + ROUTING_KEPT_MS });
    return routing;
  }

  async function lookUpRouting(account: BoundAccount, addr: string): Promise<Partial<SendInput>> {
    const number = toE164(addr.startsWith("+") ? addr : `+${addr}`);
    if (number) {
      const own = (await deps.ownNumbers(account.workspaceId)).find((o) => o.number === number);
      if (own) return { deviceId: own.deviceId, ...(own.simNumber !== null ? { simNumber: own.simNumber } : {}) };
    }
    const pool = (await deps.pools(account.workspaceId)).find((p) => p.name.toLowerCase() === addr.toLowerCase());
    return pool ? { poolId: pool.pool_id } : {};
  }

  /** The send's timing and priority from the submit's fields. */
  function timingOf(s: Submit): Partial<SendInput> {
    const now = clock.now();
    const out: Partial<SendInput> = {};
    const at = smppTime(s.scheduleDeliveryTime, now, STATUS.ESME_RINVSCHED);
    if (at !== null && at > now + 1000) out.scheduleTime = new Date(at).toISOString().slice(0, 19).replace("T", " ");
    const until = smppTime(s.validityPeriod, now, STATUS.ESME_RINVEXPIRY);
    if (until !== null) {
      const due = at !== null && at > now ? at : now;
      if (until <= now || until < due) throw new PduError(STATUS.ESME_RINVEXPIRY, "validity_period ends before the message is due");
      // An SMSC caps what it keeps; Pigeon's cap is its time to live's.
      out.validUntil = new Date(Math.min(until, due + VALIDITY_MAX_MS)).toISOString();
    }
    if (s.priorityFlag > 3) throw new PduError(STATUS.ESME_RINVPRTFLG, `priority_flag ${s.priorityFlag} is not 0 to 3`);
    if (s.priorityFlag > 0) out.priority = PRIORITY[s.priorityFlag];
    return out;
  }

  /** One recipient's send, prepared and accepted as the API's are; the answer's status and message id. */
  async function sendTo(account: BoundAccount, address: string, input: SendInput, origin: SubmitOrigin) {
    try {
      const { auth } = await deps.rateLimiter.admitKey(address, (freshness) => deps.authenticate(new Headers(account.api), freshness));
      requireKeyScope(auth.limits, "send");
      const prepared = await deps.sending.prepare(auth, input);
      originOf.set(prepared, origin);
      const [result] = await deps.sending.acceptTogether(auth, [prepared]);
      if (!result.ok) throw result.error;
      return { status: STATUS.ESME_ROK, id: result.accepted.notificationId };
    } catch (thrown) {
      const error =
        isDiskFull(thrown) || isDiskFull((thrown as Error | undefined)?.cause) ? new AppError("storage_full", "The disk is full") : thrown;
      if (!(error instanceof AppError)) throw error;
      const status = smppStatusOf(error.status, error.code);
      logger.info("smpp submit refused", { system_id: account.systemId, code: error.code, status: error.status, message: error.message });
      return { status, id: null };
    }
  }

  /** Sends a whole message (one PDU's or a set's) to each destination, each noting its origin for receipts. */
  async function send(account: BoundAccount, address: string, s: Submit, content: Content, parts: number) {
    const country = await deps.workspaceCountry(account.workspaceId);
    const extra: Partial<SendInput> = { ...(await routingOf(account, s.source)), ...timingOf(s) };
    const body: Partial<SendInput> =
      "text" in content ? { message: content.text } : { dataMessage: { data: encodeBase64(content.data), port: content.port } };
    const results: { destination: Address; status: number; id: number | null }[] = [];
    for (const destination of s.destinations) {
      const recipient = recipientOf(destination, country);
      if (!recipient) {
        results.push({ destination, status: STATUS.ESME_RINVDSTADR, id: null });
        continue;
      }
      const origin: SubmitOrigin = {
        workspaceId: account.workspaceId,
        systemId: account.systemId,
        registeredDelivery: s.registeredDelivery,
        parts,
        addresses: { source: s.source, destination },
      };
      const sent = await sendTo(account, address, { channel: "sms", recipient, ...body, ...extra }, origin);
      results.push({ destination, ...sent });
    }
    return results;
  }

  /** A set complete: sent as one message, each waiting part answered with its id. */
  async function complete(account: BoundAccount, address: string, key: string, a: Assembly) {
    clearTimeout(a.timer);
    assemblies.delete(key);
    const ordered = [...a.parts.entries()].sort(([x], [y]) => x - y).map(([, p]) => p);
    let answer: (seq: number) => SubmitAnswer;
    try {
      const [result] = await send(account, address, a.submit, contentOf(ordered, a.submit), ordered.length);
      answer = (seq) =>
        result.id === null ? { status: result.status, messageId: "" } : { status: STATUS.ESME_ROK, messageId: partId(result.id, seq) };
    } catch (error) {
      const status = error instanceof PduError ? error.status : STATUS.ESME_RSYSERR;
      if (!(error instanceof PduError)) logger.error("smpp concatenated submit failed", { error: String(error) });
      answer = () => ({ status, messageId: "" });
    }
    for (const w of a.waiting) w.resolve(answer(w.seq));
  }

  return {
    /** A submit_sm: its answer once the send is committed, or once its set completes (or fails to). */
    async submit(account: BoundAccount, address: string, s: Submit): Promise<SubmitAnswer> {
      const read = readMessage(s);
      if (!read.concat) {
        const [result] = await send(account, address, s, contentOf([read], s), 1);
        return { status: result.status, messageId: result.id === null ? "" : String(result.id) };
      }
      const { ref, total, seq } = read.concat;
      const d = s.destinations[0];
      const key = `${account.workspaceId}\n${s.source.addr}\n${d.addr}\n${ref}\n${total}`;
      let a = assemblies.get(key);
      if (!a) {
        const created: Assembly = {
          parts: new Map(),
          waiting: [],
          submit: s,
          timer: setTimeout(() => {
            assemblies.delete(key);
            logger.warn("smpp concatenated message incomplete", { system_id: account.systemId, ref, total, got: created.parts.size });
            for (const w of created.waiting) w.resolve({ status: STATUS.ESME_RSUBMITFAIL, messageId: "" });
          }, deps.concatWaitMs ?? CONCAT_WAIT_MS),
        };
        created.timer.unref?.();
        assemblies.set(key, created);
        a = created;
      }
      a.parts.set(seq, read);
      if (seq === 1) a.submit = s;
      const answer = new Promise<SubmitAnswer>((resolve) => a.waiting.push({ seq, resolve }));
      if (a.parts.size === total) await complete(account, address, key, a);
      return answer;
    },

    /** A submit_multi: each destination sent; the first id, and the destinations refused with their status. */
    async submitMulti(account: BoundAccount, address: string, s: Submit) {
      const read = readMessage(s);
      if (read.concat)
        throw new PduError(STATUS.ESME_RSUBMITFAIL, "submit_multi of a part of a concatenated message: send it whole in message_payload");
      const results = await send(account, address, s, contentOf([read], s), 1);
      const sent = results.filter((r) => r.id !== null);
      return {
        messageId: sent.length > 0 ? String(sent[0].id) : "",
        unsuccessful: [
          ...results.filter((r) => r.id === null).map((r) => ({ address: r.destination, status: r.status })),
          ...s.lists.map((name) => ({ address: { ton: 0, npi: 0, addr: name }, status: STATUS.ESME_RINVDSTADR })),
        ],
      };
    },

    /** A query_sm: the message's state, read from the API. */
    async query(account: BoundAccount, q: QueryOrCancel) {
      const id = notificationOfId(q.messageId);
      if (id === null) return { status: STATUS.ESME_RINVMSGID, state: 0, finalDate: "", error: 0 };
      const reply = await apiOf(account)("GET", `/v1/api/notification/${id}`);
      if (reply.status !== 200) return { status: STATUS.ESME_RQUERYFAIL, state: 0, finalDate: "", error: 0 };
      const n = (reply.body?.data ?? {}) as { status?: string; updated_at?: string; error_code?: string | null };
      const state = stateOf(n.status ?? "", n.error_code ?? null);
      const final = state !== MESSAGE_STATE.ENROUTE && state !== MESSAGE_STATE.ACCEPTED;
      const at = n.updated_at ? Date.parse(n.updated_at) : Number.NaN;
      return { status: STATUS.ESME_ROK, state, finalDate: final && !Number.isNaN(at) ? absoluteTime(at) : "", error: 0 };
    },

    /** A cancel_sm: the message cancelled through the API, when it has not gone yet. */
    async cancel(account: BoundAccount, q: QueryOrCancel): Promise<number> {
      const id = notificationOfId(q.messageId);
      if (id === null) return q.messageId === "" ? STATUS.ESME_RCANCELFAIL : STATUS.ESME_RINVMSGID;
      const reply = await apiOf(account)("POST", "/v1/api/notification/cancel", { body: { notification_id: id } });
      return reply.status === 200 || reply.status === 202 ? STATUS.ESME_ROK : STATUS.ESME_RCANCELFAIL;
    },

    /** Sets still being put together (for tests and /metrics). */
    pending: () => assemblies.size,
    /** Forgets every set (the listener stops): their submits are answered ESME_RSYSERR. */
    close() {
      for (const a of assemblies.values()) {
        clearTimeout(a.timer);
        for (const w of a.waiting) w.resolve({ status: STATUS.ESME_RSYSERR, messageId: "" });
      }
      assemblies.clear();
    },
  };
}

/** A notification's status as SMPP's message_state. */
export function stateOf(status: string, errorCode: string | null): number {
  switch (status) {
    case "delivered":
      return MESSAGE_STATE.DELIVERED;
    case "failed":
      if (errorCode === "expired") return MESSAGE_STATE.EXPIRED;
      if (errorCode === "approval_rejected" || errorCode === "recipient_opted_out") return MESSAGE_STATE.REJECTED;
      return MESSAGE_STATE.UNDELIVERABLE;
    case "cancelled":
      return MESSAGE_STATE.DELETED;
    case "sent":
      return MESSAGE_STATE.ENROUTE;
    default:
      return MESSAGE_STATE.ACCEPTED;
  }
}

/** An instant as an absolute SMPP time in UTC (YYMMDDhhmmss000+). */
export function absoluteTime(at: number): string {
  const d = new Date(at);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(d.getUTCFullYear() % 100)}${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())}${two(d.getUTCHours())}${two(d.getUTCMinutes())}${two(d.getUTCSeconds())}000+`;
}

export type Submitter = ReturnType<typeof createSubmitter>;
