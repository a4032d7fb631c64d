// What Pigeon owes an ESME's receiver binds: delivery receipts for what it submitted, and the SMS
// the workspace's phones receive. Each deliver_sm is written to the outbox (smpp_outbox) inside the
// unit of work that caused it — the transition, the stored inbound message — so a crash loses
// neither or both; whichever server holds a receiver bind of that system_id takes the entries
// (a lease, so two never send one at once), sends each, and deletes it only once its
// deliver_sm_resp says ESME_ROK. An entry no bind takes waits, up to OUTBOX_KEPT_MS.
import type { Clock } from "../../clock";
import { decodeBase64 } from "../../lib/data-sms";
import type { Logger } from "../../lib/log";
import { DAY, MINUTE } from "../../lib/time";
import type { NotificationRecord, MoveTo, TransitionOptions } from "../notifications/state";
import type { Inbound } from "../threads/inbound";
import { type Address, cstringValue, encodeDeliver, MESSAGE_STATE, STATUS, TAG, u8Value } from "./pdu";
import type { OutboxEntry, SmppRepository } from "./repository";
import { partId, stateOf } from "./submit";
import { partsOf } from "./text";

/** An entry not delivered this long after it was queued is dropped (as webhooks' deliveries are bounded). */
export const OUTBOX_KEPT_MS = 3 * DAY;
/** Where an SMPP send came from is kept this long (a receipt for one that ends later is not sent). */
export const ORIGIN_KEPT_MS = 30 * DAY;
/** Waits before each retry of an entry the ESME refused (or did not answer). */
export const RETRY_DELAYS_MS = [5_000, 30_000, 2 * MINUTE, 10 * MINUTE, 60 * MINUTE];
/** How long a server holds the entries it took before another may (past the listener's response timeout). */
const LEASE_MS = 60_000;
/** deliver_sm PDUs outstanding at once to one system_id's binds (an ESME's usual window). */
const WINDOW = 10;

/** The receipt's stat for a message_state. */
const STAT: Record<number, string> = {
  [MESSAGE_STATE.ENROUTE]: "ENROUTE",
  [MESSAGE_STATE.DELIVERED]: "DELIVRD",
  [MESSAGE_STATE.EXPIRED]: "EXPIRED",
  [MESSAGE_STATE.DELETED]: "DELETED",
  [MESSAGE_STATE.UNDELIVERABLE]: "UNDELIV",
  [MESSAGE_STATE.ACCEPTED]: "ACCEPTD",
  [MESSAGE_STATE.REJECTED]: "REJECTD",
};

/** YYMMDDhhmm in UTC, as receipts write their dates. */
function receiptDate(at: number): string {
  const d = new Date(at);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(d.getUTCFullYear() % 100)}${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())}${two(d.getUTCHours())}${two(d.getUTCMinutes())}`;
}

/** The customary receipt text (SMPP 3.4's appendix B), printable ASCII only. */
export function receiptText(r: { id: string; state: number; submittedAt: number; doneAt: number; text: string }): string {
  const delivered = r.state === MESSAGE_STATE.DELIVERED ? "001" : "000";
  const err = r.state === MESSAGE_STATE.DELIVERED || r.state === MESSAGE_STATE.ENROUTE ? "000" : "001";
  const text = [...r.text.slice(0, 20)].map((c) => (c >= " " && c <= "~" ? c : "?")).join("");
  return `id:${r.id} sub:001 dlvrd:${delivered} submit date:${receiptDate(r.submittedAt)} done date:${receiptDate(r.doneAt)} stat:${STAT[r.state]} err:${err} text:${text}`;
}

/** An E.164 number as an international SMPP address; anything else (a sender name) alphanumeric. */
export function addressOf(value: string): Address {
  if (/^\+\d{2,20}$/.test(value)) return { ton: 1, npi: 1, addr: value.slice(1) };
  return { ton: 5, npi: 0, addr: value.slice(0, 20) };
}

export interface DeliveryDeps {
  repo: SmppRepository;
  clock: Clock;
  logger: Pick<Logger, "info" | "warn" | "error">;
  serverId: string;
  /** The workspace's own numbers: the destination of a received SMS's deliver_sm. */
  ownNumbers: (workspaceId: number) => Promise<{ number: string; deviceId: number; simNumber: number | null }[]>;
}

/** Where the listener's sessions take the outbox's entries: each a deliver_sm body sent to a bind of its system_id. */
export interface Receivers {
  /** The system_ids with a receiver (or transceiver) bind on this server. */
  systemIds(): string[];
  /** Sends a deliver_sm body to one of them; its deliver_sm_resp's status, or null when none came. */
  deliver(systemId: string, body: Uint8Array): Promise<number | null>;
}

export function createSmppDeliveries(deps: DeliveryDeps) {
  const { repo, clock, logger } = deps;
  let wake: (() => void) | null = null;
  const counts = { sent: 0, refused: 0, unanswered: 0 };

  async function enqueue(workspaceId: number, systemId: string, kind: OutboxEntry["kind"], dedupeKey: string, body: Uint8Array) {
    if (await repo.enqueue({ workspaceId, systemId, kind, dedupeKey, body: Buffer.from(body).toString("base64") }, clock.now()))
      // The entry is visible once the unit commits: the pusher is told after it, and polls meanwhile.
      setTimeout(() => wake?.(), 0);
  }

  /** A message that came over SMPP changed: the receipts its registered_delivery asks for, one per part. */
  async function onTransition(before: NotificationRecord, to: MoveTo, opts: TransitionOptions): Promise<void> {
    if (to !== "delivered" && to !== "failed" && to !== "cancelled" && to !== "sent") return;
    const origin = await repo.origin(before.id);
    if (!origin) return;
    const rd = origin.registeredDelivery;
    const state = stateOf(to, opts.errorCode ?? null);
    const wanted =
      to === "sent" ? (rd & 0x10) !== 0 : state === MESSAGE_STATE.DELIVERED ? (rd & 0x03) === 1 : (rd & 0x03) === 1 || (rd & 0x03) === 2;
    if (!wanted) return;
    const { source, destination } = JSON.parse(origin.addresses) as { source: Address; destination: Address };
    const doneAt = opts.at ?? clock.now();
    for (let seq = 1; seq <= origin.parts; seq++) {
      const id = partId(before.id, seq);
      const text = receiptText({ id, state, submittedAt: Number(before.createdAt), doneAt, text: before.message ?? "" });
      const body = encodeDeliver({
        source: destination,
        destination: source,
        esmClass: 0x04,
        dataCoding: 0,
        shortMessage: Buffer.from(text, "latin1"),
        tlvs: [
          [TAG.receipted_message_id, cstringValue(id)],
          [TAG.message_state, u8Value(state)],
        ],
      });
      await enqueue(origin.workspaceId, origin.systemId, "receipt", `receipt:${id}:${seq}:${STAT[state]}`, body);
    }
  }

  /** A received SMS (inside the unit that stored it): deliver_sm to the workspace's receiver binds, split when long. */
  async function onInbound(m: Inbound, stored: { messageId: number }, systemId: string): Promise<void> {
    if (m.channel !== "sms") return;
    const own = (await deps.ownNumbers(m.workspaceId)).find(
      (o) => o.deviceId === m.deviceId && (m.simNumber == null || o.simNumber === null || o.simNumber === m.simNumber),
    );
    // An ESME refuses an empty destination: a phone whose number is unknown is named by its device.
    const line = `device${m.deviceId}${m.simNumber ? `-sim${m.simNumber}` : ""}`;
    const destination = own ? addressOf(own.number) : { ton: 5, npi: 0, addr: line.slice(0, 20) };
    const source = addressOf(m.from);
    if (m.dataMessage) {
      const data = decodeBase64(m.dataMessage.data) ?? new Uint8Array(0);
      const port = m.dataMessage.port;
      const octets = new Uint8Array(7 + data.length);
      // A 16-bit port addressing header, as a phone's data SMS carries it.
      octets.set([6, 0x05, 4, port >> 8, port & 0xff, 0, 0]);
      octets.set(data, 7);
      const body = encodeDeliver({ source, destination, esmClass: 0x40, dataCoding: 4, shortMessage: octets, tlvs: [] });
      await enqueue(m.workspaceId, systemId, "message", `message:${stored.messageId}:1`, body);
      return;
    }
    const parts = partsOf(m.body, stored.messageId & 0xff);
    for (const [i, part] of parts.entries()) {
      const body = encodeDeliver({
        source,
        destination,
        esmClass: part.udhi ? 0x40 : 0,
        dataCoding: part.dataCoding,
        shortMessage: part.octets,
        tlvs: [],
      });
      await enqueue(m.workspaceId, systemId, "message", `message:${stored.messageId}:${i + 1}`, body);
    }
  }

  /** deliver_sm PDUs awaiting their response, per system_id: at most WINDOW at once. */
  const inflight = new Map<string, number>();

  async function deliverOne(receivers: Receivers, systemId: string, e: OutboxEntry): Promise<void> {
    const status = await receivers.deliver(systemId, Buffer.from(e.body, "base64"));
    if (status === STATUS.ESME_ROK) {
      await repo.delivered(e.id);
      counts.sent++;
      return;
    }
    if (status === null) counts.unanswered++;
    else counts.refused++;
    const delay = RETRY_DELAYS_MS[Math.min(e.attempts, RETRY_DELAYS_MS.length - 1)];
    // No answer (the bind closed, or was too slow): at once to whichever bind is there next.
    await repo.retryLater(e.id, status === null ? clock.now() : clock.now() + delay);
    if (status !== null) logger.warn("smpp deliver_sm refused", { system_id: systemId, kind: e.kind, status, attempt: e.attempts + 1 });
  }

  /**
   * Takes what is due for the binds this server holds, up to WINDOW outstanding per system_id, and
   * sends it; resolves once taken (each answer, as it comes, frees room and wakes the pusher again).
   */
  async function push(receivers: Receivers): Promise<number> {
    let taken = 0;
    for (const systemId of receivers.systemIds()) {
      const busy = inflight.get(systemId) ?? 0;
      if (busy >= WINDOW) continue;
      const now = clock.now();
      const entries = await repo.claim(systemId, deps.serverId, now, now + LEASE_MS, WINDOW - busy);
      taken += entries.length;
      for (const e of entries) {
        inflight.set(systemId, (inflight.get(systemId) ?? 0) + 1);
        deliverOne(receivers, systemId, e)
          .catch((error) => logger.error("smpp deliver_sm failed", { system_id: systemId, error: String(error) }))
          .finally(() => {
            inflight.set(systemId, (inflight.get(systemId) ?? 1) - 1);
            wake?.();
          });
      }
    }
    return taken;
  }

  return {
    onTransition,
    onInbound,
    push,
    counts,
    /** Called when something may be due (an entry queued here); the listener sets it. */
    onWake(fn: (() => void) | null) {
      wake = fn;
    },
    /** Forgets entries no bind took in time, and origins past their age. */
    prune: () => {
      const now = clock.now();
      return repo.prune(now - OUTBOX_KEPT_MS, now - ORIGIN_KEPT_MS);
    },
    waiting: () => repo.waiting(),
  };
}

export type SmppDeliveries = ReturnType<typeof createSmppDeliveries>;
