-- A number every server reads to know whether what it keeps in memory is still current: the
-- caller a key stands for (key, workspace, account, plan), a workspace's safety settings and
-- opt-outs, its devices. Any statement that changes one of those rows adds one to it, in the same
-- transaction, so a server that reads the number sees the change too once it reads the new value
-- (a key disabled through one server is refused by every other from its next request on). The
-- hot columns every send or phone contact writes (a workspace's credit balance, a key's and a
-- device's last use) are left out, so they do not touch the number. The row is made by the first
-- change; until then the number is 0. A row trigger, so a statement that changes no row leaves the
-- number alone; it adds one once a transaction (a transaction-local setting remembers it, and a
-- savepoint rolled back forgets it with its change), so a transaction that changes many rows
-- holds the number's row once.
CREATE FUNCTION "pigeon_cache_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('pigeon.cache_changed', true) IS DISTINCT FROM '1' THEN
    INSERT INTO "instance_setting" ("name", "value") VALUES ('cache_generation', '1')
    ON CONFLICT ("name") DO UPDATE SET "value" = ("instance_setting"."value"::bigint + 1)::text;
    PERFORM set_config('pigeon.cache_changed', '1', true);
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "plan_cache_changed" AFTER INSERT OR UPDATE OR DELETE ON "plan"
FOR EACH ROW EXECUTE FUNCTION "pigeon_cache_changed"();
--> statement-breakpoint
CREATE TRIGGER "account_cache_changed" AFTER INSERT OR UPDATE OR DELETE ON "account"
FOR EACH ROW EXECUTE FUNCTION "pigeon_cache_changed"();
--> statement-breakpoint
CREATE TRIGGER "workspace_cache_changed"
AFTER INSERT OR DELETE OR UPDATE OF "id", "account_id", "name", "pairing_token", "mobile_login", "mobile_password_hash", "created_at" ON "workspace"
FOR EACH ROW EXECUTE FUNCTION "pigeon_cache_changed"();
--> statement-breakpoint
CREATE TRIGGER "api_key_cache_changed"
AFTER INSERT OR DELETE OR UPDATE OF "id", "workspace_id", "name", "key", "secret_hash", "secret_hint", "status", "created_at", "rotated_at" ON "api_key"
FOR EACH ROW EXECUTE FUNCTION "pigeon_cache_changed"();
--> statement-breakpoint
CREATE TRIGGER "workspace_setting_cache_changed" AFTER INSERT OR UPDATE OR DELETE ON "workspace_setting"
FOR EACH ROW EXECUTE FUNCTION "pigeon_cache_changed"();
--> statement-breakpoint
CREATE TRIGGER "suppression_cache_changed" AFTER INSERT OR UPDATE OR DELETE ON "suppression"
FOR EACH ROW EXECUTE FUNCTION "pigeon_cache_changed"();
--> statement-breakpoint
CREATE TRIGGER "device_cache_changed"
AFTER INSERT OR DELETE OR UPDATE OF "id", "workspace_id", "name", "kind", "status", "external_id", "token_hash", "phone_number", "config",
  "send_limit_per_minute", "send_interval_min", "send_interval_max", "user_settings", "push_token", "sim_cards", "webhook_key", "presence",
  "health", "unhealthy_reasons", "blocked_code", "blocked_reason", "blocked_at", "created_at", "updated_at", "deleted_at" ON "device"
FOR EACH ROW EXECUTE FUNCTION "pigeon_cache_changed"();
