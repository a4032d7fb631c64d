// The SMSGate-compatible API's rules over Pigeon's own: an SMSGate message is one notification per
// recipient, sent through the same preparation and acceptance as /v1's send; its state is read
// back from those notifications; its devices are the workspace's paired phones.
import { AppError } from "../../core/errors";
import type { KeyAuthContext } from "../../core/caller";
import { toE164 } from "../../lib/phone";
import { nanoid } from "../../lib/tokens";
import type { ChannelTraits } from "../../core/kinds";
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { DeviceRow } from "../devices/model";
import type { DeviceService } from "../devices/service";
import type { NotificationService } from "../notifications/service";
import type { SendingService } from "../sending/service";
import { newPrepareCache, type Prepared, type SendInput } from "../sending/types";
import type { IncomingType, RecipientRow, SmsGateMessageRow, SmsGateRepository } from "./repository";
import { STATES, type SendMessageBody, type State } from "./model";

/** What a recipient's notification has reached, in SMSGate's words. */
export function stateOf(r: Pick<RecipientRow, "status" | "stage" | "cancelPending">): State {
  switch (r.status) {
    // SMSGate knows no approval: a message waiting for it is still with us, not with the phone.
    case "awaiting_approval":
      return "Pending";
    case "pending":
      if (r.cancelPending) return "Cancelling";
      // Queued is still with us; dispatching or handed means the phone has (or is taking) it.
      return r.stage === "queued" ? "Pending" : "Processed";
    case "sent":
      return "Sent";
    case "delivered":
      return "Delivered";
    case "failed":
      return "Failed";
    case "cancelled":
      return "Cancelled";
  }
}

const PROGRESS: State[] = ["Pending", "Processed", "Sent", "Delivered"];

/**
 * The message's state from its recipients': the least advanced of those still going or done well;
 * Failed (or Cancelled) only when every recipient ended so. The list's state filter computes the
 * same in SQL (repository.ts MESSAGE_STATE_SQL); change both together.
 */
export function messageStateOf(states: State[]): State {
  // As the app's MessageWithRecipients.state: Pending first, then Cancelling.
  if (states.includes("Pending")) return "Pending";
  if (states.includes("Cancelling")) return "Cancelling";
  const live = states.filter((s) => s !== "Failed" && s !== "Cancelled");
  if (live.length === 0) return states.includes("Failed") ? "Failed" : "Cancelled";
  return PROGRESS[Math.min(...live.map((s) => PROGRESS.indexOf(s)))];
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A message as SMSGate's MessageState: recipients with theirs, and when each state was first reached. */
export function presentState(m: SmsGateMessageRow, recipients: RecipientRow[]) {
  const states = recipients.map(stateOf);
  const first = (pick: (r: RecipientRow) => number | null) => {
    const times = recipients.map(pick).filter((t): t is number => t !== null);
    return times.length ? Math.min(...times) : null;
  };
  const at: Record<State, number | null> = {
    Pending: m.createdAt,
    Processed: first((r) => r.dispatchedAt),
    Sent: first((r) => r.sentAt),
    Delivered: first((r) => r.deliveredAt),
    Failed: first((r) => r.failedAt),
    Cancelling: null,
    Cancelled: first((r) => r.cancelledAt),
  };
  return {
    id: m.id,
    deviceId: m.deviceId === null ? "" : String(m.deviceId),
    state: messageStateOf(states),
    isHashed: false,
    isEncrypted: m.isEncrypted,
    recipients: recipients.map((r, i) => ({
      phoneNumber: r.phoneNumber,
      state: states[i],
      error: r.status === "failed" ? (r.errorReason ?? "failed") : null,
    })),
    states: Object.fromEntries(STATES.flatMap((s) => (at[s] === null ? [] : [[s, iso(at[s])]]))) as Partial<Record<State, string>>,
  };
}

/** An RFC 3339 instant from a query, or 400. */
function instant(value: string | undefined, field: string): number | undefined {
  if (value === undefined || value === "") return undefined;
  const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at))
    throw new AppError("validation_error", `${field} "${value}" is not an RFC 3339 date-time, e.g. 2026-01-31T09:00:00Z`, {
      field,
      location: "query",
      reason: "must be an RFC 3339 date-time",
    });
  return at;
}

/** "YYYY-MM-DD HH:MM:SS" in UTC, the send path's schedule_time, from an instant. */
const utcScheduleTime = (at: number) => new Date(at).toISOString().slice(0, 19).replace("T", " ");

/** What the SMSGate API builds on: Pigeon's own send path, devices and notifications. */
export interface SmsGateDeps {
  clock: Clock;
  channels: readonly ChannelTraits[];
  devices: DeviceService;
  sending: SendingService;
  storage: Storage;
  notifications: NotificationService;
  /** Asks a paired phone to re-post the SMS it received in a period (the phone channel's service). */
  requestInboxExport: (device: DeviceRow, since: number, until: number) => Promise<unknown>;
}

export function createSmsGateService(s: SmsGateDeps, repo: SmsGateRepository) {
  const phoneKinds = new Set(s.channels.filter((c) => c.needsPresence).map((c) => c.kind as string));
  const isPhone = (d: DeviceRow) => phoneKinds.has(d.kind);

  async function state(workspaceId: number, id: string) {
    const m = await repo.message(workspaceId, id);
    if (!m) throw new AppError("not_found", `message ${id} not found`);
    return presentState(m, await repo.recipients(m.rowId));
  }

  /** The phone to send through when the caller named none but asked for one seen lately. */
  async function recentPhone(workspaceId: number, withinHours: number): Promise<DeviceRow> {
    const since = s.clock.now() - withinHours * 3600_000;
    const phone = (await s.devices.records(workspaceId, false)).find((d) => isPhone(d) && d.lastSeenAt !== null && d.lastSeenAt >= since);
    if (!phone)
      throw new AppError("no_active_device", `No phone of this workspace was seen in the last ${withinHours} hour(s)`, {
        field: "deviceActiveWithin",
      });
    return phone;
  }

  function inputOf(body: SendMessageBody, recipient: string, deviceId: string | null): SendInput {
    // A pool chooses the phone for the first recipient; the others go through the one it chose.
    const poolId = deviceId === null ? (body.poolId ?? null) : null;
    const text = body.textMessage?.text ?? body.message ?? null;
    const data = body.dataMessage ?? null;
    let scheduleTime: string | null = null;
    if (body.scheduleAt) {
      const at = instant(body.scheduleAt, "scheduleAt")!;
      scheduleTime = utcScheduleTime(at);
    }
    return {
      channel: "sms",
      recipient,
      message: text,
      // A data SMS, checked by the send path (its base64, size and port), in SMSGate's field names.
      ...(data ? { dataMessage: data, dataMessageField: "dataMessage", messageField: body.textMessage ? "textMessage" : "message" } : {}),
      deviceId,
      poolId,
      scheduleTime,
      timezone: scheduleTime ? "UTC" : null,
      simNumber: body.simNumber ?? null,
      priority: body.priority ?? null,
      withDeliveryReport: body.withDeliveryReport ?? null,
      ttl: body.ttl ?? null,
      validUntil: body.validUntil ?? null,
      encrypted: body.isEncrypted === true,
    };
  }

  /**
   * POST /messages: every recipient is prepared (checked) before anything is written, then all are
   * accepted with the message's record in one unit of work, so a refusal stores nothing.
   */
  async function send(auth: KeyAuthContext, body: SendMessageBody, query: { deviceActiveWithin?: number; skipPhoneValidation?: boolean }) {
    if (!body.textMessage && !body.dataMessage && (body.message === undefined || body.message === null))
      throw new AppError("message_required", "Give message, textMessage or dataMessage", { field: "message" });
    if (body.ttl != null && body.validUntil)
      throw new AppError("ttl_with_valid_until", "Give either ttl or validUntil, not both", { fields: ["ttl", "validUntil"] });
    // Encrypted numbers are ciphertext, checked for their form by the send path: nothing to validate here.
    if (query.skipPhoneValidation && !body.isEncrypted) refuseUnvalidated(body.phoneNumbers);
    const id = body.id?.trim() || nanoid(21);
    if (await repo.message(auth.workspaceId, id)) throw new AppError("conflict", `A message with id ${id} already exists`, { id });

    let deviceId = body.deviceId?.trim() || null;
    if (deviceId !== null && body.poolId != null)
      throw new AppError("validation_error", "Give poolId or deviceId, not both", { field: "poolId" });
    if (!deviceId && query.deviceActiveWithin) deviceId = String((await recentPhone(auth.workspaceId, query.deviceActiveWithin)).id);
    const prepared: Prepared[] = [];
    const seen = newPrepareCache();
    await s.sending.readAhead(
      auth,
      body.phoneNumbers.map((number) => inputOf(body, number, deviceId)),
      seen,
    );
    for (const number of body.phoneNumbers) {
      // The first recipient decides the device; the others go through the same one.
      const p = await s.sending.prepare(auth, inputOf(body, number, deviceId), seen);
      deviceId ??= String(p.device.id);
      prepared.push(p);
    }
    const createdAt = s.clock.now();
    await s.storage.transaction(async () => {
      const results = await s.sending.accept(auth, prepared);
      const failed = results.find((r) => !r.ok);
      // Thrown inside the unit: it rolls back every recipient already stored.
      if (failed && !failed.ok) throw failed.error;
      const items = results.map((r, i) => ({ phoneNumber: prepared[i].recipient, notificationId: r.ok ? r.accepted.notificationId : 0 }));
      try {
        await repo.insert(auth.workspaceId, { id, deviceId: Number(deviceId), isEncrypted: body.isEncrypted === true, createdAt }, items);
      } catch (error) {
        if (String((error as Error).message).includes("UNIQUE"))
          throw new AppError("conflict", `A message with id ${id} already exists`, { id });
        throw error;
      }
    });
    return state(auth.workspaceId, id);
  }

  /**
   * skipPhoneValidation: SMSGate then hands each number to the phone as written, unchecked. Pigeon
   * already skips SMSGate's stricter checks (a valid, mobile number): it asks only for a possible
   * number with its country code. What it cannot skip is that form, since every notification is
   * priced, threaded and checked against opt-outs by its E.164 number; a number without it (a
   * short code, a national number) is refused naming the option, rather than sent unpriced.
   */
  function refuseUnvalidated(numbers: string[]) {
    const bad = numbers.find((n) => toE164(n) === null);
    if (bad === undefined) return;
    throw new AppError(
      "option_not_supported",
      `skipPhoneValidation cannot send to "${bad}": Pigeon sends only to numbers with their country code (E.164, e.g. +14155552671), which it prices, threads and checks opt-outs by`,
      { field: "skipPhoneValidation", phoneNumber: bad },
    );
  }

  async function list(
    workspaceId: number,
    q: {
      from?: string;
      to?: string;
      state?: State;
      deviceId?: string;
      limit?: number;
      offset?: number;
      sort?: "createdAt_asc" | "createdAt_desc";
    },
  ) {
    const limit = Math.max(1, Math.min(q.limit ?? 50, 100));
    const offset = Math.max(0, q.offset ?? 0);
    const filter = { from: instant(q.from, "from"), to: instant(q.to, "to"), deviceId: undefined as number | undefined };
    if (q.deviceId) {
      // Devices here have numeric ids: any other id matches nothing.
      if (!/^\d+$/.test(q.deviceId)) return { items: [], total: 0 };
      filter.deviceId = Number(q.deviceId);
    }
    const order = q.sort === "createdAt_asc" ? "asc" : "desc";
    const { rows, total } = await repo.list(workspaceId, { ...filter, state: q.state }, order, offset, limit);
    const items = [];
    for (const m of rows) items.push(presentState(m, await repo.recipients(m.rowId)));
    return { items, total };
  }

  /**
   * GET /inbox: the SMS and MMS the workspace's phones received, from the threads, in SMSGate's
   * IncomingMessage shape. An MMS is one thread message, MMS until its content arrives and
   * MMS_DOWNLOADED after; a data SMS (to the app's port) is DATA_SMS, its payload the preview.
   */
  async function inbox(
    workspaceId: number,
    q: { type?: IncomingType; from?: string; to?: string; deviceId?: string; limit?: number; offset?: number },
  ) {
    const limit = Math.max(1, Math.min(q.limit ?? 50, 500));
    const offset = Math.max(0, q.offset ?? 0);
    const filter = { from: instant(q.from, "from"), to: instant(q.to, "to"), deviceId: undefined as number | undefined, type: q.type };
    if (q.deviceId) {
      if (!/^\d+$/.test(q.deviceId)) return { items: [], total: 0 };
      filter.deviceId = Number(q.deviceId);
    }
    const { rows, total } = await repo.incoming(workspaceId, filter, offset, limit);
    return {
      items: rows.map((r) => ({ id: String(r.id), type: r.type, sender: r.sender, contentPreview: r.body, createdAt: iso(r.at)! })),
      total,
    };
  }

  /**
   * DELETE /messages/{id}: every recipient still waiting is cancelled, or, where the phone holding
   * it can be asked to drop it, goes Cancelling until the phone answers (the message's state then
   * reads Cancelling). Asking again while it is Cancelling changes nothing; 409 once a recipient
   * has left (Processed, Sent, Delivered, Failed) or all are Cancelled.
   */
  async function cancel(workspaceId: number, id: string) {
    const m = await repo.message(workspaceId, id);
    if (!m) throw new AppError("not_found", `message ${id} not found`);
    const recipients = await repo.recipients(m.rowId);
    const current = presentState(m, recipients);
    if (current.state === "Cancelling") return current;
    if (current.state !== "Pending")
      throw new AppError("not_cancellable", `message ${id} is ${current.state}, not Pending, and can no longer be cancelled`, {
        state: current.state,
      });
    for (const r of recipients) if (stateOf(r) === "Pending") await s.notifications.cancel(workspaceId, r.notificationId);
    return state(workspaceId, id);
  }

  function presentDevice(d: DeviceRow) {
    return {
      id: String(d.id),
      name: d.name,
      createdAt: iso(d.createdAt)!,
      updatedAt: iso(d.updatedAt)!,
      lastSeen: iso(d.lastSeenAt ?? d.createdAt)!,
      deletedAt: null,
    };
  }

  /** POST /inbox/refresh (and its older paths): the phone re-posts its received SMS as sms:received. */
  async function refreshInbox(workspaceId: number, body: { deviceId: string; since: string; until: string }): Promise<void> {
    const device = /^\d+$/.test(body.deviceId) ? await s.devices.find(workspaceId, Number(body.deviceId)) : null;
    if (!device || !isPhone(device)) throw new AppError("not_found", `device ${body.deviceId} not found`, { field: "deviceId" });
    const since = instant(body.since, "since")!;
    const until = instant(body.until, "until")!;
    if (since >= until)
      throw new AppError("validation_error", "until must be after since", {
        field: "until",
        location: "body",
        reason: "must be after since",
      });
    await s.requestInboxExport(device, since, until);
  }

  return {
    send,
    state,
    refreshInbox,
    inbox,
    list,
    cancel,
    devices: async (workspaceId: number) => (await s.devices.records(workspaceId, true)).filter(isPhone).map(presentDevice),
    async removeDevice(workspaceId: number, id: string): Promise<void> {
      const device = /^\d+$/.test(id) ? await s.devices.find(workspaceId, Number(id)) : null;
      if (!device || !isPhone(device)) throw new AppError("not_found", `device ${id} not found`);
      await s.devices.remove(workspaceId, [device.id]);
    },
  };
}

export type SmsGateService = ReturnType<typeof createSmsGateService>;
