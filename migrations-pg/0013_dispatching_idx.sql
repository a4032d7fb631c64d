-- Follows SQLite's migration 0025: the calls claimed and not yet recorded, per device. The worker's
-- claim counts them in a device's pacing window, so a call claimed near the end of one window that
-- goes out in the next is counted against the next (src/worker/dispatcher.ts).
CREATE INDEX "notification_dispatching_idx" ON "notification" ("device_id") WHERE stage = 'dispatching';
-- The claim reads due work in (next_attempt_at, id) order. A bulk request's or a campaign's rows share
-- one due time, so with the id outside the index PostgreSQL read every row of that time and sorted
-- them to find the oldest few hundred (SQLite's index entries end with the row id already).
DROP INDEX "notification_due_route_idx";
CREATE INDEX "notification_due_route_idx" ON "notification" ("stage", "route", "next_attempt_at", "id");
