// SMS to email: every message a workspace receives is forwarded to its `forward_to` addresses
// through the relay (PIGEON_SMTP_RELAY_URL). The forward is queued in the outbox inside the unit of
// work that stores the received message, so a crash loses neither or both, and its dedupe key (the
// message's id) keeps one message from being queued twice; a task sends what is due, retrying a
// relay that is down or busy with backoff, as webhooks are retried. Each forward's Reply-To is an
// address of its thread (settings.replyLocal), so a reply by email comes back through the listener
// and goes out as an SMS (bridge.ts).
import type { Clock } from "../../clock";
import type { SmtpRelay } from "../../config";
import type { LogFn } from "../../lib/log";
import { DAY, HOUR, MINUTE } from "../../lib/time";
import type { NotificationRecord } from "../notifications/model";
import type { Inbound } from "../threads/inbound";
import type { EmailRepository } from "./repository";
import type { EmailSettings, EmailSettingsService } from "./settings";

/** Waits before each retry of a forward the relay did not take (then it fails for good). */
export const FORWARD_RETRY_DELAYS_MS = [MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * 60 * MINUTE, 6 * 60 * MINUTE, 12 * 60 * MINUTE];
/** Forwards sent or failed are forgotten after this long. */
export const FORWARD_KEPT_MS = 7 * DAY;
/** Which mail a send came from is kept this long (a later failure past it tells no one). */
export const ORIGIN_KEPT_MS = 30 * DAY;
/** Forwards sent in one run of the task. */
const BATCH = 20;

/** What a forward tells of a received message. */
export type ForwardedMessage = Pick<Inbound, "workspaceId" | "channel" | "deviceId" | "from" | "body" | "simNumber">;

export interface ForwardDeps {
  repo: EmailRepository;
  clock: Clock;
  settings: EmailSettingsService;
  relay: SmtpRelay | null;
  from: string;
  log: LogFn;
  /** The name of the contact with this number, if any. */
  contactName: (workspaceId: number, phone: string) => Promise<string | null>;
  /** Replaces the relay's transport (tests). */
  transport?: { sendMail(mail: Record<string, unknown>): Promise<unknown> };
}

/** What the relay's refusal says of the next attempt: a 5xx reply is final; anything else passes. */
function isFinal(error: unknown): boolean {
  const code = (error as { responseCode?: number }).responseCode;
  return typeof code === "number" && code >= 500;
}

export function createEmailForwarding(deps: ForwardDeps) {
  const { repo, clock, settings, relay, log } = deps;
  let transport = deps.transport ?? null;
  let prunedAt = Number.NEGATIVE_INFINITY;
  // nodemailer is loaded only once a relay is set and there is something to send.
  const transportOf = async () => {
    if (transport) return transport;
    if (!relay) return null;
    const nodemailer = (await import("nodemailer")).default;
    transport = nodemailer.createTransport({
      host: relay.host,
      port: relay.port,
      secure: relay.secure,
      requireTLS: relay.requireTls,
      ...(relay.user !== null ? { auth: { user: relay.user, pass: relay.pass ?? "" } } : {}),
      connectionTimeout: 15_000,
      greetingTimeout: 15_000,
      socketTimeout: 30_000,
    });
    return transport;
  };

  /** The Reply-To of a forward of `m` (its thread's reply address), when the workspace has a reply domain. */
  function replyToOf(m: ForwardedMessage, stored: { threadId: number }, replyDomain: string | null): string | null {
    if (!replyDomain) return null;
    const local = settings.replyLocal({
      workspaceId: m.workspaceId,
      threadId: stored.threadId,
      deviceId: m.deviceId,
      simNumber: m.simNumber ?? null,
    });
    return `${local}@${replyDomain}`;
  }

  /** Queues one email about a received message under the workspace's settings `own`. */
  async function enqueueFor(
    m: ForwardedMessage,
    stored: { threadId: number; messageId: number },
    own: EmailSettings,
    mail: { to: string[]; subject: string; dedupeKey: string },
  ): Promise<void> {
    const replyTo = replyToOf(m, stored, own.replyDomain);
    const footer = replyTo ? "\n\n--\nReply to this email to answer by SMS (only the text above the quote is sent)." : "";
    const body = `${m.body}${footer}`;
    await repo.enqueue(
      { workspaceId: m.workspaceId, dedupeKey: mail.dedupeKey, recipients: mail.to, subject: mail.subject, body, replyTo },
      clock.now(),
    );
  }

  /** Queues one email about a received message (a rule's); false when there is no relay (nothing queued). */
  async function queue(
    m: ForwardedMessage,
    stored: { threadId: number; messageId: number },
    mail: { to: string[]; subject: string; dedupeKey: string },
  ): Promise<boolean> {
    if (!relay) return false;
    await enqueueFor(m, stored, await settings.get(m.workspaceId), mail);
    return true;
  }

  /** Queues the forward of a received message to the workspace's forward_to, inside the unit of work that stored it. */
  async function onInbound(m: Inbound, stored: { threadId: number; messageId: number }): Promise<void> {
    if (!relay || m.dataMessage) return;
    const own = await settings.get(m.workspaceId);
    if (own.forwardTo.length === 0) return;
    const name = m.fromName || (await deps.contactName(m.workspaceId, m.from));
    const who = name ? `${name} (${m.from})` : m.from;
    const channel = m.channel === "sms" ? "SMS" : "Message";
    await enqueueFor(m, stored, own, { to: own.forwardTo, subject: `${channel} from ${who}`, dedupeKey: `inbound:${stored.messageId}` });
  }

  /** Notes which mail these sends came from, when the workspace wants its senders told of failures. */
  async function noteOrigins(workspaceId: number, ids: number[], mailFrom: string, subject: string): Promise<void> {
    if (!relay || ids.length === 0 || !mailFrom) return;
    if (!(await settings.get(workspaceId)).dsn) return;
    const now = clock.now();
    for (const id of ids) await repo.recordOrigin({ notificationId: id, workspaceId, mailFrom, subject: subject.slice(0, 200) }, now);
  }

  /**
   * A message failed (inside its transition's unit of work): forward_to is told when the workspace
   * forwards failures, and the mail's sender when it came by email and the workspace sends
   * delivery status notifications. Each once per message.
   */
  async function onFailed(n: NotificationRecord, reason: string | null, errorCode: string | null): Promise<void> {
    if (!relay) return;
    const own = await settings.get(n.workspaceId);
    if (!own.forwardFailures && !own.dsn) return;
    const why = [reason, errorCode ? `(${errorCode})` : null].filter(Boolean).join(" ") || "no reason was given";
    const now = clock.now();
    const mail = (dedupeKey: string, to: string[], subject: string, body: string) =>
      repo.enqueue({ workspaceId: n.workspaceId, dedupeKey, recipients: to, subject, body, replyTo: null }, now);
    if (own.forwardFailures && own.forwardTo.length > 0)
      await mail(
        `failed:${n.id}`,
        own.forwardTo,
        `Not delivered: message ${n.id} to ${n.recipient}`,
        `Message ${n.id} to ${n.recipient} failed: ${why}\n\n${n.message}`,
      );
    if (own.dsn) {
      const origin = await repo.origin(n.id);
      if (origin)
        await mail(
          `dsn:${n.id}`,
          [origin.mailFrom],
          `Undelivered: ${origin.subject || "your message"}`,
          `Your email's text could not be sent by SMS to ${n.recipient}: ${why}.\n\nThe text was:\n${n.message}`,
        );
    }
  }

  /** Sends the forwards that are due; how many went. */
  async function deliverDue(): Promise<number> {
    if (!relay && !deps.transport) return 0;
    const now = clock.now();
    const due = await repo.due(now, BATCH);
    const mailer = due.length > 0 ? await transportOf() : null;
    let sent = 0;
    if (mailer)
      for (const row of due) {
        try {
          await mailer.sendMail({
            from: deps.from,
            to: JSON.parse(row.recipients) as string[],
            subject: row.subject,
            text: row.body,
            ...(row.replyTo ? { replyTo: row.replyTo } : {}),
            // Stable across retries: a receiving system can tell a repeat after a crash for what it is.
            messageId: `<pigeon-forward-${row.workspaceId}-${row.id}@${deps.from.split("@")[1]}>`,
            // Written by Pigeon, not a person: vacation responders and the like keep quiet (RFC 3834).
            headers: { "Auto-Submitted": "auto-generated" },
          });
          await repo.markSent(row.id, clock.now());
          sent++;
        } catch (error) {
          const delay = FORWARD_RETRY_DELAYS_MS[row.attempts];
          const final = isFinal(error) || delay === undefined;
          await repo.markFailed(row.id, (error as Error).message.slice(0, 500), final ? null : clock.now() + delay);
          if (final) log(`email forward ${row.id} failed for good`, error);
        }
      }
    // What is done with is forgotten at most once an hour, not on every tick.
    if (due.length < BATCH && now - prunedAt >= HOUR) {
      prunedAt = now;
      await repo.prune(now - FORWARD_KEPT_MS);
      await repo.pruneOrigins(now - ORIGIN_KEPT_MS);
    }
    return sent;
  }

  return {
    onInbound,
    queue,
    noteOrigins,
    onFailed,
    configured: () => relay !== null,
    deliverDue,
    outbox: (workspaceId: number, limit = 50) => repo.outbox(workspaceId, limit),
  };
}

export type EmailForwarding = ReturnType<typeof createEmailForwarding>;
