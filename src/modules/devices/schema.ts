// The devices module's table: every device a workspace sends through (paired phones, cloud numbers,
// business numbers). Declared with drizzle; drizzle-kit reads every schema.ts in src
// (drizzle.config.ts).
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { DEVICE_KINDS } from "../../core/kinds";
import { workspace } from "../accounts/schema";

/** A paired phone's health as its app last reported it (the system:ping webhook's checks). */
export interface PhoneHealth {
  /** The app's overall verdict: pass, warn or fail. */
  status: string | null;
  batteryLevel: number | null;
  charging: boolean | null;
  /** Plugged into AC or USB (a full battery on a charger is plugged but not charging). */
  plugged: boolean | null;
  /** Internet connection (connection:status). */
  connected: boolean | null;
  /** The cellular data network: none, unknown, 2g, 3g, 4g or 5g. */
  cellular: string | null;
  /** Messages that failed on the phone in the last hour, and the app's verdict on them. */
  failedMessages: number | null;
  failedStatus: string | null;
  appVersion: string | null;
  reportedAt: number;
}

export const device = sqliteTable(
  "device",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    name: text("name").notNull(),
    kind: text("kind", { enum: DEVICE_KINDS }).notNull(),
    status: text("status", { enum: ["active", "inactive"] })
      .notNull()
      .default("active"),
    // The phone's id in the companion-app protocol (a 21-character nanoid).
    externalId: text("external_id").notNull().unique(),
    // SHA-256 of the device token the companion app authenticates with.
    tokenHash: text("token_hash").unique(),
    phoneNumber: text("phone_number"),
    // Channel settings (cloud-number credentials, business-number ids), JSON.
    config: text("config", { mode: "json" }).$type<object>(),
    sendLimitPerMinute: integer("send_limit_per_minute").notNull().default(60),
    // A paired phone's random pause between two messages, in seconds (served in its settings).
    sendIntervalMin: integer("send_interval_min").notNull().default(1),
    sendIntervalMax: integer("send_interval_max").notNull().default(5),
    // Which of the settings above the user chose in Pigeon (JSON list of API field names): only
    // those are pushed to a paired phone, the others are left to the phone's own choice.
    userSettings: text("user_settings", { mode: "json" }).$type<string[]>(),
    // Companion app: FCM token (null in SSE-only mode), SIM cards, the key it signs webhooks with,
    // and the version its User-Agent reports.
    pushToken: text("push_token"),
    simCards: text("sim_cards", { mode: "json" }).$type<unknown[]>(),
    webhookKey: text("webhook_key"),
    // Paired phones: the passphrase of end-to-end encrypted messages, when the user chose to push
    // it to the phone through its settings (sealed like the signing key); null: the phone's own.
    encryptionPassphrase: text("encryption_passphrase"),
    appVersion: text("app_version"),
    // Paired phones: the last presence we announced (device.online / device.offline events).
    presence: text("presence", { enum: ["online", "offline"] }),
    // Paired phones: the health the app last reported in its system:ping webhook, and while an
    // unhealthy episode lasts (device.unhealthy announced) its reasons, e.g. ["low_battery"].
    health: text("health", { mode: "json" }).$type<PhoneHealth>(),
    unhealthyReasons: text("unhealthy_reasons", { mode: "json" }).$type<string[]>(),
    blockedCode: text("blocked_code"),
    blockedReason: text("blocked_reason"),
    blockedAt: integer("blocked_at"),
    lastSeenAt: integer("last_seen_at"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    deletedAt: integer("deleted_at"),
  },
  (table) => [index("device_workspace_idx").on(table.workspaceId, table.deletedAt, table.status)],
);
