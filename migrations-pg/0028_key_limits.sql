-- Follows SQLite's migration 0041: what an API key may do (its scopes), whom it may send to, how
-- many sends a UTC day and until when, and the per-key per-day counter its daily cap is checked
-- against. A change to the new columns changes the cache generation, as the others do.
CREATE TABLE "api_key_day" (
  "key_id" bigint NOT NULL,
  "day" bigint NOT NULL,
  "sends" bigint DEFAULT 0 NOT NULL,
  PRIMARY KEY ("key_id", "day")
);
--> statement-breakpoint
ALTER TABLE "api_key_day" ADD CONSTRAINT "api_key_day_key_id_api_key_id_fk" FOREIGN KEY ("key_id") REFERENCES "api_key" ("id");
--> statement-breakpoint
ALTER TABLE "api_key" ADD COLUMN "scopes" text;
--> statement-breakpoint
ALTER TABLE "api_key" ADD COLUMN "recipients" text;
--> statement-breakpoint
ALTER TABLE "api_key" ADD COLUMN "daily_cap" bigint;
--> statement-breakpoint
ALTER TABLE "api_key" ADD COLUMN "expires_at" bigint;
--> statement-breakpoint
DROP TRIGGER "api_key_cache_changed" ON "api_key";
--> statement-breakpoint
CREATE TRIGGER "api_key_cache_changed"
AFTER INSERT OR DELETE OR UPDATE OF "id", "workspace_id", "name", "key", "secret_hash", "secret_hint", "status", "created_at", "rotated_at",
  "scopes", "recipients", "daily_cap", "expires_at" ON "api_key"
FOR EACH ROW EXECUTE FUNCTION "pigeon_cache_changed"();
