// The chat-app templates in step with the platform: a business account's templates fetched and
// upserted, status changes announced as template.status events, and the periodic re-syncs.
import { DAY } from "../../lib/time";
import { uuid } from "../../lib/tokens";
import type { DeviceRow } from "../../modules/devices/model";
import type { TemplateRow } from "../../modules/templates/model";
import { headerParamCount } from "./adapter";
import type { ChatappContext } from "./context";
import type { AccountRef } from "./repository";
import type { PlatformTemplate } from "./graph";

export const RECHECK_AFTER_MS = DAY;

const STATUS_OF: Record<string, string> = {
  APPROVED: "active",
  PAUSED: "paused",
  DISABLED: "disabled",
  PENDING: "pending",
  REJECTED: "rejected",
};
export const ourStatus = (platform: string) => STATUS_OF[platform.toUpperCase()] ?? platform.toLowerCase();

export interface Component {
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

export function createTemplateSync(ctx: ChatappContext) {
  const { storage, clock, graph, templates, events, repo } = ctx;

  async function activeTemplatesOf(workspaceId: number, businessAccountId: string): Promise<TemplateRow[]> {
    const active: TemplateRow[] = [];
    for (const id of await repo.templateIdsOfAccount(workspaceId, businessAccountId)) {
      const t = await templates.byId(id);
      if (t?.status === "active") active.push(t);
    }
    return active;
  }

  async function announceStatus(workspaceId: number, t: TemplateRow, previous: string, reason: string | null): Promise<void> {
    await events.emit(workspaceId, "template.status", {
      template_id: t.id,
      name: t.name,
      language: t.language,
      status: t.status,
      previous_status: previous,
      reason,
      business_account_id: t.businessAccountId,
    });
  }

  async function uniqueCode(workspaceId: number, name: string, language: string): Promise<string> {
    const base =
      `${name}_${language}`
        .toUpperCase()
        .replace(/[^A-Z0-9]+/g, "_")
        .replace(/^[_0-9]+|_+$/g, "")
        .slice(0, 28) || "TEMPLATE";
    let code = base;
    for (let n = 2; await templates.byCode(workspaceId, code); n++) code = `${base}_${n}`;
    return code;
  }

  /** Upserts a business account's templates; announces status changes as template.status events. */
  async function syncTemplates(workspaceId: number, businessAccountId: string, token: string): Promise<number> {
    const list: PlatformTemplate[] = await graph.templates(token, businessAccountId);
    const now = clock.now();
    const seen = new Set<string>();
    await storage.transaction(async () => {
      for (const pt of list) {
        seen.add(pt.id);
        const { body, variables } = flattenTemplate((pt.components ?? []) as Component[]);
        const status = ourStatus(pt.status);
        const existing = await repo.templateByExternal(pt.id, businessAccountId);
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
        if (existing && existing.workspaceId === workspaceId) {
          const before = (await templates.byId(existing.id))!;
          // A sync that finds the template as it was leaves it (and its updated_at) alone.
          const same =
            before.name === fields.name &&
            before.language === fields.language &&
            (before.category ?? null) === fields.category &&
            before.body === fields.body &&
            before.status === status &&
            before.businessAccountId === businessAccountId &&
            JSON.stringify(before.variables) === JSON.stringify(fields.variables) &&
            JSON.stringify(before.components) === JSON.stringify(fields.components);
          if (same && status !== "paused") continue;
          await templates.update(existing.id, same ? { recheckAt: fields.recheckAt } : fields);
          if (before.status !== status) await announceStatus(workspaceId, (await templates.byId(existing.id))!, before.status, null);
        } else {
          await templates.insert({
            ...fields,
            guid: uuid(),
            workspaceId,
            code: await uniqueCode(workspaceId, pt.name, pt.language),
            description: `Chat-app template (${pt.category ?? "uncategorised"})`,
            channel: "chatapp",
            isSystem: false,
            externalId: pt.id,
            createdAt: now,
          });
        }
      }
      // Templates the platform no longer has cannot be sent.
      for (const id of await repo.templateIdsOfAccount(workspaceId, businessAccountId)) {
        const t = (await templates.byId(id))!;
        if (t.externalId && !seen.has(t.externalId) && t.status !== "deleted") {
          await templates.update(id, { status: "deleted", updatedAt: now });
          await announceStatus(workspaceId, (await templates.byId(id))!, t.status, "no longer on the platform");
        }
      }
    });
    return list.length;
  }

  /**
   * Syncs each business account through one of its live numbers' tokens; an account without one is
   * skipped, and one that fails is logged and skipped. Returns what `count` counts: the accounts
   * synced, or the templates fetched.
   */
  async function syncAccounts(accounts: AccountRef[], count: "accounts" | "templates", failure: string): Promise<number> {
    let n = 0;
    for (const { workspaceId, businessAccountId } of accounts) {
      const device = await ctx.numberOfAccount(workspaceId, businessAccountId);
      if (!device) continue;
      try {
        const fetched = await syncTemplates(workspaceId, businessAccountId, ctx.configOf(device).accessToken);
        n += count === "accounts" ? 1 : fetched;
      } catch (error) {
        ctx.log(`${failure} ${businessAccountId} failed`, error);
      }
    }
    return n;
  }

  /** A template status webhook: the new status, announced. */
  async function onTemplateStatus(businessAccountId: string, value: Record<string, unknown>): Promise<void> {
    const externalId = String(value.message_template_id ?? "");
    const row = await repo.templateByExternal(externalId, businessAccountId);
    if (!row || typeof value.event !== "string") return;
    const before = (await templates.byId(row.id))!;
    const status = ourStatus(value.event === "REINSTATED" ? "APPROVED" : value.event);
    if (status === before.status) return;
    const otherInfo = value.other_info as { title?: string } | undefined;
    const reason = otherInfo?.title ?? (typeof value.reason === "string" && value.reason !== "NONE" ? value.reason : null);
    await storage.transaction(async () => {
      await templates.update(row.id, {
        status,
        statusReason: reason,
        recheckAt: status === "paused" ? clock.now() + RECHECK_AFTER_MS : null,
        updatedAt: clock.now(),
      });
      await announceStatus(row.workspaceId, (await templates.byId(row.id))!, before.status, reason);
    });
  }

  return {
    syncTemplates,
    activeTemplatesOf,
    onTemplateStatus,
    /** The overview names templates by their platform name; ids and codes work too. */
    templateRefByName: async (workspaceId: number, ref: string): Promise<string> =>
      String((await repo.templateIdByName(workspaceId, ref)) ?? ref),

    /** Re-fetches the templates of a device's business account (the 132001 self-heal). */
    async refreshTemplates(device: DeviceRow) {
      const config = ctx.configOf(device);
      await syncTemplates(device.workspaceId, config.businessAccountId, config.accessToken);
    },

    /** chatapp:recheck-templates — templates paused for low quality are asked about again after a day. */
    recheckPaused: async (): Promise<number> =>
      syncAccounts(await repo.accountsDueRecheck(clock.now()), "accounts", "re-checking paused templates of"),

    /** chatapp:sync-templates — every linked business account, now and then. */
    syncAll: async (): Promise<number> => syncAccounts(await repo.linkedAccounts(), "templates", "template sync of"),
  };
}

export type TemplateSync = ReturnType<typeof createTemplateSync>;
