// What the SMTP listener asks of Pigeon, in Pigeon's terms: who signs in, whom an address names,
// whether a send to them would go, and the sends themselves. Every check and every send goes
// through Pigeon's own API in process, with the sender's key (or the secret address's), exactly
// as MCP's tools do (src/modules/mcp/port.ts): the key's scopes, recipient lists, daily cap and
// approval, the plan's limits, credits, opt-outs, pools and channels apply to a mail as to any API
// call, and an Idempotency-Key per recipient makes a retried DATA send nothing twice.
import { AppError } from "../../core/errors";
import { hasScope } from "../../core/scopes";
import type { DeliveryType } from "../../core/kinds";
import type { KeyAuthContext } from "../../core/caller";
import { sha256Hex } from "../../lib/tokens";
import type { AccountsService } from "../accounts/service";
import type { ContactService } from "../contacts/service";
import type { ThreadService } from "../threads/service";
import type { RateLimiter } from "../../http/rate-limit/types";
import { type ApiCall, requestPort } from "../mcp/port";
import { type RecipientRef, recipientOf } from "./address";
import type { EmailContent } from "./content";
import { type EmailSettingsService, senderAllowed } from "./settings";

/** An SMTP reply: its code, its enhanced status code (RFC 3463) and the text. */
export interface SmtpAnswer {
  code: number;
  enhanced: string;
  text: string;
}

/** A signed-in (or secret-address) sender: whose workspace, with which credentials and settings. */
export interface Sender {
  workspaceId: number;
  credentials: Record<string, string>;
  /** The account's cap on a message's characters. */
  lengthCap: number;
  content: EmailContent;
  defaultCountry: string | null;
}

/** A reply's way back: the channel, device and SIM the customer wrote to. */
export interface Via {
  channel: DeliveryType;
  deviceId: number;
  simNumber: number | null;
}

/** A recipient address resolved: the numbers it names, whose sends they are, and what the address was. */
export interface Resolved {
  address: string;
  phones: string[];
  /** A tag: a bulk, whose members are checked one by one when sent, not at RCPT TO. */
  bulk: boolean;
  /** Who sends to them (the signed-in key, a secret address's or a reply's bridge key). */
  sender: Sender;
  /** A reply to a forwarded message: sent back the way the customer wrote. */
  via?: Via;
}

/** A tag expands to at most this many contacts. */
export const TAG_MAX = 1000;
/** Sends of one mail in flight at once (they share the database's group commit). */
const SEND_CONCURRENCY = 8;

const answer = (code: number, enhanced: string, text: string): SmtpAnswer => ({ code, enhanced, text });

/**
 * An API refusal as SMTP says it: a caller's mistake or a refusal for good is 5xx (the sending
 * server bounces it); a limit that passes, a full queue or a server's trouble is 4xx (it retries).
 */
export function smtpOfRefusal(status: number, code: string, message: string): SmtpAnswer {
  if (status === 429) return answer(451, "4.7.1", `${message} (${code}); try again later`);
  if (status === 402) return answer(452, "4.2.2", `${message} (${code})`);
  if (status === 503 || status === 507 || status >= 500) return answer(451, "4.3.0", `${message} (${code}); try again later`);
  if (code === "recipient_opted_out") return answer(550, "5.7.1", `${message} (${code})`);
  if (status === 401 || status === 403) return answer(550, "5.7.1", `${message} (${code})`);
  if (code === "invalid_phone_number" || code === "validation_error") return answer(550, "5.1.3", `${message} (${code})`);
  return answer(554, "5.5.0", `${message} (${code})`);
}

export interface BridgeDeps {
  handle: (request: Request) => Promise<Response>;
  accounts: Pick<AccountsService, "authenticate">;
  rateLimiter: Pick<RateLimiter, "guardAuth">;
  contacts: Pick<ContactService, "search" | "list">;
  threads: Pick<ThreadService, "messages">;
  settings: EmailSettingsService;
  /** The workspace's default country (its settings'), read when the bridge's own is unset. */
  workspaceCountry: (workspaceId: number) => Promise<string | null>;
  /** Notes which mail the sends came from (for a delivery status notification if one fails later). */
  noteOrigins: (workspaceId: number, ids: number[], mailFrom: string, subject: string) => Promise<void>;
}

export function createBridge(deps: BridgeDeps) {
  const { settings, contacts, threads } = deps;
  const apiOf = (sender: Sender): ApiCall => requestPort(deps.handle, "http://pigeon.smtp", sender.credentials);

  async function senderFor(auth: KeyAuthContext, credentials: Record<string, string>): Promise<Sender> {
    const own = await settings.get(auth.workspaceId);
    return {
      workspaceId: auth.workspaceId,
      credentials,
      lengthCap: auth.smsLengthCap,
      content: own.content,
      defaultCountry: own.defaultCountry ?? (await deps.workspaceCountry(auth.workspaceId)),
    };
  }

  /** A key's own credentials, checked as the API checks them (under the address's failed sign-in throttle). */
  async function signIn(address: string, key: string, secret: string): Promise<Sender | SmtpAnswer> {
    const credentials = { "x-api-key": key, "x-api-secret": secret };
    try {
      const auth = await deps.rateLimiter.guardAuth(address, () => deps.accounts.authenticate(new Headers(credentials)));
      const caller = auth as KeyAuthContext;
      if (!hasScope(caller.limits, "send")) return answer(535, "5.7.8", "This API key may not send (it lacks the send scope)");
      return await senderFor(caller, credentials);
    } catch (error) {
      if (error instanceof AppError && error.status === 429) return answer(454, "4.7.0", `${error.message}; try again later`);
      if (error instanceof AppError && (error.status === 401 || error.status === 403))
        return answer(535, "5.7.8", "Authentication failed: use an API key as the user name and its secret as the password");
      throw error;
    }
  }

  /** The secret address a token opens, for `from`: null unless the token is known and `from` is on its allowlist. */
  async function secretSender(token: string, from: string): Promise<Sender | null> {
    const found = await settings.secretAddress(token);
    if (!found || !senderAllowed(found.senders, from)) return null;
    const credentials = { "x-api-key": found.apiKey, "x-api-secret": found.apiSecret };
    try {
      const auth = (await deps.accounts.authenticate(new Headers(credentials))) as KeyAuthContext;
      return await senderFor(auth, credentials);
    } catch {
      // Its key was disabled or expired: the address is closed.
      return null;
    }
  }

  /** The contact named exactly `name` (case aside); an answer when none or several are. */
  async function contactNamed(workspaceId: number, name: string): Promise<string | SmtpAnswer> {
    const found = await contacts.search(workspaceId, name, 1, 20);
    const wanted = name.toLowerCase();
    const exact = found.contacts.filter((c) => c.name.toLowerCase() === wanted);
    if (exact.length === 1) return exact[0].phone;
    if (exact.length === 0)
      return answer(550, "5.1.1", `No contact is named "${name}" (address a phone number, a contact's name or tag-NAME)`);
    return answer(550, "5.1.4", `${exact.length} contacts are named "${name}": address the number instead`);
  }

  /** The numbers of the contacts with `tag`, at most TAG_MAX; an answer when there are none or too many. */
  async function tagged(workspaceId: number, tag: string): Promise<string[] | SmtpAnswer> {
    const phones: string[] = [];
    for (let page = 1; ; page++) {
      const list = await contacts.list(workspaceId, page, 100, tag);
      phones.push(...list.contacts.map((c) => c.phone));
      if (phones.length > TAG_MAX) return answer(550, "5.5.3", `The tag "${tag}" has more than ${TAG_MAX} contacts; split it`);
      if (list.contacts.length < 100) break;
    }
    if (phones.length === 0) return answer(550, "5.1.1", `No contact has the tag "${tag}"`);
    return [...new Set(phones)];
  }

  /**
   * A recipient address, resolved and checked: a number or a contact is previewed as a send
   * (opt-out, the number, the key's recipients and cap, credits), a tag only resolved.
   */
  async function recipient(sender: Sender, address: string, local: string): Promise<Resolved | SmtpAnswer> {
    const ref: RecipientRef = recipientOf(local, sender.defaultCountry);
    if (ref.kind === "invalid") return answer(550, "5.1.3", ref.reason);
    if (ref.kind === "tag") {
      const phones = await tagged(sender.workspaceId, ref.tag);
      return Array.isArray(phones) ? { address, phones, bulk: true, sender } : phones;
    }
    const phone = ref.kind === "number" ? ref.phone : await contactNamed(sender.workspaceId, ref.name);
    if (typeof phone !== "string") return phone;
    const reply = await apiOf(sender)("POST", "/v1/api/sms/preview", { body: { recipient_contact: phone, message: "." } });
    const data = reply.body?.data as { would?: string; error?: { status_id: number; error_code: string; message: string } } | undefined;
    if (reply.status !== 200)
      return smtpOfRefusal(
        reply.status,
        String((data as Record<string, unknown> | undefined)?.error_code ?? "error"),
        reply.body?.message ?? "Refused",
      );
    if (data?.would === "refuse" && data.error) return smtpOfRefusal(data.error.status_id, data.error.error_code, data.error.message);
    return { address, phones: [phone], bulk: false, sender };
  }

  /**
   * A reply to a forward (its Reply-To address): null when `local` is no reply address. Allowed to
   * a key of the thread's workspace, or to a sender its forwards go to or its allowlist names.
   */
  async function replyRecipient(
    address: string,
    local: string,
    from: string,
    signedIn: Sender | null,
  ): Promise<Resolved | SmtpAnswer | null> {
    const target = settings.parseReply(local);
    if (!target) return null;
    const own = await settings.get(target.workspaceId);
    const allowed = signedIn ? signedIn.workspaceId === target.workspaceId : senderAllowed([...own.forwardTo, ...own.senders], from);
    if (!allowed)
      return answer(550, "5.7.1", "This sender may not reply to the conversation (not a forward's recipient nor on the allowlist)");
    const read = await threads.messages(target.workspaceId, target.threadId, 1, 1).catch(() => null);
    if (!read) return answer(550, "5.1.1", "The conversation this reply belongs to is gone");
    const credentials = await settings.replyCredentials(target.workspaceId);
    if (!credentials) return answer(451, "4.3.0", "Replies are unavailable just now; try again later");
    const headers = { "x-api-key": credentials.apiKey, "x-api-secret": credentials.apiSecret };
    let auth: KeyAuthContext;
    try {
      auth = (await deps.accounts.authenticate(new Headers(headers))) as KeyAuthContext;
    } catch {
      return answer(550, "5.7.1", 'The workspace\'s "Email bridge" key is disabled: replies by email are off');
    }
    // A reply is always its body (without the quote of the forward), whatever the workspace's choice.
    const sender = { ...(await senderFor(auth, headers)), content: "body" as const };
    const channel: DeliveryType = read.thread.channel;
    return {
      address,
      phones: [read.thread.peer],
      bulk: false,
      sender,
      via: { channel, deviceId: target.deviceId, simNumber: channel === "sms" ? target.simNumber : null },
    };
  }

  /** One recipient's send; its Idempotency-Key makes a repeat of the same mail to them replay, not resend. */
  async function sendOne(api: ApiCall, mailKey: string, phone: string, text: string, via?: Via) {
    const path = via?.channel === "chatapp" ? "/v1/api/chatapp/send" : "/v1/api/sms/send";
    const routing = via ? { device_id: via.deviceId, ...(via.simNumber !== null ? { sim_number: via.simNumber } : {}) } : {};
    const reply = await api("POST", path, {
      body: { recipient_contact: phone, message: text, ...routing },
      headers: { "idempotency-key": `email:${sha256Hex(`${mailKey}\n${phone}`).slice(0, 48)}` },
    });
    const data = (reply.body?.data ?? {}) as Record<string, unknown>;
    if (reply.status === 200) return { phone, ok: true as const, id: Number(data.notification_id) };
    return {
      phone,
      ok: false as const,
      refusal: smtpOfRefusal(reply.status, String(data.error_code ?? "error"), reply.body?.message ?? "Refused"),
    };
  }

  /**
   * The sends of one mail: each recipient's number once, a few at a time. The answer for DATA:
   * 250 when every send was stored; 4xx when any failed for a reason that passes (the sending
   * server retries, and the stored ones replay); otherwise 250 naming the ones refused, or 5xx
   * when none could go.
   */
  async function deliver(
    sender: Sender,
    mail: { key: string; from: string; subject: string },
    phones: string[],
    text: string,
    via?: Via,
  ): Promise<SmtpAnswer> {
    const mailKey = mail.key;
    const api = apiOf(sender);
    const unique = [...new Set(phones)];
    const results: Awaited<ReturnType<typeof sendOne>>[] = [];
    for (let i = 0; i < unique.length; i += SEND_CONCURRENCY) {
      results.push(...(await Promise.all(unique.slice(i, i + SEND_CONCURRENCY).map((p) => sendOne(api, mailKey, p, text, via)))));
    }
    const sent = results.filter((r) => r.ok);
    const refused = results.filter((r) => !r.ok);
    await deps.noteOrigins(
      sender.workspaceId,
      sent.map((r) => r.id),
      mail.from,
      mail.subject,
    );
    const passing = refused.find((r) => r.refusal.code < 500);
    if (passing) {
      const done = sent.length > 0 ? ` (${sent.length} of ${unique.length} stored; a retry sends only the rest)` : "";
      return answer(passing.refusal.code, passing.refusal.enhanced, `${passing.phone}: ${passing.refusal.text}${done}`);
    }
    if (sent.length === 0) {
      const first = refused[0].refusal;
      return answer(
        first.code,
        first.enhanced,
        unique.length === 1 ? first.text : `No recipient could be sent to; ${refused[0].phone}: ${first.text}`,
      );
    }
    const ids = sent.map((r) => r.id).join(",");
    if (refused.length === 0)
      return answer(250, "2.0.0", `Queued as ${sent.length === 1 ? `message ${ids}` : `${sent.length} messages (${ids})`}`);
    const why = refused
      .slice(0, 5)
      .map((r) => `${r.phone}: ${r.refusal.text}`)
      .join("; ");
    return answer(250, "2.0.0", `Queued ${sent.length} of ${unique.length} (${ids}); refused ${refused.length}: ${why}`);
  }

  return { signIn, secretSender, recipient, replyRecipient, deliver, mayWriteUnsigned: (from: string) => settings.anyAllows(from) };
}

export type Bridge = ReturnType<typeof createBridge>;
