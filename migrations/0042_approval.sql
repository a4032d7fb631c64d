ALTER TABLE `api_key` ADD `needs_approval` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `notification` ADD `agent_session` text;--> statement-breakpoint
ALTER TABLE `notification` ADD `approval_reason` text;--> statement-breakpoint
ALTER TABLE `notification` ADD `approved_at` integer;--> statement-breakpoint
ALTER TABLE `notification` ADD `rejected_at` integer;--> statement-breakpoint
ALTER TABLE `notification` ADD `decided_by` text;--> statement-breakpoint
CREATE INDEX `notification_awaiting_idx` ON `notification` (`created_at`) WHERE status = 'awaiting_approval';--> statement-breakpoint
DROP TRIGGER IF EXISTS `api_key_cache_changed_update`;--> statement-breakpoint
CREATE TRIGGER `api_key_cache_changed_update` AFTER UPDATE OF `id`, `workspace_id`, `name`, `key`, `secret_hash`, `secret_hint`, `status`, `created_at`, `rotated_at`, `scopes`, `recipients`, `daily_cap`, `expires_at`, `needs_approval` ON `api_key` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;
