// One person's data, for the two requests every business gets (GDPR articles 15 and 17): what the
// workspace holds about a phone number, as JSON, and its erasure. Erasure removes the contact, the
// messages to and from the number with everything hanging off them, the webhook events that carried
// it and the stored replies and statuses that name it; an opt-out stays in force under a keyed
// digest of the number instead of the number. Tables with no index on the number are read in
// bounded pages with a turn of the event loop between them.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { AppError } from "../../core/errors";
import { toE164 } from "../../lib/phone";
import { iso } from "../../lib/time";
import type { NotificationService } from "../notifications/service";
import type { RemovalStore } from "../retention/ports";
import type { SafetyService } from "../safety/service";
import type { PrivacyRepository } from "./repository";

/** Rows read per page of a table without an index on the number. */
const PAGE = 2000;
/** Notification ids per primary-key window, and per unit of work when they are removed. */
const ID_WINDOW = 5000;
const REMOVE_PIECE = 200;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface PrivacyDeps {
  storage: Storage;
  clock: Clock;
  repo: PrivacyRepository;
  /** Removes notifications with their logs, thread messages and SMSGate records (retention's own). */
  removal: RemovalStore;
  notifications: Pick<NotificationService, "detail" | "cancel">;
  safety: Pick<SafetyService, "forget" | "status">;
  /** The keyed digest a suppression is kept under once its number is erased. */
  digest: (phone: string) => string;
}

/** What an erasure removed, by kind. */
export interface ErasureCounts {
  contacts: number;
  notifications: number;
  notification_logs: number;
  thread_messages: number;
  threads: number;
  /** Received MMS attachments (their bytes) of the erased conversations. */
  attachments: number;
  smsgate_messages: number;
  opt_out_events: number;
  events: number;
  webhook_deliveries: number;
  webhook_attempts: number;
  idempotency_keys: number;
  platform_statuses: number;
  verifications: number;
  routing_traces: number;
  email_forwards: number;
}

export function createPrivacyService(deps: PrivacyDeps) {
  const { storage, clock, repo } = deps;

  /** The number as the API takes it (E.164), and the forms it is stored in: `+15551234567` and, from a platform, `15551234567`. */
  function number(input: unknown): { phone: string; forms: string[]; needle: string } {
    const phone = typeof input === "string" ? toE164(input) : null;
    if (!phone)
      throw new AppError("invalid_phone_number", "phone must be a phone number in international form, as +14155552671", { field: "phone" });
    const digits = phone.slice(1);
    return { phone, forms: [phone, digits], needle: `%${digits}%` };
  }

  /** The ids of the workspace's notifications to the number, read a primary-key window at a time. */
  async function notificationIds(workspaceId: number, forms: string[]): Promise<{ id: number; stage: string }[]> {
    const found: { id: number; stage: string }[] = [];
    const max = await repo.maxNotificationId();
    for (let after = 0; after < max; after += ID_WINDOW) {
      found.push(...(await repo.notificationsIn(workspaceId, forms, after, after + ID_WINDOW)));
      await nextTurn();
    }
    return found;
  }

  /** The events (with their data) that carry the number, page by page. */
  async function carryingEvents(workspaceId: number, needle: string) {
    const rows: Record<string, unknown>[] = [];
    let after: { at: number; id: string } | null = null;
    for (;;) {
      const page = await repo.eventsPage(workspaceId, needle, after, PAGE);
      rows.push(...page.rows);
      if (page.keys.length < PAGE) return rows;
      after = page.keys[page.keys.length - 1];
      await nextTurn();
    }
  }

  async function carryingReplies(workspaceId: number, needle: string): Promise<string[]> {
    const keys: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await repo.idempotencyPage(workspaceId, needle, after, PAGE);
      keys.push(...page.hits);
      if (page.keys.length < PAGE) return keys;
      after = page.keys[page.keys.length - 1];
      await nextTurn();
    }
  }

  return {
    number,

    /** Everything the workspace holds about the number. */
    async export(workspaceId: number, input: unknown) {
      const { phone, forms, needle } = number(input);
      const notifications = [];
      for (const { id } of await notificationIds(workspaceId, forms)) notifications.push(await deps.notifications.detail(workspaceId, id));
      const threads = [];
      for (const t of await repo.threads(workspaceId, forms)) {
        // A received MMS's attachments go with their message, their bytes in base64.
        const attachments = await repo.threadAttachments(t.id);
        const messages = (await repo.threadMessages(t.id)).map((m) => ({
          ...m,
          at: iso(Number(m.at)),
          attachments: attachments
            .filter((a) => a.messageId === Number(m.id))
            .map(({ messageId: _, dataBase64, ...a }) => ({ ...a, data_base64: dataBase64 })),
        }));
        threads.push({ thread_id: t.id, channel: t.channel, peer: t.peer, peer_name: t.peerName, created_at: iso(t.createdAt), messages });
      }
      const events = await carryingEvents(workspaceId, needle);
      const deliveries = await repo.deliveriesOf(events.map((e) => String(e.id)));
      // Whether the number is opted out now: under the number, or under its digest once erased.
      const { opted_out, opted_out_at, source } = await deps.safety.status(workspaceId, phone);
      return {
        phone,
        exported_at: iso(clock.now()),
        contacts: (await repo.contacts(workspaceId, phone)).map((c) => ({
          ...c,
          createdAt: iso(Number(c.createdAt)),
          updatedAt: iso(Number(c.updatedAt)),
        })),
        notifications,
        threads,
        opt_out: { opted_out, opted_out_at, source },
        opt_out_history: (await repo.optOutEvents(workspaceId, phone)).map((e) => ({ ...e, at: iso(Number(e.at)) })),
        webhook_events: events.map((e) => ({ ...e, at: iso(Number(e.at)) })),
        webhook_deliveries: deliveries.map((d) => ({
          ...d,
          createdAt: iso(Number(d.createdAt)),
          deliveredAt: d.deliveredAt === null ? null : iso(Number(d.deliveredAt)),
        })),
      };
    },

    /**
     * Removes everything the workspace holds about the number; an opt-out stays, under the
     * number's digest. A message waiting to be sent is cancelled (refunded) first; one whose channel
     * call is under way at that moment is left, and counted in `in_flight` (erase again once it
     * ended). `actor` (`key:ID`, `user:ID`) goes to the audit, with the counts and never the number.
     */
    async erase(workspaceId: number, input: unknown, actor: string): Promise<{ phone: string; erased: ErasureCounts; in_flight: number }> {
      const { phone, forms, needle } = number(input);
      const counts: ErasureCounts = {
        contacts: 0,
        notifications: 0,
        notification_logs: 0,
        thread_messages: 0,
        threads: 0,
        attachments: 0,
        smsgate_messages: 0,
        opt_out_events: 0,
        events: 0,
        webhook_deliveries: 0,
        webhook_attempts: 0,
        idempotency_keys: 0,
        platform_statuses: 0,
        verifications: 0,
        routing_traces: 0,
        email_forwards: 0,
      };
      const found = await notificationIds(workspaceId, forms);
      // What is still queued is cancelled as any cancel is (refunded, a phone told); what a
      // channel holds now cannot be, and is left until its call is over.
      for (const n of found.filter((n) => n.stage === "queued"))
        await deps.notifications.cancel(workspaceId, n.id).catch((error) => {
          if (!(error instanceof AppError)) throw error;
        });
      const removable = found.filter((n) => n.stage !== "dispatching").map((n) => n.id);
      for (let i = 0; i < removable.length; i += REMOVE_PIECE) {
        const removed = await storage.transaction(() => deps.removal.removeNotifications(removable.slice(i, i + REMOVE_PIECE)));
        counts.notifications += removed.notifications;
        counts.notification_logs += removed.notification_logs;
        counts.thread_messages += removed.thread_messages;
        counts.threads += removed.threads;
        counts.smsgate_messages += removed.smsgate_messages;
        await nextTurn();
      }
      const events = (await carryingEvents(workspaceId, needle)).map((e) => String(e.id));
      const replies = await carryingReplies(workspaceId, needle);
      await storage.transaction(async () => {
        const threads = await repo.removeThreads((await repo.threads(workspaceId, forms)).map((t) => t.id));
        counts.threads += threads.threads;
        counts.thread_messages += threads.thread_messages;
        counts.attachments += threads.attachments;
        counts.contacts = await repo.removeContacts(workspaceId, phone);
        counts.opt_out_events = await repo.pseudonymiseOptOuts(workspaceId, phone, deps.digest(phone));
        for (let i = 0; i < events.length; i += REMOVE_PIECE) {
          const removed = await repo.removeEvents(events.slice(i, i + REMOVE_PIECE));
          counts.events += removed.events;
          counts.webhook_deliveries += removed.webhook_deliveries;
          counts.webhook_attempts += removed.webhook_attempts;
        }
        // A post waiting for a Twilio-style URL is a delivery to the customer's endpoint as a webhook's is.
        counts.webhook_deliveries += await repo.removeTwilioPosts(workspaceId, phone);
        for (let i = 0; i < replies.length; i += REMOVE_PIECE)
          counts.idempotency_keys += await repo.removeIdempotency(workspaceId, replies.slice(i, i + REMOVE_PIECE));
        counts.platform_statuses = await repo.removeBacklog(workspaceId, needle);
        counts.routing_traces = await repo.removeRoutingTraces(workspaceId, phone, deps.digest(phone));
        counts.verifications = await repo.removeVerifications(workspaceId, phone);
        counts.email_forwards = await repo.removeEmailForwards(workspaceId, needle);
        await repo.recordErasure(workspaceId, clock.now(), actor, { ...counts });
      });
      deps.safety.forget(workspaceId);
      return { phone, erased: counts, in_flight: found.length - removable.length };
    },

    /** The workspace's latest erasures, newest first: when, by whom, how much. */
    async erasures(workspaceId: number, limit = 50) {
      return (await repo.erasures(workspaceId, limit)).map((e) => ({
        id: e.id,
        at: iso(e.at),
        actor: e.actor,
        counts: JSON.parse(e.counts),
      }));
    },
  };
}

export type PrivacyService = ReturnType<typeof createPrivacyService>;
