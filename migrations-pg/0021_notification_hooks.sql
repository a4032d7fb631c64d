-- Follows SQLite's migration 0033: what must hear of a notification's changes beyond the events
-- (a Twilio status callback, a one-time code to mask), so that the others cost no lookup.
ALTER TABLE "notification" ADD COLUMN "hooks" bigint DEFAULT 0 NOT NULL;
