-- Follows SQLite's migration 0022. The hourly counts' triggers append +1/-1 rows to
-- notification_hourly_delta instead of upserting the hour's one row in notification_hourly, which
-- every concurrent send of a workspace would otherwise wait on; the leader folds the deltas in.
CREATE TABLE "notification_hourly_delta" (
	"workspace_id" bigint NOT NULL,
	"status" text NOT NULL,
	"hour" bigint NOT NULL,
	"delivery_type" text NOT NULL,
	"n" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "notification_hourly_delta_workspace_hour_idx" ON "notification_hourly_delta" ("workspace_id", "hour");
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "notification_hourly_count"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    INSERT INTO "notification_hourly_delta" ("workspace_id", "status", "hour", "delivery_type", "n")
    VALUES (OLD."workspace_id", OLD."status", OLD."created_at" / 3600000, OLD."delivery_type", -1);
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO "notification_hourly_delta" ("workspace_id", "status", "hour", "delivery_type", "n")
    VALUES (NEW."workspace_id", NEW."status", NEW."created_at" / 3600000, NEW."delivery_type", 1);
  END IF;
  RETURN NULL;
END
$$;
