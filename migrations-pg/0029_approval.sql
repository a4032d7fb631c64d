-- Follows SQLite's migration 0042: approval before a send. A key that needs approval; on a
-- notification the agent session that sent it, the sender's reason, and the approval decision; and
-- the partial index over what awaits approval (the list and the expiry task).
ALTER TABLE "api_key" ADD COLUMN "needs_approval" bigint DEFAULT 0 NOT NULL;
ALTER TABLE "notification" ADD COLUMN "agent_session" text;
ALTER TABLE "notification" ADD COLUMN "approval_reason" text;
ALTER TABLE "notification" ADD COLUMN "approved_at" bigint;
ALTER TABLE "notification" ADD COLUMN "rejected_at" bigint;
ALTER TABLE "notification" ADD COLUMN "decided_by" text;
CREATE INDEX "notification_awaiting_idx" ON "notification" ("created_at") WHERE status = 'awaiting_approval';
-- A key's needs_approval is part of what a server keeps of it: a change bumps the cache generation.
DROP TRIGGER IF EXISTS "api_key_cache_changed" ON "api_key";
CREATE TRIGGER "api_key_cache_changed"
AFTER INSERT OR DELETE OR UPDATE OF "id", "workspace_id", "name", "key", "secret_hash", "secret_hint", "status", "created_at", "rotated_at",
  "scopes", "recipients", "daily_cap", "expires_at", "needs_approval" ON "api_key"
FOR EACH ROW EXECUTE FUNCTION "pigeon_cache_changed"();
