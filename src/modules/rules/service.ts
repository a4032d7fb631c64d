// Inbound rules: what Pigeon does on its own with a message that comes in. Rules are tried in
// priority order and the first that matches acts (unless it says `continue`, then the next may
// too). Actions: reply (through the device and SIM it came in on), webhook (to the rule's own
// signed subscription), forward (to a staff number) and tag (the sender's contact). Automatic
// replies are held back: never to an opted-out sender or one of the workspace's own numbers, at
// most one per sender per rule per window, at most five a minute per sender across rules.
import type { Clock } from "../../clock";
import type { DeliveryType } from "../../core/kinds";
import type { Storage } from "../../db/storage";
import { AppError } from "../../core/errors";
import type { LogFn } from "../../lib/log";
import { describeDataSms } from "../../lib/data-sms";
import { toE164 } from "../../lib/phone";
import { iso, MINUTE } from "../../lib/time";
import type { Inbound } from "../threads/inbound";
import { checkMatch, checkOutsideHours, isOutsideHours, matcherOf, type MatchSpec, type OutsideHours } from "./match";
import type { RuleFields, RuleRepository, RuleRow } from "./repository";

/** Replies to one sender a minute, across every rule. */
export const REPLIES_PER_MINUTE = 5;
/** The rule id a forward is recorded under in rule_reply (no rule has it). */
const FORWARD_RECORD = 0;
/** Twice the longest reply window a rule can have (7 days): older records are of no use. */
const FORGET_AFTER_MS = 14 * 24 * 3600 * 1000;
export const DEFAULT_REPLY_WINDOW_SECONDS = 600;
const MAX_RULES = 100;
/** A forwarded message's text is cut here: the staff member reads the rest in the inbox. */
const FORWARD_TEXT = 600;

export interface RuleAction {
  reply?: { text?: string; template_id?: number; variables?: Record<string, string> };
  webhook?: { url: string };
  forward?: { to: string; channel?: DeliveryType; device_id?: number };
  tag?: string;
  /** An email to these addresses through the relay (src/modules/email); `subject` may use {from}, {name} and {text}. */
  email?: { to: string[]; subject?: string };
}

/** At most this many addresses in a rule's email action. */
const EMAIL_TO_MAX = 20;
const EMAIL_ADDRESS = /^[^\s@<>"]+@[a-z0-9.-]+\.[a-z]{2,}$/;
/** The default subject of a rule's email. */
const EMAIL_SUBJECT = "Message from {name}";

export interface RuleInput {
  name: string;
  match: MatchSpec;
  channels?: DeliveryType[] | null;
  action: RuleAction;
  continue?: boolean;
  when?: { outside_hours?: OutsideHours } | null;
  priority?: number;
  enabled?: boolean;
  reply_window_seconds?: number;
}

/** Who a reply or forward goes to; a null device lets the workspace's routing choose. */
export interface Outgoing {
  workspaceId: number;
  channel: DeliveryType;
  deviceId: number | null;
  simNumber: number | null;
  recipient: string;
}

export interface RuleDeps {
  storage: Storage;
  clock: Clock;
  repo: RuleRepository;
  timeZoneOf: (workspaceId: number) => Promise<string>;
  optedOut: (workspaceId: number, phone: string) => Promise<boolean>;
  /** The numbers the workspace sends from (its cloud numbers, its pool members' numbers). */
  ownNumbers: (workspaceId: number) => Promise<Set<string>>;
  addTag: (workspaceId: number, phone: string, tag: string, name: string | null) => Promise<boolean>;
  /** The name of the contact with this number, if any (a forward says who wrote). */
  contactName: (workspaceId: number, phone: string) => Promise<string | null>;
  templateExists: (workspaceId: number, id: number) => Promise<boolean>;
  deviceExists: (workspaceId: number, id: number) => Promise<boolean>;
  webhooks: {
    create: (workspaceId: number, url: string, description: string) => Promise<{ id: number; secret: string }>;
    update: (workspaceId: number, id: number, url: string, description: string) => Promise<void>;
    remove: (workspaceId: number, id: number) => Promise<void>;
    /** The subscription still takes deliveries (not deleted by hand). */
    exists: (workspaceId: number, id: number) => Promise<boolean>;
    emit: (workspaceId: number, id: number, data: Record<string, unknown>) => Promise<void>;
  };
  /**
   * Queues an email about the message (the email bridge's outbox, inside the inbound message's
   * unit); false when no relay is configured.
   */
  email: (
    m: Pick<Inbound, "workspaceId" | "channel" | "deviceId" | "from" | "body" | "simNumber">,
    stored: { threadId: number; messageId: number },
    mail: { to: string[]; subject: string; dedupeKey: string },
  ) => Promise<boolean>;
  /** Whether emails can be sent at all (a relay is configured). */
  emailConfigured: () => boolean;
  /** Sends these, in order, once the inbound message's unit has committed. */
  send: (
    list: { to: Outgoing; content: { text: string } | { templateId: number; variables: Record<string, string> }; why: string }[],
  ) => void;
  log: LogFn;
}

/** What one matching rule did (or, in a test, would do). */
export interface RuleOutcome {
  rule_id: number;
  name: string;
  actions: { action: "reply" | "webhook" | "forward" | "tag" | "email"; done: boolean; reason: string | null }[];
}

function invalid(field: string, reason: string): AppError {
  return new AppError("validation_error", `Invalid body field '${field}': ${reason}`, { field, location: "body", reason });
}

export function createRuleService(deps: RuleDeps) {
  const { storage, clock, repo } = deps;
  /** Compiled matchers by rule, kept while the rule is unchanged. */
  const compiled = new Map<number, { at: number; test: (body: string) => boolean }>();

  function matcher(rule: RuleRow) {
    const kept = compiled.get(rule.id);
    if (kept && kept.at === rule.updatedAt) return kept.test;
    const test = matcherOf(rule.match as MatchSpec);
    compiled.set(rule.id, { at: rule.updatedAt, test });
    return test;
  }

  function present(rule: RuleRow, secret?: string) {
    const action = rule.action as RuleAction;
    return {
      rule_id: rule.id,
      name: rule.name,
      priority: rule.priority,
      enabled: rule.enabled,
      match: rule.match,
      channels: rule.channels,
      action: {
        ...action,
        ...(action.webhook
          ? { webhook: { url: action.webhook.url, webhook_id: rule.webhookId, ...(secret !== undefined ? { secret } : {}) } }
          : {}),
      },
      continue: rule.continueAfter,
      when: rule.whenHolds,
      reply_window_seconds: rule.replyWindowSeconds,
      matched_count: rule.matchedCount,
      last_matched_at: iso(rule.lastMatchedAt),
      created_at: iso(rule.createdAt),
      updated_at: iso(rule.updatedAt),
    };
  }

  async function require(workspaceId: number, id: number): Promise<RuleRow> {
    const rule = await repo.get(workspaceId, id);
    if (!rule) throw new AppError("not_found", `rule ${id} not found`);
    return rule;
  }

  /** The action checked: at least one part, each complete; numbers normalised. */
  async function checkAction(workspaceId: number, action: RuleAction): Promise<RuleAction> {
    const out: RuleAction = {};
    if (action.reply !== undefined) {
      const { text, template_id, variables } = action.reply;
      if ((text === undefined) === (template_id === undefined)) throw invalid("action.reply", "give either text or template_id");
      if (text !== undefined) {
        if (text.trim() === "") throw invalid("action.reply.text", "must not be blank");
        out.reply = { text: text.trim() };
      } else {
        if (!(await deps.templateExists(workspaceId, template_id!)))
          throw new AppError("not_found", `template ${template_id} not found`, { field: "action.reply.template_id" });
        out.reply = { template_id, ...(variables ? { variables } : {}) };
      }
    }
    if (action.webhook !== undefined) out.webhook = { url: action.webhook.url };
    if (action.forward !== undefined) {
      const to = toE164(action.forward.to);
      if (!to)
        throw new AppError("invalid_phone_number", `Invalid phone number "${action.forward.to}": action.forward.to must be E.164`, {
          field: "action.forward.to",
        });
      const id = action.forward.device_id;
      if (id !== undefined && !(await deps.deviceExists(workspaceId, id)))
        throw new AppError("not_found", `device ${id} not found`, { field: "action.forward.device_id" });
      out.forward = { to, channel: action.forward.channel ?? "sms", ...(id !== undefined ? { device_id: id } : {}) };
    }
    if (action.tag !== undefined) {
      const tag = action.tag.trim().toLowerCase();
      if (!/^[\p{L}\p{N} _.:-]{1,50}$/u.test(tag)) throw invalid("action.tag", "letters, digits, spaces and _ . : - only, at most 50");
      out.tag = tag;
    }
    if (action.email !== undefined) {
      const to = [...new Set(action.email.to.map((a) => a.trim().toLowerCase()).filter(Boolean))];
      if (to.length === 0 || to.length > EMAIL_TO_MAX) throw invalid("action.email.to", `give 1 to ${EMAIL_TO_MAX} addresses`);
      const bad = to.find((a) => !EMAIL_ADDRESS.test(a) || a.length > 254);
      if (bad !== undefined) throw invalid("action.email.to", `"${bad}" is not an email address`);
      const subject = action.email.subject?.trim();
      out.email = { to, ...(subject ? { subject } : {}) };
    }
    if (Object.keys(out).length === 0) throw invalid("action", "give at least one of reply, webhook, forward, tag or email");
    return out;
  }

  /** The fields of a rule from its input over what it had (for an update), checked. */
  async function fieldsOf(workspaceId: number, input: Partial<RuleInput>, base: RuleRow | null): Promise<RuleFields> {
    const name = input.name !== undefined ? input.name.trim() : base!.name;
    if (name === "") throw invalid("name", "must not be blank");
    const clash = await repo.byName(workspaceId, name);
    if (clash && clash.id !== base?.id)
      throw new AppError("duplicate_rule", `A rule named "${name}" already exists (rule ${clash.id})`, {
        rule_id: clash.id,
        field: "name",
      });
    const when =
      input.when === undefined
        ? (base?.whenHolds ?? null)
        : input.when === null || input.when.outside_hours === undefined
          ? null
          : { outside_hours: checkOutsideHours(input.when.outside_hours) };
    const channels =
      input.channels === undefined ? (base?.channels ?? null) : input.channels === null ? null : [...new Set(input.channels)];
    if (channels !== null && channels.length === 0) throw invalid("channels", "name at least one channel, or leave it out for all");
    return {
      name,
      priority: input.priority ?? base?.priority ?? (await repo.nextPriority(workspaceId)),
      enabled: input.enabled ?? base?.enabled ?? true,
      match: input.match !== undefined ? (checkMatch(input.match) as Record<string, unknown>) : base!.match,
      channels,
      action: (input.action !== undefined ? await checkAction(workspaceId, input.action) : base!.action) as Record<string, unknown>,
      continueAfter: input.continue ?? base?.continueAfter ?? false,
      whenHolds: when,
      replyWindowSeconds: input.reply_window_seconds ?? base?.replyWindowSeconds ?? DEFAULT_REPLY_WINDOW_SECONDS,
      webhookId: base?.webhookId ?? null,
      updatedAt: clock.now(),
    };
  }

  const hookName = (name: string) => `Inbound rule "${name}"`;

  /** The rule's own subscription; a refused address names the rule's field. */
  async function createHook(workspaceId: number, url: string, name: string) {
    try {
      return await deps.webhooks.create(workspaceId, url, hookName(name));
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== "invalid_webhook_url") throw error;
      throw new AppError("invalid_webhook_url", error.message.replace(/^Webhook url/, "action.webhook.url"), {
        field: "action.webhook.url",
      });
    }
  }

  /** Why a reply to this sender must not go now, or null. Reads only. */
  async function replyBlocked(rule: RuleRow, m: { workspaceId: number; from: string }, now: number): Promise<string | null> {
    if (await deps.optedOut(m.workspaceId, m.from)) return "the sender opted out";
    if ((await deps.ownNumbers(m.workspaceId)).has(m.from)) return "the sender is one of this workspace's own numbers";
    if ((await repo.repliesSince(m.workspaceId, m.from, now - rule.replyWindowSeconds * 1000, rule.id)) > 0)
      return `this rule replied to the sender within the last ${rule.replyWindowSeconds} s`;
    if ((await repo.repliesSince(m.workspaceId, m.from, now - MINUTE, null)) >= REPLIES_PER_MINUTE)
      return `${REPLIES_PER_MINUTE} automatic replies went to the sender in the last minute`;
    return null;
  }

  /**
   * The rules a message matches, in order, up to the first that does not continue; each with what
   * it does. With `act`, the actions happen (inside the inbound message's unit); without, nothing is
   * written (the tester).
   */
  async function evaluate(
    m: Pick<Inbound, "workspaceId" | "channel" | "deviceId" | "from" | "fromName" | "body" | "simNumber" | "dataMessage"> & { at: number },
    act: { threadId: number; messageId: number } | null,
  ): Promise<RuleOutcome[]> {
    const rules = (await repo.list(m.workspaceId)).filter((r) => r.enabled && (r.channels === null || r.channels.includes(m.channel)));
    const outcomes: RuleOutcome[] = [];
    const outgoing: Parameters<RuleDeps["send"]>[0] = [];
    let zone: string | null = null;
    for (const rule of rules) {
      // A data SMS has no text: only a rule that matches any message hears it.
      if (m.dataMessage ? (rule.match as MatchSpec).any !== true : !matcher(rule)(m.body)) continue;
      const hours = (rule.whenHolds as { outside_hours?: Required<OutsideHours> } | null)?.outside_hours;
      if (hours) {
        zone ??= await deps.timeZoneOf(m.workspaceId);
        if (!isOutsideHours(hours, m.at, zone)) continue;
      }
      outcomes.push(await run(rule, m, act, outgoing));
      if (!rule.continueAfter) break;
    }
    if (outgoing.length > 0) deps.send(outgoing);
    return outcomes;
  }

  async function run(
    rule: RuleRow,
    m: Parameters<typeof evaluate>[0],
    act: { threadId: number; messageId: number } | null,
    outgoing: Parameters<RuleDeps["send"]>[0],
  ): Promise<RuleOutcome> {
    const action = rule.action as RuleAction;
    const now = clock.now();
    const done: RuleOutcome["actions"] = [];
    const fields = { rule_id: rule.id, rule: rule.name, from: m.from };
    if (action.tag !== undefined) {
      if (act) await deps.addTag(m.workspaceId, m.from, action.tag, m.fromName ?? null);
      done.push({ action: "tag", done: true, reason: null });
    }
    if (action.webhook !== undefined) {
      const alive = rule.webhookId !== null && (await deps.webhooks.exists(m.workspaceId, rule.webhookId));
      if (alive && act)
        await deps.webhooks.emit(m.workspaceId, rule.webhookId!, {
          rule_id: rule.id,
          rule_name: rule.name,
          message: {
            thread_id: act.threadId,
            message_id: act.messageId,
            channel: m.channel,
            from: m.from,
            ...(m.fromName ? { from_name: m.fromName } : {}),
            body: m.body,
            ...(m.dataMessage ? { data_message: m.dataMessage } : {}),
            received_at: iso(m.at),
            device_id: m.deviceId,
          },
        });
      done.push({ action: "webhook", done: alive, reason: alive ? null : "its webhook subscription was deleted" });
    }
    if (action.forward !== undefined) {
      const f = action.forward;
      // A forward is a message the workspace pays for: one sender's flood of texts cannot become a
      // flood of forwards (they count in the same budget of automatic messages as replies).
      const reason =
        f.to === m.from
          ? "the sender is the number it forwards to"
          : (await repo.repliesSince(m.workspaceId, m.from, now - MINUTE, null)) >= REPLIES_PER_MINUTE
            ? `${REPLIES_PER_MINUTE} automatic messages went out for the sender in the last minute`
            : null;
      if (reason === null && act) {
        await repo.addReply(m.workspaceId, FORWARD_RECORD, m.from, now, now - 2 * MINUTE, now - FORGET_AFTER_MS);
        const name = m.fromName || (await deps.contactName(m.workspaceId, m.from));
        const who = name ? `${name} (${m.from})` : m.from;
        const body = m.dataMessage
          ? `[${describeDataSms(m.dataMessage)}]`
          : m.body.length > FORWARD_TEXT
            ? `${m.body.slice(0, FORWARD_TEXT)}…`
            : m.body;
        outgoing.push({
          to: { workspaceId: m.workspaceId, channel: f.channel ?? "sms", deviceId: f.device_id ?? null, simNumber: null, recipient: f.to },
          content: { text: `From ${who}: ${body}` },
          why: `forward by rule "${rule.name}"`,
        });
      }
      if (reason !== null && act) deps.log(`rule "${rule.name}" forwarded nothing: ${reason}`, undefined, fields);
      done.push({ action: "forward", done: reason === null, reason });
    }
    if (action.email !== undefined) {
      const reason = deps.emailConfigured() ? null : "no mail relay is configured (PIGEON_SMTP_RELAY_URL)";
      if (reason === null && act) {
        const name = m.fromName || (await deps.contactName(m.workspaceId, m.from)) || m.from;
        const subject = (action.email.subject ?? EMAIL_SUBJECT)
          .replaceAll("{from}", m.from)
          .replaceAll("{name}", name)
          .replaceAll("{text}", m.body.replace(/\s+/g, " ").slice(0, 80))
          .slice(0, 200);
        await deps.email(m, act, { to: action.email.to, subject, dedupeKey: `rule:${rule.id}:${act.messageId}` });
      }
      if (reason !== null && act) deps.log(`rule "${rule.name}" emailed nothing: ${reason}`, undefined, fields);
      done.push({ action: "email", done: reason === null, reason });
    }
    if (action.reply !== undefined) {
      const blocked = await replyBlocked(rule, m, now);
      if (blocked === null && act) {
        await repo.addReply(
          m.workspaceId,
          rule.id,
          m.from,
          now,
          now - Math.max(rule.replyWindowSeconds * 1000, MINUTE) * 2,
          now - FORGET_AFTER_MS,
        );
        const r = action.reply;
        outgoing.push({
          to: { workspaceId: m.workspaceId, channel: m.channel, deviceId: m.deviceId, simNumber: m.simNumber ?? null, recipient: m.from },
          content: r.text !== undefined ? { text: r.text } : { templateId: r.template_id!, variables: r.variables ?? {} },
          why: `reply by rule "${rule.name}"`,
        });
      } else if (blocked !== null && act) deps.log(`rule "${rule.name}" sent no reply: ${blocked}`, undefined, fields);
      done.push({ action: "reply", done: blocked === null, reason: blocked });
    }
    if (act) await repo.matched(rule.id, now);
    return { rule_id: rule.id, name: rule.name, actions: done };
  }

  return {
    present,

    async list(workspaceId: number) {
      return { rules: (await repo.list(workspaceId)).map((r) => present(r)) };
    },
    get: async (workspaceId: number, id: number) => present(await require(workspaceId, id)),

    async create(workspaceId: number, input: RuleInput) {
      if ((await repo.list(workspaceId)).length >= MAX_RULES)
        throw new AppError("conflict", `A workspace can have at most ${MAX_RULES} rules`, { limit: MAX_RULES });
      const fields = await fieldsOf(workspaceId, input, null);
      const action = fields.action as RuleAction;
      // The webhook's subscription first (its address is checked there); dropped again if the rule is not stored.
      const hook = action.webhook ? await createHook(workspaceId, action.webhook.url, fields.name) : null;
      try {
        const id = await storage.transaction(async () => {
          // Checked again inside the unit: two creates cannot both take one name.
          if (await repo.byName(workspaceId, fields.name))
            throw new AppError("duplicate_rule", `A rule named "${fields.name}" already exists`, { field: "name" });
          return repo.insert(workspaceId, { ...fields, webhookId: hook?.id ?? null }, clock.now());
        });
        return present((await repo.get(workspaceId, id))!, hook?.secret);
      } catch (error) {
        if (hook) await deps.webhooks.remove(workspaceId, hook.id);
        throw error;
      }
    },

    async update(workspaceId: number, id: number, input: Partial<RuleInput>) {
      const current = await require(workspaceId, id);
      const fields = await fieldsOf(workspaceId, input, current);
      const action = fields.action as RuleAction;
      let secret: string | undefined;
      if (action.webhook && current.webhookId !== null && (await deps.webhooks.exists(workspaceId, current.webhookId))) {
        await deps.webhooks.update(workspaceId, current.webhookId, action.webhook.url, hookName(fields.name));
      } else if (action.webhook) {
        const hook = await createHook(workspaceId, action.webhook.url, fields.name);
        fields.webhookId = hook.id;
        secret = hook.secret;
      } else if (current.webhookId !== null) {
        if (await deps.webhooks.exists(workspaceId, current.webhookId)) await deps.webhooks.remove(workspaceId, current.webhookId);
        fields.webhookId = null;
      }
      await repo.update(current.id, fields);
      return present((await repo.get(workspaceId, id))!, secret);
    },

    async remove(workspaceId: number, id: number) {
      const current = await require(workspaceId, id);
      await storage.transaction(() => repo.remove(workspaceId, current.id));
      if (current.webhookId !== null && (await deps.webhooks.exists(workspaceId, current.webhookId)))
        await deps.webhooks.remove(workspaceId, current.webhookId);
      compiled.delete(current.id);
      return { rule_id: id, deleted: true };
    },

    /** Sets the order: the rules named come first, in that order; the others keep theirs after them. */
    async reorder(workspaceId: number, ids: number[]) {
      const rules = await repo.list(workspaceId);
      const known = new Set(rules.map((r) => r.id));
      const unknown = ids.find((id) => !known.has(id));
      if (unknown !== undefined) throw new AppError("not_found", `rule ${unknown} not found`, { field: "rule_ids" });
      if (new Set(ids).size !== ids.length) throw invalid("rule_ids", "names a rule twice");
      const order = [...ids, ...rules.map((r) => r.id).filter((id) => !ids.includes(id))];
      const now = clock.now();
      await storage.transaction(async () => {
        for (const [i, id] of order.entries()) await repo.setPriority(workspaceId, id, (i + 1) * 10, now);
      });
      return { rules: (await repo.list(workspaceId)).map((r) => present(r)) };
    },

    /** What the rules would do with a message, without doing it: the dashboard's "would this match?". */
    async test(workspaceId: number, input: { body: string; channel?: DeliveryType; from?: string; at?: number }) {
      const from = input.from === undefined ? "" : toE164(input.from);
      if (from === null)
        throw new AppError("invalid_phone_number", `Invalid phone number "${input.from}": from must be E.164`, { field: "from" });
      const at = input.at ?? clock.now();
      const matches = await evaluate(
        { workspaceId, channel: input.channel ?? "sms", deviceId: 0, from, fromName: null, body: input.body, simNumber: null, at },
        null,
      );
      return { at: iso(at), matches };
    },

    /** Runs the rules on a stored inbound message, inside its unit (after the opt-out keywords). */
    onInbound: (m: Inbound, stored: { threadId: number; messageId: number }) => evaluate({ ...m, at: clock.now() }, stored),
  };
}

export type RuleService = ReturnType<typeof createRuleService>;
