// The notification table's record type and row mapping, shared by the parts of the notification
// repository (repository.ts and the *-repository.ts beside it) and, through repository.ts, the
// channels' repositories that read whole notifications.
import { tableRecords } from "../../db/records";
import { notification } from "./schema";

/** A notification as the domain sees it: the schema's record (camelCase, JSON parsed, real booleans). */
export type NotificationRecord = typeof notification.$inferSelect;
export type NotificationStatus = NotificationRecord["status"];
export type Stage = NotificationRecord["stage"];
/** What a transition moves a notification to (pending and awaiting_approval are where one starts). */
export type MoveTo = Exclude<NotificationStatus, "pending" | "awaiting_approval">;

/**
 * The notification table's select list and row mapping, for every repository that reads whole
 * notifications (this one, the phone's queue, the chat-app's webhooks): they select
 * `notificationRows.columns()` and hand out `notificationRows.record(row)`, never the stored row.
 */
export const notificationRows = tableRecords(notification);
export type Row = Record<string, unknown>;
export const one = (row: Row | null): NotificationRecord | null => (row ? notificationRows.record(row) : null);
export const many = (rows: Row[]): NotificationRecord[] => rows.map(notificationRows.record);
