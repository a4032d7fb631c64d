-- What a device was handed in a window is read only for handed rows (dispatched_at >= ?): a send no
-- longer writes this index when it is stored, only when it is handed over (as migrations/0036).
DROP INDEX IF EXISTS "notification_device_dispatched_idx";
CREATE INDEX "notification_device_dispatched_idx" ON "notification" ("device_id", "dispatched_at") WHERE "dispatched_at" IS NOT NULL;
