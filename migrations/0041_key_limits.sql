CREATE TABLE `api_key_day` (
	`key_id` integer NOT NULL,
	`day` integer NOT NULL,
	`sends` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`key_id`, `day`),
	FOREIGN KEY (`key_id`) REFERENCES `api_key`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `api_key` ADD `scopes` text;--> statement-breakpoint
ALTER TABLE `api_key` ADD `recipients` text;--> statement-breakpoint
ALTER TABLE `api_key` ADD `daily_cap` integer;--> statement-breakpoint
ALTER TABLE `api_key` ADD `expires_at` integer;--> statement-breakpoint
DROP TRIGGER `api_key_cache_changed_update`;--> statement-breakpoint
CREATE TRIGGER `api_key_cache_changed_update` AFTER UPDATE OF `id`, `workspace_id`, `name`, `key`, `secret_hash`, `secret_hint`, `status`, `created_at`, `rotated_at`, `scopes`, `recipients`, `daily_cap`, `expires_at` ON `api_key` BEGIN
  INSERT INTO `instance_setting` (`name`, `value`) VALUES ('cache_generation', '1')
  ON CONFLICT (`name`) DO UPDATE SET `value` = CAST(CAST(`value` AS INTEGER) + 1 AS TEXT);
END;
