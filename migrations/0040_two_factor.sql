CREATE TABLE `dashboard_account_policy` (
	`account_id` integer PRIMARY KEY NOT NULL,
	`two_factor_required` integer DEFAULT false NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `account`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `dashboard_recovery_code` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`code_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`used_at` integer,
	FOREIGN KEY (`user_id`) REFERENCES `dashboard_user`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `dashboard_recovery_code_user_idx` ON `dashboard_recovery_code` (`user_id`);--> statement-breakpoint
ALTER TABLE `dashboard_user` ADD `totp_secret` text;--> statement-breakpoint
ALTER TABLE `dashboard_user` ADD `totp_pending` text;--> statement-breakpoint
ALTER TABLE `dashboard_user` ADD `totp_last_step` integer;--> statement-breakpoint
ALTER TABLE `dashboard_user` ADD `totp_enabled_at` integer;