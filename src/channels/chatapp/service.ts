// The chat-app channel around the sender: connecting business numbers, keeping their templates in
// step with the platform, the rules a send must pass (24-hour window, linked accounts, blocked
// numbers), blocking and unblocking numbers, and the platform's webhooks.
import type { Database, Statement } from "bun:sqlite";
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Clock } from "../../clock";
import type { Config } from "../../config";
import type { Db } from "../../db/client";
import { template as templateTable } from "../../db/schema";
import type { AuthContext } from "../../http/auth";
import { AppError } from "../../http/errors";
import { webhookTargetProblem } from "../../lib/net-safety";
import { toE164 } from "../../lib/phone";
import { DAY, iso } from "../../lib/time";
import { nanoid, uuid } from "../../lib/tokens";
import type { DeviceRepository, DeviceRow } from "../../modules/devices/repository";
import type { EventService } from "../../modules/events/service";
import { applyReport } from "../../modules/notifications/reports";
import type { NotificationRecord, NotificationState } from "../../modules/notifications/state";
import type { Prepared, SendInput } from "../../modules/sending/service";
import type { TemplateRepository, TemplateRow } from "../../modules/templates/repository";
import { recordInbound } from "../../modules/threads/inbound";
import type { ThreadRepository } from "../../modules/threads/repository";
import type { DispatchOutcome } from "../types";
import { chatappConfigOf, headerParamCount, type ChatappConfig, type HeaderMedia } from "./adapter";
import { classifyPlatformCode } from "./errors";
import { GraphError, GraphUnreachable, type GraphClient, type PlatformTemplate } from "./graph";

/** The window closes 24 hours after the user last wrote; we stop a minute early to be safe. */
export const WINDOW_MS = DAY - 60_000;
const RECHECK_AFTER_MS = DAY;
export const MEDIA_LIMITS: Record<HeaderMedia["type"], number> = { image: 5 * 1024 * 1024, video: 16 * 1024 * 1024, document: 100 * 1024 * 1024 };

const STATUS_OF: Record<string, string> = { APPROVED: "active", PAUSED: "paused", DISABLED: "disabled", PENDING: "pending", REJECTED: "rejected" };
const ourStatus = (platform: string) => STATUS_OF[platform.toUpperCase()] ?? platform.toLowerCase();

interface Component {
  type: string;
  format?: string;
  text?: string;
}

/**
 * A platform template as one text with numbered placeholders running on from the header into the
 * body ("Act fast, {{1}}!" + "Hi {{2}}…"), so the rule "as many values as the template declares"
 * and the rendering of the final text both work on a single list.
 */
export function flattenTemplate(components: Component[]): { body: string; variables: string[] } {
  const header = components.find((c) => c.type.toUpperCase() === "HEADER");
  const body = components.find((c) => c.type.toUpperCase() === "BODY");
  const footer = components.find((c) => c.type.toUpperCase() === "FOOTER");
  const offset = headerParamCount(components);
  const parts: string[] = [];
  if (header && (header.format ?? "TEXT").toUpperCase() === "TEXT" && header.text) parts.push(header.text);
  if (body?.text) parts.push(body.text.replace(/\{\{(\d+)\}\}/g, (_, n: string) => `{{${Number(n) + offset}}}`));
  if (footer?.text) parts.push(footer.text);
  const count = new Set([...parts.join("\n").matchAll(/\{\{(\d+)\}\}/g)].map((m) => m[1])).size;
  return { body: parts.join("\n\n"), variables: Array.from({ length: count }, (_, i) => String(i + 1)) };
}

export interface ChatappDeps {
  sqlite: Database;
  db: Db;
  clock: Clock;
  config: Config;
  graph: GraphClient;
  devices: DeviceRepository;
  templates: TemplateRepository;
  threads: ThreadRepository;
  state: NotificationState;
  events: EventService;
  log: (message: string, error?: unknown) => void;
}

export function createChatappService(deps: ChatappDeps) {
  const { sqlite, db, clock, graph, devices, templates, threads, state, events } = deps;

  const byPhoneNumberId: Statement<{ id: number }, [string]> = sqlite.prepare(
    "SELECT id FROM device WHERE kind = 'chatapp' AND deleted_at IS NULL AND json_extract(config, '$.phoneNumberId') = ?",
  );
  const templatesOfAccount: Statement<{ id: number }, [number, string]> = sqlite.prepare(
    "SELECT id FROM template WHERE workspace_id = ? AND channel = 'chatapp' AND business_account_id = ? AND deleted_at IS NULL",
  );
  const templateByExternal: Statement<{ id: number; workspace_id: number }, [string, string]> = sqlite.prepare(
    "SELECT id, workspace_id FROM template WHERE external_id = ? AND business_account_id = ? AND deleted_at IS NULL",
  );
  const dueRechecks: Statement<{ workspace_id: number; business_account_id: string }, [number]> = sqlite.prepare(
    "SELECT DISTINCT workspace_id, business_account_id FROM template WHERE channel = 'chatapp' AND status = 'paused' AND recheck_at <= ? AND deleted_at IS NULL",
  );
  const linkedAccounts: Statement<{ workspace_id: number; business_account_id: string }, []> = sqlite.prepare(
    "SELECT DISTINCT workspace_id, json_extract(config, '$.businessAccountId') AS business_account_id FROM device WHERE kind = 'chatapp' AND deleted_at IS NULL",
  );
  const notificationByWamid: Statement<NotificationRecord, [string, number]> = sqlite.prepare(
    "SELECT * FROM notification WHERE external_id = ? AND device_id = ? AND route = 'chatapp'",
  );
  const byName: Statement<{ id: number }, [number, string]> = sqlite.prepare(
    "SELECT id FROM template WHERE workspace_id = ? AND channel = 'chatapp' AND name = ? AND deleted_at IS NULL ORDER BY status = 'active' DESC, language = 'en_US' DESC, id LIMIT 1",
  );
  const backlogAdd = sqlite.prepare("INSERT INTO status_backlog (device_id, external_id, payload, received_at) VALUES (?, ?, ?, ?)");
  const backlogTake: Statement<{ payload: string }, [string, number]> = sqlite.prepare(
    "DELETE FROM status_backlog WHERE external_id = ? AND device_id = ? RETURNING payload",
  );
  const backlogPrune = sqlite.prepare("DELETE FROM status_backlog WHERE received_at < ?");
  const setBlocked = sqlite.prepare("UPDATE device SET blocked_code = ?, blocked_reason = ?, blocked_at = ?, updated_at = ? WHERE id = ?");
  const clearBlocked = sqlite.prepare("UPDATE device SET blocked_code = NULL, blocked_reason = NULL, blocked_at = NULL, updated_at = ? WHERE id = ?");

  const liveDevices = (workspaceId: number) => devices.all(workspaceId, true).filter((d) => d.kind === "chatapp");
  const configOf = (device: DeviceRow): ChatappConfig => {
    const c = chatappConfigOf(device.config);
    if (!c) throw new AppError("invalid_device", `device ${device.id} is not a connected chat-app number`, { device_id: device.id });
    return c;
  };

  /** A blocked number may send again once relinked after the block, to prove the fix. */
  const onProbation = (device: DeviceRow) => device.blockedAt !== null && (chatappConfigOf(device.config)?.relinkedAt ?? 0) > device.blockedAt;

  function presentTemplateRef(t: TemplateRow) {
    return { template_id: t.id, code: t.code, name: t.name, language: t.language };
  }

  function activeTemplatesOf(workspaceId: number, businessAccountId: string): TemplateRow[] {
    return templatesOfAccount
      .all(workspaceId, businessAccountId)
      .map((r) => templates.byId(r.id))
      .filter((t): t is TemplateRow => t !== null && t.status === "active");
  }

  /** Whether the user last wrote to this business number less than 24 hours ago. */
  function windowOpen(workspaceId: number, deviceId: number, recipient: string): { open: boolean; lastInboundAt: number | null } {
    const thread = threads.find(workspaceId, "chatapp", deviceId, recipient);
    const last = thread?.last_inbound_at ?? null;
    return { open: last !== null && clock.now() < last + WINDOW_MS, lastInboundAt: last };
  }

  function graphFailure(error: unknown, fallback: "no_business_account" | "no_phone_number"): AppError {
    if (error instanceof GraphError) {
      const info = error.code !== null ? classifyPlatformCode(error.code) : null;
      return new AppError(fallback, `The platform refused: ${info?.title ?? error.message}${error.details ? ` (${error.details})` : ""}`, { platform_message: error.message }, error.code ?? undefined);
    }
    if (error instanceof GraphUnreachable) return new AppError("service_unavailable", `Cannot reach the chat-app platform: ${error.message}`);
    throw error;
  }

  /** Upserts a business account's templates; announces status changes as template.status events. */
  async function syncTemplates(workspaceId: number, businessAccountId: string, token: string): Promise<number> {
    const list: PlatformTemplate[] = await graph.templates(token, businessAccountId);
    const now = clock.now();
    const seen = new Set<string>();
    sqlite.transaction(() => {
      for (const pt of list) {
        seen.add(pt.id);
        const { body, variables } = flattenTemplate((pt.components ?? []) as Component[]);
        const status = ourStatus(pt.status);
        const existing = templateByExternal.get(pt.id, businessAccountId);
        const fields = {
          name: pt.name,
          language: pt.language,
          category: pt.category ?? null,
          body,
          variables,
          components: pt.components ?? [],
          businessAccountId,
          status,
          recheckAt: status === "paused" ? now + RECHECK_AFTER_MS : null,
          updatedAt: now,
        };
        if (existing && existing.workspace_id === workspaceId) {
          const before = templates.byId(existing.id)!;
          templates.update(existing.id, fields);
          if (before.status !== status) announceStatus(workspaceId, templates.byId(existing.id)!, before.status, null);
        } else {
          db.insert(templateTable)
            .values({
              ...fields,
              guid: uuid(),
              workspaceId,
              code: uniqueCode(workspaceId, pt.name, pt.language),
              description: `Chat-app template (${pt.category ?? "uncategorised"})`,
              channel: "chatapp",
              isSystem: 0,
              externalId: pt.id,
              createdAt: now,
            })
            .run();
        }
      }
      // Templates the platform no longer has cannot be sent.
      for (const { id } of templatesOfAccount.all(workspaceId, businessAccountId)) {
        const t = templates.byId(id)!;
        if (t.externalId && !seen.has(t.externalId) && t.status !== "deleted") {
          templates.update(id, { status: "deleted", updatedAt: now });
          announceStatus(workspaceId, templates.byId(id)!, t.status, "no longer on the platform");
        }
      }
    })();
    return list.length;
  }

  function uniqueCode(workspaceId: number, name: string, language: string): string {
    const base = `${name}_${language}`.toUpperCase().replace(/[^A-Z0-9]+/g, "_").replace(/^[_0-9]+|_+$/g, "").slice(0, 28) || "TEMPLATE";
    let code = base;
    for (let n = 2; templates.byCode(workspaceId, code); n++) code = `${base}_${n}`;
    return code;
  }

  function announceStatus(workspaceId: number, t: TemplateRow, previous: string, reason: string | null) {
    events.emit(workspaceId, "template.status", {
      template_id: t.id,
      name: t.name,
      language: t.language,
      status: t.status,
      previous_status: previous,
      reason,
      business_account_id: t.businessAccountId,
    });
  }

  function block(device: DeviceRow, code: string, reason: string) {
    const now = clock.now();
    sqlite.transaction(() => {
      setBlocked.run(code, reason, now, now, device.id);
      events.emit(device.workspaceId, "device.blocked", { device_id: device.id, name: device.name, kind: device.kind, blocked_code: code, blocked_reason: reason });
    })();
  }

  function unblock(device: DeviceRow) {
    sqlite.transaction(() => {
      clearBlocked.run(clock.now(), device.id);
      events.emit(device.workspaceId, "device.unblocked", { device_id: device.id, name: device.name, kind: device.kind });
    })();
  }

  function blockedError(device: DeviceRow) {
    return new AppError("device_blocked", `Device ${device.id} is blocked by the platform (${device.blockedCode}: ${device.blockedReason}); fix the problem and relink it`, {
      device_id: device.id,
      blocked_code: device.blockedCode,
      blocked_reason: device.blockedReason,
    });
  }

  /** The chat-app rules every send passes, before anything is stored. */
  function check(auth: AuthContext, p: Prepared, input: SendInput) {
    const chosenExplicitly = input.deviceId !== undefined && input.deviceId !== null && String(input.deviceId).trim() !== "";
    if (p.template) {
      const account = p.template.businessAccountId;
      const linked = liveDevices(auth.workspaceId).filter((d) => chatappConfigOf(d.config)?.businessAccountId === account);
      if (!account || linked.length === 0) {
        throw new AppError("template_account_unlinked", `Template ${p.template.id} is approved on a business account that is no longer linked; re-link it or use another template`, {
          template_id: p.template.id,
          business_account_id: account,
        });
      }
      if (chosenExplicitly && chatappConfigOf(p.device.config)?.businessAccountId !== account) {
        throw new AppError("device_account_mismatch", `Device ${p.device.id} belongs to another business account than template ${p.template.id}; omit device_id or choose a matching template`, {
          device_id: p.device.id,
          template_id: p.template.id,
        });
      }
      if (!chosenExplicitly && chatappConfigOf(p.device.config)?.businessAccountId !== account) {
        p.device = linked.find((d) => d.status === "active" && (d.blockedCode === null || onProbation(d))) ?? linked[0];
      }
    }
    if (p.device.blockedCode !== null && !onProbation(p.device)) throw blockedError(p.device);
    if (!p.template) {
      const { open, lastInboundAt } = windowOpen(auth.workspaceId, p.device.id, p.recipient);
      if (!open) {
        const available = activeTemplatesOf(auth.workspaceId, configOf(p.device).businessAccountId).map(presentTemplateRef);
        throw new AppError(
          "window_closed",
          "The 24-hour window with this user is closed: freeform messages are refused until they write again. Send an approved template instead (template_id).",
          {
            can_send_freeform: false,
            can_send_template: available.length > 0,
            available_templates: available,
            last_inbound_at: iso(lastInboundAt),
          },
          131047,
        );
      }
    }
  }

  /**
   * Header media for a template: a link that is not http(s) or cannot be fetched is dropped (the
   * platform would refuse the message for it anyway), one over the platform's limit is refused.
   */
  async function checkHeaderMedia(media: HeaderMedia | undefined): Promise<{ media: HeaderMedia | null; note: string | null }> {
    if (!media) return { media: null, note: null };
    let url: URL;
    try {
      url = new URL(media.link);
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http(s)");
    } catch {
      return { media: null, note: `header ${media.type} link "${media.link}" is not an http(s) URL and was dropped` };
    }
    if (await webhookTargetProblem(media.link, deps.config.allowPrivateWebhooks)) {
      return { media: null, note: `header ${media.type} link points at a private address and was dropped` };
    }
    let size: number | null = null;
    try {
      const res = await fetch(media.link, { method: "HEAD", signal: AbortSignal.timeout(5000), redirect: "follow" });
      if (!res.ok) return { media: null, note: `header ${media.type} link answered HTTP ${res.status} and was dropped` };
      const length = res.headers.get("content-length");
      size = length ? Number(length) : null;
    } catch {
      return { media: null, note: `header ${media.type} link cannot be fetched and was dropped` };
    }
    const limit = MEDIA_LIMITS[media.type];
    if (size !== null && size > limit) {
      throw new AppError("media_too_large", `The header ${media.type} is ${size} bytes; the platform's limit for ${media.type}s is ${limit} bytes`, {
        type: media.type,
        size,
        limit,
      });
    }
    return { media, note: null };
  }

  return {
    check,
    checkHeaderMedia,
    /** The overview names templates by their platform name; ids and codes work too. */
    templateRefByName: (workspaceId: number, ref: string): string => String(byName.get(workspaceId, ref)?.id ?? ref),
    windowOpen,
    syncTemplates,
    activeTemplatesOf,

    /** Resolves business accounts and numbers for a token, creates or updates their devices, syncs templates. */
    async connect(workspaceId: number, input: { access_token: string; business_account_id?: string; phone_number_id?: string }) {
      const token = input.access_token.trim();
      let accountIds: string[];
      try {
        accountIds = input.business_account_id ? [input.business_account_id] : await graph.businessAccountsOf(token);
      } catch (error) {
        throw graphFailure(error, "no_business_account");
      }
      if (accountIds.length === 0) {
        throw new AppError("no_business_account", "No business account was granted to this access token; restart the connect flow and grant one");
      }
      const accounts: { id: string; name: string | null; numbers: Awaited<ReturnType<GraphClient["phoneNumbers"]>> }[] = [];
      for (const id of accountIds) {
        try {
          const account = await graph.businessAccount(token, id);
          const numbers = (await graph.phoneNumbers(token, id)).filter((n) => !input.phone_number_id || n.id === input.phone_number_id);
          accounts.push({ id, name: account.name ?? null, numbers });
        } catch (error) {
          throw graphFailure(error, "no_business_account");
        }
      }
      if (accounts.every((a) => a.numbers.length === 0)) {
        throw new AppError(
          "no_phone_number",
          input.phone_number_id
            ? `Phone number ${input.phone_number_id} is not on the business account; add it and reconnect`
            : "The business account has no phone number; add a number and reconnect",
          { business_accounts: accounts.map((a) => a.id) },
        );
      }
      const now = clock.now();
      const connected: DeviceRow[] = [];
      for (const account of accounts) {
        for (const number of account.numbers) {
          const config: ChatappConfig = {
            phoneNumberId: number.id,
            businessAccountId: account.id,
            accessToken: token,
            displayPhoneNumber: number.display_phone_number,
            verifiedName: number.verified_name ?? null,
            relinkedAt: now,
          };
          const existing = liveDevices(workspaceId).find((d) => chatappConfigOf(d.config)?.phoneNumberId === number.id);
          const name = number.verified_name ? `${number.verified_name} (${number.display_phone_number})` : `Business number ${number.display_phone_number}`;
          const phone = toE164(`+${number.display_phone_number.replace(/\D/g, "")}`);
          if (existing) {
            connected.push(devices.update(existing.id, { config, name, phoneNumber: phone, status: "active", lastSeenAt: now, updatedAt: now }));
          } else {
            connected.push(
              devices.insertMany([
                {
                  workspaceId,
                  name,
                  kind: "chatapp",
                  status: "active",
                  externalId: nanoid(21),
                  phoneNumber: phone,
                  config,
                  sendLimitPerMinute: 4800,
                  lastSeenAt: now,
                  createdAt: now,
                  updatedAt: now,
                },
              ])[0],
            );
          }
        }
      }
      let synced = 0;
      for (const account of accounts) {
        if (account.numbers.length === 0) continue;
        try {
          synced += await syncTemplates(workspaceId, account.id, token);
        } catch (error) {
          deps.log(`template sync for business account ${account.id} failed`, error);
        }
      }
      return { business_accounts: accounts.map((a) => ({ id: a.id, name: a.name, phone_numbers: a.numbers.length })), devices: connected, templates: synced };
    },

    /** A new access token for a business number; a blocked number may then prove itself with a send. */
    async relink(workspaceId: number, input: { device_id: number; access_token: string }) {
      const device = devices.get(workspaceId, input.device_id);
      if (!device || device.kind !== "chatapp") throw new AppError("not_found", `chat-app device ${input.device_id} not found`);
      const config = configOf(device);
      let numbers;
      try {
        numbers = await graph.phoneNumbers(input.access_token, config.businessAccountId);
      } catch (error) {
        throw graphFailure(error, "no_business_account");
      }
      if (!numbers.some((n) => n.id === config.phoneNumberId)) {
        throw new AppError("no_phone_number", `This token does not reach phone number ${config.phoneNumberId} on business account ${config.businessAccountId}`);
      }
      const now = clock.now();
      const updated = devices.update(device.id, { config: { ...config, accessToken: input.access_token, relinkedAt: now }, updatedAt: now });
      try {
        await syncTemplates(workspaceId, config.businessAccountId, input.access_token);
      } catch (error) {
        deps.log(`template sync after relinking device ${device.id} failed`, error);
      }
      return updated;
    },

    /** Re-fetches the templates of a device's business account (the 132001 self-heal). */
    async refreshTemplates(device: DeviceRow) {
      const config = configOf(device);
      await syncTemplates(device.workspaceId, config.businessAccountId, config.accessToken);
    },

    /** Before the platform is called: a blocked number fails at once with its pre-blocked error. */
    preflight(device: DeviceRow): DispatchOutcome | null {
      if (device.blockedCode !== null && !onProbation(device)) {
        return { kind: "permanent", code: "device_blocked", reason: `the number is blocked (${device.blockedCode}: ${device.blockedReason})` };
      }
      return null;
    },

    /**
     * After each attempt: block a number on an account-level error; unblock it when a send that
     * started after the block succeeds (one already in flight when it was blocked proves nothing).
     */
    afterOutcome(n: NotificationRecord, device: DeviceRow, outcome: DispatchOutcome) {
      const fresh = devices.byId(device.id);
      if (!fresh) return;
      if (outcome.kind === "accepted" && fresh.blockedAt !== null && (n.dispatched_at ?? 0) >= fresh.blockedAt) unblock(fresh);
      else if (outcome.kind === "permanent" && outcome.block) block(fresh, outcome.code, outcome.reason);
      // Statuses that raced ahead of this answer are applied now.
      if (outcome.kind === "accepted") {
        for (const { payload } of backlogTake.all(outcome.externalId, fresh.id)) status(fresh, JSON.parse(payload));
      }
    },

    /** chatapp:prune-backlog — statuses for message ids never recorded are dropped after a day. */
    pruneBacklog: () => backlogPrune.run(clock.now() - DAY).changes,

    /** chatapp:recheck-templates — templates paused for low quality are asked about again after a day. */
    async recheckPaused(): Promise<number> {
      let n = 0;
      for (const { workspace_id, business_account_id } of dueRechecks.all(clock.now())) {
        const device = liveDevices(workspace_id).find((d) => chatappConfigOf(d.config)?.businessAccountId === business_account_id);
        if (!device) continue;
        try {
          await syncTemplates(workspace_id, business_account_id, configOf(device).accessToken);
          n++;
        } catch (error) {
          deps.log(`re-checking paused templates of ${business_account_id} failed`, error);
        }
      }
      return n;
    },

    /** chatapp:sync-templates — every linked business account, now and then. */
    async syncAll(): Promise<number> {
      let n = 0;
      for (const { workspace_id, business_account_id } of linkedAccounts.all()) {
        const device = liveDevices(workspace_id).find((d) => chatappConfigOf(d.config)?.businessAccountId === business_account_id);
        if (!device) continue;
        try {
          n += await syncTemplates(workspace_id, business_account_id, configOf(device).accessToken);
        } catch (error) {
          deps.log(`template sync of ${business_account_id} failed`, error);
        }
      }
      return n;
    },

    /** GET /v1/webhooks/chatapp: the platform's verification handshake. */
    verifyHandshake(query: Record<string, string | undefined>): string | null {
      const token = deps.config.chatapp.verifyToken;
      if (!token || query["hub.mode"] !== "subscribe" || !query["hub.verify_token"]) return null;
      const a = Buffer.from(query["hub.verify_token"]);
      const b = Buffer.from(token);
      return a.length === b.length && timingSafeEqual(a, b) ? (query["hub.challenge"] ?? "") : null;
    },

    /** Checks X-Hub-Signature-256 (HMAC-SHA256 of the raw body with the app secret), in constant time. */
    signatureValid(raw: string, header: string | null): boolean {
      const secret = deps.config.chatapp.appSecret;
      if (!secret || !header?.startsWith("sha256=")) return false;
      const expected = Buffer.from(createHmac("sha256", secret).update(raw).digest("hex"));
      const given = Buffer.from(header.slice("sha256=".length));
      return expected.length === given.length && timingSafeEqual(expected, given);
    },

    /** Applies one platform webhook delivery: inbound messages, statuses, template status updates. */
    receive(payload: unknown) {
      const body = payload as { object?: string; entry?: { id?: string; changes?: { field?: string; value?: Record<string, unknown> }[] }[] };
      if (body?.object !== "whatsapp_business_account" || !Array.isArray(body.entry)) return;
      for (const entry of body.entry) {
        for (const change of entry.changes ?? []) {
          const value = change.value ?? {};
          if (change.field === "messages") onMessages(value);
          else if (change.field === "message_template_status_update") onTemplateStatus(String(entry.id ?? ""), value);
        }
      }
    },
  };

  function onMessages(value: Record<string, unknown>) {
    const metadata = value.metadata as { phone_number_id?: string } | undefined;
    if (!metadata?.phone_number_id) return;
    const targets = byPhoneNumberId.all(metadata.phone_number_id).map((r) => devices.byId(r.id)!).filter(Boolean);
    const names = new Map(((value.contacts ?? []) as { wa_id?: string; profile?: { name?: string } }[]).map((c) => [c.wa_id, c.profile?.name ?? null]));
    for (const device of targets) {
      sqlite.transaction(() => {
        for (const m of (value.messages ?? []) as Record<string, any>[]) inbound(device, m, names.get(m.from) ?? null);
        for (const s of (value.statuses ?? []) as Record<string, any>[]) status(device, s);
      })();
    }
  }

  function inbound(device: DeviceRow, m: Record<string, any>, name: string | null) {
    if (typeof m.from !== "string" || !m.from) return;
    const from = toE164(`+${m.from.replace(/^\+/, "")}`) ?? `+${m.from.replace(/^\+/, "")}`;
    const text: string = m.text?.body ?? m[m.type]?.caption ?? m.button?.text ?? m.interactive?.button_reply?.title ?? m.interactive?.list_reply?.title ?? `[${m.type ?? "message"}]`;
    const at = Number(m.timestamp) * 1000 || clock.now();
    recordInbound(threads, events, {
      workspaceId: device.workspaceId,
      channel: "chatapp",
      deviceId: device.id,
      from,
      fromName: name,
      body: text,
      externalId: typeof m.id === "string" ? m.id : null,
      at,
      extra: { type: m.type ?? "text" },
    });
  }

  function status(device: DeviceRow, s: Record<string, any>) {
    if (typeof s.id !== "string") return;
    const n = notificationByWamid.get(s.id, device.id);
    if (!n) {
      backlogAdd.run(device.id, s.id, JSON.stringify(s), clock.now());
      return;
    }
    const at = Number(s.timestamp) * 1000 || undefined;
    const detail = `platform status: ${s.status}`;
    switch (s.status) {
      case "sent":
        applyReport(state, n.id, { status: "sent", at, detail });
        return;
      case "delivered":
      case "read":
        applyReport(state, n.id, { status: "delivered", at, detail });
        return;
      case "failed": {
        const err = (s.errors ?? [])[0] as { code?: number; title?: string; message?: string; error_data?: { details?: string } } | undefined;
        const code = typeof err?.code === "number" ? err.code : null;
        const info = code !== null ? classifyPlatformCode(code) : null;
        const reason = `${err?.title ?? info?.title ?? "failed"}${err?.error_data?.details ? `: ${err.error_data.details}` : ""}`;
        applyReport(state, n.id, { status: "failed", at, errorCode: code !== null ? String(code) : "platform_failed", reason, detail: `${detail} (${code ?? "?"} ${reason})` });
        if (info?.cls === "block") block(device, String(code), reason);
        return;
      }
    }
  }

  function onTemplateStatus(businessAccountId: string, value: Record<string, unknown>) {
    const externalId = String(value.message_template_id ?? "");
    const row = templateByExternal.get(externalId, businessAccountId);
    if (!row || typeof value.event !== "string") return;
    const before = templates.byId(row.id)!;
    const status = ourStatus(value.event === "REINSTATED" ? "APPROVED" : value.event);
    if (status === before.status) return;
    const otherInfo = value.other_info as { title?: string } | undefined;
    const reason = otherInfo?.title ?? (typeof value.reason === "string" && value.reason !== "NONE" ? value.reason : null);
    sqlite.transaction(() => {
      templates.update(row.id, { status, statusReason: reason, recheckAt: status === "paused" ? clock.now() + RECHECK_AFTER_MS : null, updatedAt: clock.now() });
      announceStatus(row.workspace_id, templates.byId(row.id)!, before.status, reason);
    })();
  }
}

export type ChatappService = ReturnType<typeof createChatappService>;
