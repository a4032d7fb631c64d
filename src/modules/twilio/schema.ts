// The Twilio-compatible API's tables: a workspace's credentials, status callbacks and the posts
// waiting to be made. Declared with drizzle; drizzle-kit reads every schema.ts in src
// (drizzle.config.ts).
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { apiKey, workspace } from "../accounts/schema";
import { notification } from "../notifications/schema";

/**
 * A workspace's Twilio-style credentials: the account SID its Twilio-compatible API is called with,
 * and the auth token (sealed with the key: it also signs status callbacks). Calls made with them act
 * as the workspace's API key `api_key_id` (named "Twilio account"), so its rate limits, its status
 * and its use are a key's.
 */
export const twilioAccount = sqliteTable("twilio_account", {
  workspaceId: integer("workspace_id")
    .primaryKey()
    .references(() => workspace.id),
  accountSid: text("account_sid").notNull().unique(),
  authToken: text("auth_token").notNull(),
  apiKeyId: integer("api_key_id")
    .notNull()
    .references(() => apiKey.id),
  // Where each received message is posted as Twilio posts it, its TwiML answer sent back (null: none).
  incomingUrl: text("incoming_url"),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/** A message sent through the Twilio-compatible API with a StatusCallback: where its changes are posted. */
export const twilioCallback = sqliteTable("twilio_callback", {
  notificationId: integer("notification_id")
    .primaryKey()
    .references(() => notification.id),
  workspaceId: integer("workspace_id").notNull(),
  url: text("url").notNull(),
  createdAt: integer("created_at").notNull(),
});

/**
 * The Twilio-style posts waiting to be made (an outbox, written in the transaction of the change):
 * a status callback, or a received message for an incoming-message URL (whose TwiML answer is then
 * sent to `peer` through the device and SIM it came in on, `reply`). Removed once made or given up.
 */
export const twilioPost = sqliteTable(
  "twilio_post",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id").notNull(),
    kind: text("kind", { enum: ["status", "incoming"] }).notNull(),
    url: text("url").notNull(),
    // The form parameters, in order, as [name, value] pairs.
    params: text("params", { mode: "json" }).notNull().$type<[string, string][]>(),
    // The phone number on the other side (privacy erasure finds the posts by it).
    peer: text("peer").notNull(),
    // Incoming: the channel, device and SIM a TwiML answer goes back through.
    reply: text("reply", { mode: "json" }).$type<{ channel: string; deviceId: number; simNumber: number | null }>(),
    attempts: integer("attempts").notNull().default(0),
    nextAt: integer("next_at").notNull(),
    // The server whose call is under way (null: waiting); a stopped server's are sent again.
    claimedBy: text("claimed_by"),
    lastError: text("last_error"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [index("twilio_post_due_idx").on(table.nextAt), index("twilio_post_peer_idx").on(table.workspaceId, table.peer)],
);
