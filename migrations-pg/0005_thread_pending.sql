-- Follows SQLite's migration 0021: the sends not yet in their threads, queued by a trigger in the
-- transaction that stores each notification, so the catch-up never depends on ids committing in
-- order. Sends past the old cursor are queued now.
CREATE TABLE "thread_pending" (
	"notification_id" bigint PRIMARY KEY NOT NULL
);
--> statement-breakpoint
INSERT INTO "thread_pending" ("notification_id")
SELECT "id" FROM "notification" WHERE "id" > (SELECT "notification_id" FROM "thread_sync" WHERE "id" = 1);
--> statement-breakpoint
CREATE FUNCTION "thread_pending_queue"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "thread_pending" ("notification_id") VALUES (NEW."id");
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "thread_pending_insert" AFTER INSERT ON "notification"
FOR EACH ROW EXECUTE FUNCTION "thread_pending_queue"();
