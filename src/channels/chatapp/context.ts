// What the chat-app channel's parts share: their dependencies, the statements on its own tables and
// columns, and the few helpers every part needs (its live numbers, a number's settings).
import type { Database } from "bun:sqlite";
import type { Clock } from "../../clock";
import type { Config } from "../../config";
import type { Db } from "../../db/client";
import { AppError } from "../../http/errors";
import type { DeviceRepository, DeviceRow } from "../../modules/devices/repository";
import type { EventService } from "../../modules/events/service";
import type { NotificationRecord, NotificationState } from "../../modules/notifications/state";
import type { TemplateRepository } from "../../modules/templates/repository";
import type { ThreadRepository } from "../../modules/threads/repository";
import { chatappConfigOf, type ChatappConfig } from "./adapter";
import type { GraphClient } from "./graph";

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
  /** The HTTP client for header-media probes (the one the channels use). */
  fetch?: typeof fetch;
}

export function createChatappContext(deps: ChatappDeps) {
  const { sqlite, devices } = deps;
  const statements = {
    byPhoneNumberId: sqlite.prepare<{ id: number }, [string]>("SELECT id FROM device WHERE kind = 'chatapp' AND deleted_at IS NULL AND json_extract(config, '$.phoneNumberId') = ?"),
    templatesOfAccount: sqlite.prepare<{ id: number }, [number, string]>("SELECT id FROM template WHERE workspace_id = ? AND channel = 'chatapp' AND business_account_id = ? AND deleted_at IS NULL"),
    templateByExternal: sqlite.prepare<{ id: number; workspace_id: number }, [string, string]>("SELECT id, workspace_id FROM template WHERE external_id = ? AND business_account_id = ? AND deleted_at IS NULL"),
    dueRechecks: sqlite.prepare<{ workspace_id: number; business_account_id: string }, [number]>("SELECT DISTINCT workspace_id, business_account_id FROM template WHERE channel = 'chatapp' AND status = 'paused' AND recheck_at <= ? AND deleted_at IS NULL"),
    linkedAccounts: sqlite.prepare<{ workspace_id: number; business_account_id: string }, []>("SELECT DISTINCT workspace_id, json_extract(config, '$.businessAccountId') AS business_account_id FROM device WHERE kind = 'chatapp' AND deleted_at IS NULL"),
    notificationByWamid: sqlite.prepare<NotificationRecord, [string, number]>("SELECT * FROM notification WHERE external_id = ? AND device_id = ? AND route = 'chatapp'"),
    byName: sqlite.prepare<{ id: number }, [number, string]>("SELECT id FROM template WHERE workspace_id = ? AND channel = 'chatapp' AND name = ? AND deleted_at IS NULL ORDER BY status = 'active' DESC, language = 'en_US' DESC, id LIMIT 1"),
    backlogAdd: sqlite.prepare("INSERT INTO status_backlog (device_id, external_id, payload, received_at) VALUES (?, ?, ?, ?)"),
    backlogTake: sqlite.prepare<{ payload: string }, [string, number]>("DELETE FROM status_backlog WHERE external_id = ? AND device_id = ? RETURNING payload"),
    backlogPrune: sqlite.prepare("DELETE FROM status_backlog WHERE received_at < ?"),
    setBlocked: sqlite.prepare("UPDATE device SET blocked_code = ?, blocked_reason = ?, blocked_at = ?, updated_at = ? WHERE id = ?"),
    clearBlocked: sqlite.prepare("UPDATE device SET blocked_code = NULL, blocked_reason = NULL, blocked_at = NULL, updated_at = ? WHERE id = ?"),
  };

  const liveDevices = (workspaceId: number) => devices.all(workspaceId, true).filter((d) => d.kind === "chatapp");
  const configOf = (device: DeviceRow): ChatappConfig => {
    const c = chatappConfigOf(device.config);
    if (!c) throw new AppError("invalid_device", `device ${device.id} is not a connected chat-app number`, { device_id: device.id });
    return c;
  };
  /** A live number of a business account, whose token can speak for it. */
  const numberOfAccount = (workspaceId: number, businessAccountId: string) =>
    liveDevices(workspaceId).find((d) => chatappConfigOf(d.config)?.businessAccountId === businessAccountId);

  return { ...deps, statements, liveDevices, configOf, numberOfAccount };
}

export type ChatappContext = ReturnType<typeof createChatappContext>;
