-- What SQLite's migrations 0012 and 0014 add beside the tables: the thread catch-up's cursor row,
-- and the triggers that keep notification_hourly's counts (one per workspace, status, hour and
-- channel) as rows are inserted, change status, or are deleted.
INSERT INTO "thread_sync" ("id", "notification_id") VALUES (1, 0);
--> statement-breakpoint
CREATE FUNCTION "notification_hourly_count"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    UPDATE "notification_hourly" SET "n" = "n" - 1
    WHERE "workspace_id" = OLD."workspace_id" AND "status" = OLD."status" AND "hour" = OLD."created_at" / 3600000
      AND "delivery_type" = OLD."delivery_type";
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO "notification_hourly" ("workspace_id", "status", "hour", "delivery_type", "n")
    VALUES (NEW."workspace_id", NEW."status", NEW."created_at" / 3600000, NEW."delivery_type", 1)
    ON CONFLICT ("workspace_id", "status", "hour", "delivery_type") DO UPDATE SET "n" = "notification_hourly"."n" + 1;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "notification_hourly_insert" AFTER INSERT ON "notification"
FOR EACH ROW EXECUTE FUNCTION "notification_hourly_count"();
--> statement-breakpoint
CREATE TRIGGER "notification_hourly_update" AFTER UPDATE OF "status", "delivery_type", "workspace_id", "created_at" ON "notification"
FOR EACH ROW WHEN (OLD."status" IS DISTINCT FROM NEW."status" OR OLD."delivery_type" IS DISTINCT FROM NEW."delivery_type"
  OR OLD."workspace_id" IS DISTINCT FROM NEW."workspace_id" OR OLD."created_at" IS DISTINCT FROM NEW."created_at")
EXECUTE FUNCTION "notification_hourly_count"();
--> statement-breakpoint
CREATE TRIGGER "notification_hourly_delete" AFTER DELETE ON "notification"
FOR EACH ROW EXECUTE FUNCTION "notification_hourly_count"();
