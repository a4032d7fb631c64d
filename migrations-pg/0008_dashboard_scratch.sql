-- Follows SQLite's migration 0024: a dashboard session's next-page message and bulk drafts, where
-- every server can read them.
CREATE TABLE "dashboard_scratch" (
	"id" text PRIMARY KEY NOT NULL,
	"session_id" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"body" text NOT NULL
);
--> statement-breakpoint
CREATE INDEX "dashboard_scratch_expires_idx" ON "dashboard_scratch" ("expires_at");
