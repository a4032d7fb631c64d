// The chat-app channel's queries on its own tables and columns: numbers found by the platform's
// phone-number id, templates by business account, the status backlog (statuses that arrive before
// the send that caused them is recorded) and a number's block. Prepared once: webhooks and the
// sync tasks call them for every status and template.
import type { Database, Statement } from "bun:sqlite";
import type { RawRow } from "../../db/raw-row";
import type { device, statusBacklog, template } from "../../db/schema";
import type { NotificationRecord } from "../../modules/notifications/state";

type IdRow = Pick<RawRow<typeof device>, "id">;
/** A chat-app template belongs to a workspace (only system templates have none). */
type TemplateRef = { [K in "id" | "workspace_id"]: NonNullable<RawRow<typeof template>[K]> };
/** A business account linked in a workspace. */
export interface AccountRef {
  workspace_id: number;
  business_account_id: string;
}

export function createChatappRepository(sqlite: Database) {
  const byPhoneNumberId: Statement<IdRow, [string]> = sqlite.prepare(
    "SELECT id FROM device WHERE kind = 'chatapp' AND deleted_at IS NULL AND json_extract(config, '$.phoneNumberId') = ?",
  );
  const templatesOfAccount: Statement<Pick<TemplateRef, "id">, [number, string]> = sqlite.prepare(
    "SELECT id FROM template WHERE workspace_id = ? AND channel = 'chatapp' AND business_account_id = ? AND deleted_at IS NULL",
  );
  const templateByExternal: Statement<TemplateRef, [string, string]> = sqlite.prepare(
    "SELECT id, workspace_id FROM template WHERE external_id = ? AND business_account_id = ? AND deleted_at IS NULL",
  );
  const dueRechecks: Statement<AccountRef, [number]> = sqlite.prepare(
    "SELECT DISTINCT workspace_id, business_account_id FROM template WHERE channel = 'chatapp' AND status = 'paused' AND recheck_at <= ? AND deleted_at IS NULL",
  );
  const linkedAccounts: Statement<AccountRef, []> = sqlite.prepare(
    "SELECT DISTINCT workspace_id, json_extract(config, '$.businessAccountId') AS business_account_id FROM device WHERE kind = 'chatapp' AND deleted_at IS NULL",
  );
  const notificationByWamid: Statement<NotificationRecord, [string, number]> = sqlite.prepare(
    "SELECT * FROM notification WHERE external_id = ? AND device_id = ? AND route = 'chatapp'",
  );
  const byName: Statement<Pick<TemplateRef, "id">, [number, string]> = sqlite.prepare(
    "SELECT id FROM template WHERE workspace_id = ? AND channel = 'chatapp' AND name = ? AND deleted_at IS NULL ORDER BY status = 'active' DESC, language = 'en_US' DESC, id LIMIT 1",
  );
  const backlogAdd = sqlite.prepare("INSERT INTO status_backlog (device_id, external_id, payload, received_at) VALUES (?, ?, ?, ?)");
  const backlogTake: Statement<Pick<RawRow<typeof statusBacklog>, "payload">, [string, number]> = sqlite.prepare(
    "DELETE FROM status_backlog WHERE external_id = ? AND device_id = ? RETURNING payload",
  );
  const backlogPrune = sqlite.prepare("DELETE FROM status_backlog WHERE received_at < ?");
  const setBlocked = sqlite.prepare("UPDATE device SET blocked_code = ?, blocked_reason = ?, blocked_at = ?, updated_at = ? WHERE id = ?");
  const clearBlocked = sqlite.prepare(
    "UPDATE device SET blocked_code = NULL, blocked_reason = NULL, blocked_at = NULL, updated_at = ? WHERE id = ?",
  );

  return {
    /** The live numbers (usually one) the platform's phone-number id names. */
    deviceIdsByPhoneNumberId: (phoneNumberId: string): number[] => byPhoneNumberId.all(phoneNumberId).map((r) => r.id),
    templateIdsOfAccount: (workspaceId: number, businessAccountId: string): number[] =>
      templatesOfAccount.all(workspaceId, businessAccountId).map((r) => r.id),
    templateByExternal: (externalId: string, businessAccountId: string): TemplateRef | null =>
      templateByExternal.get(externalId, businessAccountId),
    /** Accounts with a paused template whose re-check is due. */
    accountsDueRecheck: (now: number): AccountRef[] => dueRechecks.all(now),
    linkedAccounts: (): AccountRef[] => linkedAccounts.all(),
    notificationByWamid: (wamid: string, deviceId: number): NotificationRecord | null => notificationByWamid.get(wamid, deviceId),
    /** A template by its platform name, the active one and en_US first. */
    templateIdByName: (workspaceId: number, name: string): number | null => byName.get(workspaceId, name)?.id ?? null,
    backlogAdd(deviceId: number, externalId: string, payload: string, at: number) {
      backlogAdd.run(deviceId, externalId, payload, at);
    },
    /** Removes and returns the statuses kept for a message. */
    backlogTake: (externalId: string, deviceId: number): string[] => backlogTake.all(externalId, deviceId).map((r) => r.payload),
    /** Drops statuses kept since before `before`; how many. */
    backlogPrune: (before: number): number => backlogPrune.run(before).changes,
    setBlocked(deviceId: number, code: string, reason: string | null, at: number) {
      setBlocked.run(code, reason, at, at, deviceId);
    },
    clearBlocked(deviceId: number, at: number) {
      clearBlocked.run(at, deviceId);
    },
  };
}

export type ChatappRepository = ReturnType<typeof createChatappRepository>;
