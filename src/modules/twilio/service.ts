// Twilio's Messages API over Pigeon's sending: each workspace's account SID and auth token (the
// token sealed, as it will sign status callbacks), the early check of a call's credentials (the SID
// and token, or a Pigeon API key and secret, as Twilio API keys work), and messages as Twilio's
// message resource. A message SID (`SM` + 32 hex digits) is the notification id in hex; a
// Messaging Service SID (`MG…`) is a sender pool's id the same way.
import { timingSafeEqual } from "node:crypto";
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { Authenticator, KeyAuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import type { SecretBox } from "../../lib/secrets";
import { toE164 } from "../../lib/phone";
import type { AccountsService } from "../accounts/service";
import type { SendingService } from "../sending/service";
import type { SendInput } from "../sending/types";
import { NOTIFICATION_HOOKS } from "../notifications/model";
import { sentWindow } from "./date-sent";
import { API_VERSION, isVerifyPath } from "./errors";
import { idOfReceivedSid, idOfSid, messageErrorCode, receivedSidOf, rfc2822, sidOf, twilioAddress, twilioStatus } from "./resource";
import type { MessageFilters, MessageRow, ReceivedRow, TwilioRepository } from "./repository";
import { randomBytes } from "node:crypto";

const hex32 = () => randomBytes(16).toString("hex");

export interface TwilioDeps {
  storage: Storage;
  clock: Clock;
  secrets: SecretBox;
  repo: TwilioRepository;
  accounts: AccountsService;
  authenticate: Authenticator;
  sending: SendingService;
  /** The workspace's own numbers: its devices' and its pool members' (with the device and SIM of each). */
  ownNumbers: (workspaceId: number) => Promise<{ number: string; deviceId: number; simNumber: number | null }[]>;
  poolExists: (workspaceId: number, id: number) => Promise<boolean>;
  cancel: (workspaceId: number, id: number) => Promise<unknown>;
  /** Removes a finished notification with its logs and thread message (as retention does); the statistics keep it. */
  remove: (id: number) => Promise<void>;
  /** Where a StatusCallback or incoming-message URL may point (the webhooks' address check), or why not. */
  urlProblem: (url: string) => Promise<string | null>;
}

/** The Twilio-style caller of a request: the workspace's account SID beside the key it acts as. */
const accountSids = new WeakMap<Request, string>();

export function createTwilioService(deps: TwilioDeps) {
  const { repo, secrets, clock, storage } = deps;

  /** The workspace's SID and token, made (with the API key calls act as) on first need; `rotate` issues a new token. */
  async function credentials(workspaceId: number, opts: { rotate?: boolean } = {}) {
    const now = clock.now();
    let row = await repo.account(workspaceId);
    if (!row) {
      const key = await deps.accounts.createKey("Twilio account", workspaceId);
      const token = hex32();
      row = {
        workspaceId,
        accountSid: `AC${hex32()}`,
        authToken: secrets.seal(token),
        apiKeyId: key.key_id,
        incomingUrl: null,
        createdAt: now,
        updatedAt: now,
      };
      await repo.insert(row);
      return { account_sid: row.accountSid, auth_token: token, created: true };
    }
    if (opts.rotate) {
      const token = hex32();
      await repo.setToken(workspaceId, secrets.seal(token), now);
      return { account_sid: row.accountSid, auth_token: token, created: false };
    }
    return { account_sid: row.accountSid, auth_token: secrets.open(row.authToken), created: false };
  }

  /** The account SID of the path, which must be the caller's workspace's (else 20404, as Twilio answers). */
  function accountOfPath(path: string): string {
    return /^\/2010-04-01\/Accounts\/([^/]+)/.exec(path)?.[1] ?? "";
  }

  /** The early check: Basic with the SID and token, or with an API key and its secret; the path's SID must match. */
  async function authenticate(request: Request): Promise<KeyAuthContext> {
    const header = request.headers.get("authorization")?.trim() ?? "";
    const match = /^Basic\s+(\S+)$/i.exec(header);
    if (!match)
      throw new AppError("unauthorized", "Authenticate with HTTP Basic: the account SID and auth token, or an API key and secret");
    const decoded = Buffer.from(match[1], "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon <= 0)
      throw new AppError("unauthorized", "Authenticate with HTTP Basic: the account SID and auth token, or an API key and secret");
    const user = decoded.slice(0, colon);
    const password = decoded.slice(colon + 1);
    let auth: KeyAuthContext;
    let sid: string;
    if (user.startsWith("AC")) {
      const row = await repo.bySid(user);
      const token = row ? Buffer.from(secrets.open(row.authToken)) : null;
      const given = Buffer.from(password);
      if (!row || !token || token.length !== given.length || !timingSafeEqual(token, given))
        throw new AppError("unauthorized", "Authenticate with the account SID and its auth token");
      const key = await deps.accounts.keyById(row.apiKeyId);
      if (!key || key.status !== "active") throw new AppError("key_disabled", "The API key these credentials act as is disabled");
      auth = { ...(await deps.accounts.callerFor(row.workspaceId)), keyId: key.id, keyName: key.name, needsApproval: key.needsApproval };
      sid = row.accountSid;
    } else {
      auth = await deps.authenticate(new Headers({ authorization: `Bearer ${user}`, "x-api-secret": password }));
      const row = await repo.account(auth.workspaceId);
      sid = row?.accountSid ?? "";
    }
    const path = new URL(request.url).pathname;
    // The Messages API names the account in its path; Verify's paths name none.
    if (!isVerifyPath(path)) {
      const asked = accountOfPath(path);
      if (asked !== sid) throw new AppError("not_found", `The requested resource /2010-04-01/Accounts/${asked} was not found`);
    }
    accountSids.set(request, sid);
    return auth;
  }

  function accountSidOf(request: Request): string {
    const sid = accountSids.get(request);
    if (sid === undefined) throw new AppError("unauthorized", "Authenticate with HTTP Basic");
    return sid;
  }

  function resource(accountSid: string, m: MessageRow) {
    const sid = sidOf("SM", m.id);
    const failed = m.status === "failed";
    return {
      account_sid: accountSid,
      api_version: API_VERSION,
      body: m.message,
      date_created: rfc2822(m.createdAt),
      date_sent: rfc2822(m.sentAt),
      date_updated: rfc2822(m.updatedAt),
      direction: "outbound-api",
      error_code: failed ? messageErrorCode(m.errorCode) : null,
      error_message: failed ? (m.errorReason ?? m.errorCode) : null,
      from: m.fromNumber,
      messaging_service_sid: null,
      num_media: "0",
      num_segments: String(m.segments),
      price: null,
      price_unit: "USD",
      sid,
      status: twilioStatus(m, clock.now()),
      subresource_uris: { media: `/${API_VERSION}/Accounts/${accountSid}/Messages/${sid}/Media.json` },
      to: m.recipient,
      uri: `/${API_VERSION}/Accounts/${accountSid}/Messages/${sid}.json`,
    };
  }

  /** A received message as Twilio shows it (`direction` inbound, `status` received). */
  function receivedResource(accountSid: string, m: ReceivedRow, to: string | null) {
    const sid = receivedSidOf(m.id);
    const address = (n: string | null) => (n === null ? null : twilioAddress(m.channel, n));
    return {
      account_sid: accountSid,
      api_version: API_VERSION,
      body: m.body,
      date_created: rfc2822(m.at),
      date_sent: rfc2822(m.at),
      date_updated: rfc2822(m.at),
      direction: "inbound",
      error_code: null,
      error_message: null,
      from: address(m.peer),
      messaging_service_sid: null,
      num_media: "0",
      num_segments: "1",
      price: null,
      price_unit: "USD",
      sid,
      status: "received",
      subresource_uris: { media: `/${API_VERSION}/Accounts/${accountSid}/Messages/${sid}/Media.json` },
      to: address(to),
      uri: `/${API_VERSION}/Accounts/${accountSid}/Messages/${sid}.json`,
    };
  }

  async function requireMessage(workspaceId: number, sid: string): Promise<MessageRow> {
    const id = idOfSid("SM", sid);
    const row = id === null ? null : await repo.message(workspaceId, id);
    if (!row) throw new AppError("not_found", `The requested resource /2010-04-01/Accounts/…/Messages/${sid}.json was not found`);
    return row;
  }

  const param = (body: Record<string, unknown>, name: string): string | undefined => {
    const v = body[name];
    if (v === undefined || v === null) return undefined;
    return Array.isArray(v) ? String(v[0]) : String(v);
  };

  return {
    credentials,
    authenticate,
    accountSidOf,

    /** POST Messages.json: Twilio's parameters, sent through the workspace's routing, a From number's device or a pool. */
    async create(auth: KeyAuthContext, accountSid: string, body: Record<string, unknown>) {
      const to = param(body, "To");
      if (!to) throw new AppError("validation_error", "A 'To' phone number is required.", { field: "To" }, 21604);
      const recipient = toE164(to);
      if (!recipient) throw new AppError("invalid_phone_number", `The 'To' number ${to} is not a valid phone number.`, { field: "To" });
      const text = param(body, "Body");
      if (body.MediaUrl !== undefined)
        throw new AppError("validation_error", "Media is not supported: Pigeon sends text messages only.", { field: "MediaUrl" }, 21620);
      if (!text) throw new AppError("message_required", "Message body is required.", { field: "Body" });
      const input: SendInput = { channel: "sms", recipient, message: text };
      const from = param(body, "From");
      if (from) {
        const e164 = toE164(from);
        // A cloud number, or a pool member given its number: that device (and SIM).
        const device = e164 ? ((await deps.ownNumbers(auth.workspaceId)).find((o) => o.number === e164) ?? null) : null;
        if (device === null)
          throw new AppError(
            "validation_error",
            `The From phone number ${from} is not a valid, SMS-capable number of this account.`,
            { field: "From" },
            21606,
          );
        input.deviceId = device.deviceId;
        if (device.simNumber !== null) input.simNumber = device.simNumber;
      }
      const service = param(body, "MessagingServiceSid");
      if (service) {
        const pool = idOfSid("MG", service);
        if (pool === null || !(await deps.poolExists(auth.workspaceId, pool)))
          throw new AppError("not_found", `The Messaging Service ${service} was not found.`, { field: "MessagingServiceSid" }, 21705);
        if (input.deviceId !== undefined)
          throw new AppError("validation_error", "Give From or MessagingServiceSid, not both.", { field: "From" }, 21604);
        input.poolId = pool;
      }
      const validity = param(body, "ValidityPeriod");
      if (validity !== undefined) {
        const seconds = Number(validity);
        if (!Number.isInteger(seconds) || seconds < 1 || seconds > 36_000)
          throw new AppError(
            "validation_error",
            "ValidityPeriod must be a whole number of seconds from 1 to 36000.",
            { field: "ValidityPeriod" },
            21617,
          );
        input.ttl = seconds;
      }
      const sendAt = param(body, "SendAt");
      const scheduleType = param(body, "ScheduleType");
      if (sendAt !== undefined || scheduleType !== undefined) {
        if (scheduleType !== "fixed" || sendAt === undefined)
          throw new AppError(
            "validation_error",
            "A scheduled message needs SendAt and ScheduleType=fixed.",
            { field: "ScheduleType" },
            35114,
          );
        const at = Date.parse(sendAt);
        if (Number.isNaN(at) || at <= clock.now())
          throw new AppError("validation_error", "SendAt must be a future ISO 8601 time.", { field: "SendAt" }, 35111);
        input.scheduleTime = new Date(at).toISOString().slice(0, 19).replace("T", " ");
        input.timezone = "UTC";
      }
      const callback = param(body, "StatusCallback");
      if (callback !== undefined) {
        const problem = await deps.urlProblem(callback);
        if (problem !== null)
          throw new AppError("validation_error", `The StatusCallback URL ${problem}.`, { field: "StatusCallback" }, 21609);
      }
      if (callback !== undefined) input.hooks = NOTIFICATION_HOOKS.statusCallback;
      const prepared = await deps.sending.prepare(auth, input);
      // The callback is asked for in the send's own transaction: no change of status can come first.
      const id = await storage.transaction(async () => {
        const [result] = await deps.sending.accept(auth, [prepared]);
        if (!result.ok) throw result.error;
        if (callback !== undefined) await repo.insertCallback(result.accepted.notificationId, auth.workspaceId, callback, clock.now());
        return result.accepted.notificationId;
      });
      const made = resource(accountSid, (await repo.message(auth.workspaceId, id))!);
      // As Twilio answers a send through a Messaging Service: accepted, then queued once read again.
      if (input.poolId !== undefined && made.status === "queued") return { ...made, status: "accepted", messaging_service_sid: service! };
      return made;
    },

    /** GET Messages/{Sid}.json: a sent message, or a received one (its SID starts `SMf`). */
    async fetch(auth: KeyAuthContext, accountSid: string, sid: string) {
      const receivedId = idOfReceivedSid(sid);
      if (receivedId === null) return resource(accountSid, await requireMessage(auth.workspaceId, sid));
      const m = await repo.received(auth.workspaceId, receivedId);
      if (!m) throw new AppError("not_found", `The requested resource /2010-04-01/Accounts/…/Messages/${sid}.json was not found`);
      const own = m.deviceId === null ? undefined : (await deps.ownNumbers(auth.workspaceId)).find((o) => o.deviceId === m.deviceId);
      return receivedResource(accountSid, m, own?.number ?? null);
    },

    /** The workspace's Twilio account as Pigeon's API shows it: the SID (never the token) and the incoming-message URLs. */
    async settings(workspaceId: number) {
      const account = await repo.account(workspaceId);
      return {
        account_sid: account?.accountSid ?? null,
        incoming_url: account?.incomingUrl ?? null,
        pools: (await repo.poolIncomingUrls(workspaceId)).map((p) => ({
          pool_id: p.id,
          name: p.name,
          messaging_service_sid: sidOf("MG", p.id),
          incoming_url: p.url,
        })),
      };
    },

    /** Sets (or with null clears) the workspace's incoming-message URL, or a pool's; the account is made if need be. */
    async setIncomingUrl(workspaceId: number, url: string | null, poolId: number | null) {
      if (url !== null) {
        const problem = await deps.urlProblem(url);
        if (problem !== null) throw new AppError("invalid_webhook_url", `The incoming-message url ${problem}`, { field: "url" });
      }
      // Checked before anything is made: a refused call leaves no account behind.
      if (poolId !== null && !(await deps.poolExists(workspaceId, poolId)))
        throw new AppError("not_found", `Pool ${poolId} not found`, { field: "pool_id" });
      await credentials(workspaceId);
      const now = clock.now();
      if (poolId === null) await repo.setIncomingUrl(workspaceId, url, now);
      else await repo.setPoolIncomingUrl(workspaceId, poolId, url, now);
    },

    /** GET Messages.json: newest first, Twilio's filters and pages (PageSize, Page, PageToken). */
    async list(auth: KeyAuthContext, accountSid: string, query: Record<string, string | undefined>) {
      const f: MessageFilters = {};
      if (query.To) {
        const to = toE164(query.To);
        if (!to) throw new AppError("invalid_phone_number", `The 'To' number ${query.To} is not a valid phone number.`, { field: "To" });
        f.to = to;
      }
      if (query.From) f.from = toE164(query.From) ?? query.From;
      Object.assign(f, sentWindow(query));
      const size = query.PageSize === undefined ? 50 : Number(query.PageSize);
      if (!Number.isInteger(size) || size < 1 || size > 1000)
        throw new AppError("validation_error", "PageSize must be from 1 to 1000.", { field: "PageSize" }, 20001);
      const page = query.Page === undefined ? 0 : Number(query.Page);
      if (!Number.isInteger(page) || page < 0) throw new AppError("validation_error", "Page must be 0 or more.", { field: "Page" }, 20001);
      if (query.PageToken !== undefined) {
        const before = idOfSid("SM", query.PageToken.replace(/^PA/, ""));
        if (before === null)
          throw new AppError("validation_error", "PageToken is not one this server gave.", { field: "PageToken" }, 20001);
        f.before = before;
      } else if (page > 0) {
        throw new AppError("validation_error", "Ask for a later page with the PageToken of next_page_uri.", { field: "Page" }, 20001);
      }
      // One more than asked: whether a next page exists.
      const rows = await repo.messages(auth.workspaceId, f, size + 1);
      const shown = rows.slice(0, size);
      const base = `/${API_VERSION}/Accounts/${accountSid}/Messages.json`;
      const kept = new URLSearchParams();
      for (const name of ["To", "From", "DateSent", "DateSent<", "DateSent>"]) if (query[name]) kept.set(name, query[name]!);
      const uri = (extra: Record<string, string>) => {
        const q = new URLSearchParams(kept);
        for (const [k, v] of Object.entries(extra)) q.set(k, v);
        return `${base}?${q.toString()}`;
      };
      const next =
        rows.length > size
          ? uri({ PageSize: String(size), Page: String(page + 1), PageToken: `PA${sidOf("SM", shown.at(-1)!.id)}` })
          : null;
      return {
        messages: shown.map((m) => resource(accountSid, m)),
        end: page * size + shown.length - 1,
        first_page_uri: uri({ PageSize: String(size), Page: "0" }),
        next_page_uri: next,
        page,
        page_size: size,
        previous_page_uri: null,
        start: page * size,
        uri: uri({ PageSize: String(size), Page: String(page), ...(query.PageToken ? { PageToken: query.PageToken } : {}) }),
      };
    },

    /** DELETE Messages/{Sid}.json: a message that is done (sent, delivered, failed or canceled) is removed; one still on its way is not. */
    async remove(auth: KeyAuthContext, sid: string): Promise<void> {
      const m = await requireMessage(auth.workspaceId, sid);
      if (m.status === "pending")
        throw new AppError("not_cancellable", `Message ${sid} is still on its way: cancel it, or delete it once it is done.`);
      await deps.remove(m.id);
    },

    /**
     * POST Messages/{Sid}.json: `Status=canceled` cancels a message no channel has taken (one a
     * phone holds may wait for the phone's answer: the resource then reads as it stands); `Body=""`
     * is not kept (redaction is not offered).
     */
    async update(auth: KeyAuthContext, accountSid: string, sid: string, body: Record<string, unknown>) {
      const m = await requireMessage(auth.workspaceId, sid);
      const status = param(body, "Status");
      if (status !== "canceled")
        throw new AppError("validation_error", "Only Status=canceled is supported on a message.", { field: "Status" }, 20001);
      await deps.cancel(auth.workspaceId, m.id);
      return resource(accountSid, (await repo.message(auth.workspaceId, m.id))!);
    },
  };
}

export type TwilioService = ReturnType<typeof createTwilioService>;
