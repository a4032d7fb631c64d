-- A bulk send stores its notifications in one multi-row INSERT on PostgreSQL. The two insert
-- triggers (the hourly counts' delta, the thread catch-up's queue) ran once a row, each a
-- statement of its own inside PostgreSQL; they now run once a statement over the statement's new
-- rows (a transition table): the delta as one row an hour, status and channel, the queue as one
-- INSERT … SELECT. SQLite keeps its row triggers (migrations 0021 and 0022), which cost it no
-- round trip. Updates and deletes still count a row at a time (each changes one row).
DROP TRIGGER "notification_hourly_insert" ON "notification";
--> statement-breakpoint
DROP TRIGGER "thread_pending_insert" ON "notification";
--> statement-breakpoint
DROP FUNCTION "thread_pending_queue"();
--> statement-breakpoint
CREATE FUNCTION "notification_inserted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "notification_hourly_delta" ("workspace_id", "status", "hour", "delivery_type", "n")
  SELECT "workspace_id", "status", "created_at" / 3600000, "delivery_type", count(*) FROM "inserted"
  GROUP BY "workspace_id", "status", "created_at" / 3600000, "delivery_type";
  INSERT INTO "thread_pending" ("notification_id") SELECT "id" FROM "inserted";
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "notification_inserted" AFTER INSERT ON "notification"
REFERENCING NEW TABLE AS "inserted" FOR EACH STATEMENT EXECUTE FUNCTION "notification_inserted"();
