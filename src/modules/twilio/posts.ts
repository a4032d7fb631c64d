// Twilio-style posts Pigeon makes: a message's status callback at each change of its status, and a
// received message for the workspace's (or its pool's) incoming-message URL, whose TwiML answer is
// sent back to the sender through the device and SIM the message came in on. Both are written to an
// outbox (twilio_post) in the transaction of the change that causes them, then posted by the worker
// as Twilio posts: a form body signed with `X-Twilio-Signature` under the workspace's auth token,
// retried on failure. A post is removed once made, and its replies are accepted in that same
// transaction, so a TwiML answer is sent at most once however often the server stops.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { AuthContext } from "../../core/caller";
import { checkOutboundTarget, postToTarget, type Resolver } from "../../lib/net-safety";
import { toE164 } from "../../lib/phone";
import type { SecretBox } from "../../lib/secrets";
import { HOUR, MINUTE } from "../../lib/time";
import { twilioSignature } from "../../lib/twilio-signature";
import { VERSION } from "../../version";
import type { Cluster } from "../../core/cluster";
import type { AccountsService } from "../accounts/service";
import type { SendingService } from "../sending/service";
import type { Inbound } from "../threads/inbound";
import { NOTIFICATION_HOOKS } from "../notifications/model";
import { readLimited } from "../webhooks/service";
import { API_VERSION } from "./errors";
import type { TwilioPostRow, TwilioRepository } from "./repository";
import { parseTwiml } from "./twiml";
import { messageErrorCode, receivedSidOf, sidOf, twilioAddress, twilioStatus } from "./resource";
import type { DeliveryType } from "../../core/kinds";

/** Waits before each retry of a status callback: about a day in all, then it is given up. */
export const STATUS_RETRY_MS = [30_000, 2 * MINUTE, 10 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 4 * HOUR, 8 * HOUR, 8 * HOUR];
/** An incoming message's post is retried only briefly: a reply that comes much later helps no one. */
export const INCOMING_RETRY_MS = [30_000, 2 * MINUTE, 10 * MINUTE];
const TIMEOUT_MS = 10_000;
/** A TwiML answer is read up to this size; a status callback's answer is only glanced at. */
const ANSWER_LIMIT = 64 * 1024;
const BATCH = 20;
const CONCURRENCY = 4;

export interface TwilioPostDeps {
  storage: Storage;
  clock: Clock;
  secrets: SecretBox;
  repo: TwilioRepository;
  cluster: Cluster;
  allowPrivate: boolean;
  resolve?: Resolver;
  fetch?: typeof fetch;
  log: (message: string, error?: unknown) => void;
  accounts: AccountsService;
  sending: SendingService;
  /** The workspace's own numbers: its devices' and its pool members' (for the incoming post's To, and no reply to them). */
  ownNumbers: (workspaceId: number) => Promise<{ number: string; deviceId: number; simNumber: number | null }[]>;
  optedOut: (workspaceId: number, phone: string) => Promise<boolean>;
}

export function createTwilioPosts(deps: TwilioPostDeps) {
  const { repo, clock, storage, secrets } = deps;
  const doFetch = deps.fetch ?? fetch;
  let stopping = false;

  /**
   * The status callbacks of notifications that changed status, written in the change's
   * transaction: one post per change of a message sent with a StatusCallback.
   */
  async function statusChanged(all: readonly { id: number; workspaceId: number; hooks: number }[]): Promise<void> {
    // Only a message sent with a callback is looked up: the others cost the transition nothing.
    const changes = all.filter((c) => (c.hooks & NOTIFICATION_HOOKS.statusCallback) !== 0);
    if (changes.length === 0) return;
    const urls = await repo.callbacksOf(changes.map((c) => c.id));
    if (urls.size === 0) return;
    const now = clock.now();
    for (const { id, workspaceId } of changes) {
      const url = urls.get(id);
      if (url === undefined) continue;
      const [account, m] = await Promise.all([repo.account(workspaceId), repo.message(workspaceId, id)]);
      if (!account || !m) continue;
      const status = twilioStatus(m, now);
      const sid = sidOf("SM", m.id);
      const params: [string, string][] = [
        ["AccountSid", account.accountSid],
        ["ApiVersion", API_VERSION],
        ["From", m.fromNumber ?? ""],
        ["MessageSid", sid],
        ["MessageStatus", status],
        ["SmsSid", sid],
        ["SmsStatus", status],
        ["To", m.recipient],
      ];
      if (status === "failed" || status === "undelivered") params.push(["ErrorCode", String(messageErrorCode(m.errorCode) ?? 30008)]);
      await repo.insertPost({ workspaceId, kind: "status", url, params, peer: m.recipient, reply: null }, now);
    }
  }

  /** A received message for the incoming-message URL of its pool or workspace, if one is set; in the message's transaction. */
  async function received(m: Inbound, stored: { messageId: number }): Promise<void> {
    const target = await repo.incomingTarget(m.workspaceId, m.deviceId, m.simNumber ?? null);
    if (!target) return;
    const account = await repo.account(m.workspaceId);
    if (!account) return;
    const own = await deps.ownNumbers(m.workspaceId);
    const to =
      own.find((o) => o.deviceId === m.deviceId && o.simNumber !== null && o.simNumber === (m.simNumber ?? null)) ??
      own.find((o) => o.deviceId === m.deviceId);
    const sid = receivedSidOf(stored.messageId);
    const params: [string, string][] = [
      ["AccountSid", account.accountSid],
      ["ApiVersion", API_VERSION],
      ["Body", m.body],
      ["From", twilioAddress(m.channel, m.from)],
      ["MessageSid", sid],
      ["NumMedia", "0"],
      ["NumSegments", "1"],
      ["SmsMessageSid", sid],
      ["SmsSid", sid],
      ["SmsStatus", "received"],
      ["To", to ? twilioAddress(m.channel, to.number) : ""],
    ];
    if (target.poolId !== null) params.push(["MessagingServiceSid", sidOf("MG", target.poolId)]);
    await repo.insertPost(
      {
        workspaceId: m.workspaceId,
        kind: "incoming",
        url: target.url,
        params,
        peer: m.from,
        reply: { channel: m.channel, deviceId: m.deviceId, simNumber: m.simNumber ?? null },
      },
      clock.now(),
    );
  }

  type Outcome = { ok: true; answer: string } | { ok: false; error: string; final: boolean };

  /** One call: the form body signed with the workspace's current auth token, to the checked address, no redirects. */
  async function call(p: TwilioPostRow): Promise<Outcome> {
    const account = await repo.account(p.workspaceId);
    if (!account) return { ok: false, error: "the workspace has no Twilio account any more", final: true };
    const checked = await checkOutboundTarget(p.url, deps.allowPrivate, deps.resolve);
    if (checked.problem !== null) return { ok: false, error: `target refused: url ${checked.problem}`, final: true };
    const target = checked.target;
    const signature = twilioSignature(secrets.open(account.authToken), p.url, p.params);
    try {
      const res = await postToTarget(
        doFetch,
        target,
        {
          "content-type": "application/x-www-form-urlencoded; charset=utf-8",
          "user-agent": `Pigeon-Twilio/${VERSION}`,
          "x-twilio-signature": signature,
          "i-twilio-idempotency-token": `pigeon-${p.kind}-${p.id}`,
        },
        new URLSearchParams(p.params).toString(),
        TIMEOUT_MS,
      );
      const answer = await readLimited(res, p.kind === "incoming" ? ANSWER_LIMIT : 1024);
      if (res.status >= 200 && res.status < 300) return { ok: true, answer };
      const redirect = res.status >= 300 && res.status < 400 ? " (redirects are not followed)" : "";
      return { ok: false, error: `HTTP ${res.status}${redirect}`, final: false };
    } catch (error) {
      const e = error as Error;
      return { ok: false, error: e.name === "TimeoutError" ? `no answer within ${TIMEOUT_MS / 1000} s` : e.message, final: false };
    }
  }

  /** The replies of a TwiML answer, prepared to go back through the member the message came in on; those that may not go are logged. */
  async function prepareReplies(p: TwilioPostRow, answer: string, caller: AuthContext) {
    const what = `the TwiML answer of ${p.url}`;
    if (answer.trim() === "") return [];
    const twiml = parseTwiml(answer);
    if (twiml === null) {
      deps.log(`${what} is not TwiML (no <Response> root): no reply sent`);
      return [];
    }
    if (twiml.ignored.length) deps.log(`${what}: not acted on: ${[...new Set(twiml.ignored)].join(", ")}`);
    const own = new Set((await deps.ownNumbers(p.workspaceId)).map((o) => o.number));
    const prepared = [];
    for (const reply of twiml.replies) {
      const recipient = reply.to === null ? p.peer : toE164(reply.to.replace(/^whatsapp:/, ""));
      if (!recipient) {
        deps.log(`${what}: <Message to="${reply.to}"> is no phone number: not sent`);
        continue;
      }
      if (own.has(recipient)) {
        deps.log(`${what}: no reply to ${recipient}, one of the workspace's own numbers (a loop)`);
        continue;
      }
      if (await deps.optedOut(p.workspaceId, recipient)) {
        deps.log(`${what}: no reply to ${recipient}, who opted out`);
        continue;
      }
      const back = p.reply!;
      try {
        prepared.push(
          await deps.sending.prepare(caller, {
            channel: back.channel as DeliveryType,
            recipient,
            message: reply.body,
            deviceId: back.deviceId,
            simNumber: back.simNumber,
            system: true,
          }),
        );
      } catch (error) {
        deps.log(`${what}: no reply to ${recipient}`, error);
      }
    }
    return prepared;
  }

  /** A call's result: done (removed, its replies accepted with the removal), or again later, or given up. */
  async function record(p: TwilioPostRow, outcome: Outcome): Promise<void> {
    if (outcome.ok) {
      if (p.kind === "status" || p.reply === null) {
        await repo.removePost(p.id);
        return;
      }
      const caller = await deps.accounts.callerFor(p.workspaceId);
      const prepared = await prepareReplies(p, outcome.answer, caller);
      const results = await storage.transaction(async () => {
        // Erased meanwhile: nothing is sent to a number that asked to be forgotten.
        if (!(await repo.removePost(p.id))) return [];
        return prepared.length ? deps.sending.accept(caller, prepared) : [];
      });
      for (const r of results) if (!r.ok) deps.log(`a TwiML reply of ${p.url} was not accepted: ${r.error.message}`);
      return;
    }
    const ladder = p.kind === "status" ? STATUS_RETRY_MS : INCOMING_RETRY_MS;
    if (outcome.final || p.attempts >= ladder.length) {
      await repo.removePost(p.id);
      deps.log(
        `gave up the ${p.kind === "status" ? "status callback" : "incoming-message post"} to ${p.url} after ${p.attempts + 1} attempt(s): ${outcome.error}`,
      );
      return;
    }
    await repo.retryPost(p.id, clock.now() + ladder[p.attempts], outcome.error);
  }

  return {
    statusChanged,
    received,

    /** Makes the posts that are due, a few at a time; each is claimed (committed) just before its call. */
    async deliverDue(): Promise<number> {
      if (stopping) return 0;
      const due = await repo.duePosts(clock.now(), BATCH);
      let next = 0;
      let made = 0;
      await Promise.all(
        Array.from({ length: Math.min(CONCURRENCY, due.length) }, async () => {
          while (next < due.length && !stopping) {
            const p = due[next++];
            // A message's status callbacks are made in the order its status changed: one waits
            // while an older one of the same message is still to be made.
            const messageSid = p.kind === "status" ? p.params.find(([name]) => name === "MessageSid")?.[1] : undefined;
            if (messageSid && (await repo.heldBehind({ id: p.id, url: p.url, messageSid }))) continue;
            if (!(await repo.claimPost(p.id, deps.cluster.id))) continue;
            try {
              await record(p, await call(p));
              made++;
            } catch (error) {
              deps.log(`the Twilio-style post ${p.id} to ${p.url} failed`, error);
              await repo.retryPost(p.id, clock.now() + STATUS_RETRY_MS[0], String(error)).catch(() => {});
            }
          }
        }),
      );
      return made;
    },

    /** Posts a stopped server had under way are made again (at least once: a receiver may see one twice). */
    recoverInterrupted: () => repo.releaseAbandoned(clock.now(), deps.cluster.abandoned),

    /** Shutting down: no new post starts; those under way finish. */
    stop(): void {
      stopping = true;
    },
  };
}

export type TwilioPosts = ReturnType<typeof createTwilioPosts>;
