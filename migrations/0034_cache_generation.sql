-- The number a server reads to know whether what it keeps in memory is still current, as on
-- PostgreSQL (migrations-pg/0011_cache_generation.sql, 0015_pools.sql): the caller a key stands for
-- (key, workspace, account, plan), a workspace's safety settings, opt-outs and pools, its devices.
-- Every change to one of those rows adds one to it in the change's own transaction, whichever
-- process makes it (the server, or the CLI beside it), so the server's next request reads the new
-- number and drops what it kept. The hot columns every send or phone contact writes (a key's and a
-- device's last use) are left out. SQLite's triggers run once a row, so a statement that changes
-- many rows adds as many: only the change matters, not how much.
CREATE TRIGGER `plan_cache_changed_insert` AFTER INSERT ON `plan` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `plan_cache_changed_update` AFTER UPDATE ON `plan` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `plan_cache_changed_delete` AFTER DELETE ON `plan` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `account_cache_changed_insert` AFTER INSERT ON `account` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `account_cache_changed_update` AFTER UPDATE ON `account` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `account_cache_changed_delete` AFTER DELETE ON `account` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `workspace_cache_changed_insert` AFTER INSERT ON `workspace` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `workspace_cache_changed_update` AFTER UPDATE OF `id`, `account_id`, `name`, `pairing_token`, `mobile_login`, `mobile_password_hash`, `created_at` ON `workspace` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `workspace_cache_changed_delete` AFTER DELETE ON `workspace` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `api_key_cache_changed_insert` AFTER INSERT ON `api_key` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `api_key_cache_changed_update` AFTER UPDATE OF `id`, `workspace_id`, `name`, `key`, `secret_hash`, `secret_hint`, `status`, `created_at`, `rotated_at` ON `api_key` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `api_key_cache_changed_delete` AFTER DELETE ON `api_key` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `workspace_setting_cache_changed_insert` AFTER INSERT ON `workspace_setting` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `workspace_setting_cache_changed_update` AFTER UPDATE ON `workspace_setting` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `workspace_setting_cache_changed_delete` AFTER DELETE ON `workspace_setting` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `suppression_cache_changed_insert` AFTER INSERT ON `suppression` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `suppression_cache_changed_update` AFTER UPDATE ON `suppression` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `suppression_cache_changed_delete` AFTER DELETE ON `suppression` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `device_cache_changed_insert` AFTER INSERT ON `device` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `device_cache_changed_update` AFTER UPDATE OF `id`, `workspace_id`, `name`, `kind`, `status`, `external_id`, `token_hash`, `phone_number`, `config`, `send_limit_per_minute`, `send_interval_min`, `send_interval_max`, `user_settings`, `push_token`, `sim_cards`, `webhook_key`, `presence`, `health`, `unhealthy_reasons`, `blocked_code`, `blocked_reason`, `blocked_at`, `created_at`, `updated_at`, `deleted_at` ON `device` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `device_cache_changed_delete` AFTER DELETE ON `device` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `pool_cache_changed_insert` AFTER INSERT ON `pool` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `pool_cache_changed_update` AFTER UPDATE ON `pool` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;--> statement-breakpoint
CREATE TRIGGER `pool_cache_changed_delete` AFTER DELETE ON `pool` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;
