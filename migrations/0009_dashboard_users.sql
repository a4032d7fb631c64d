CREATE TABLE `dashboard_session` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`token_hash` text NOT NULL,
	`workspace_id` integer NOT NULL,
	`created_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	`user_agent` text,
	`ended_at` integer,
	FOREIGN KEY (`user_id`) REFERENCES `dashboard_user`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `dashboard_session_token_hash_unique` ON `dashboard_session` (`token_hash`);--> statement-breakpoint
CREATE INDEX `dashboard_session_user_idx` ON `dashboard_session` (`user_id`);--> statement-breakpoint
CREATE TABLE `dashboard_setup` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account_id` integer NOT NULL,
	`token_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `account`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `dashboard_setup_token_hash_unique` ON `dashboard_setup` (`token_hash`);--> statement-breakpoint
CREATE TABLE `dashboard_user` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account_id` integer NOT NULL,
	`email` text NOT NULL,
	`password_hash` text NOT NULL,
	`role` text DEFAULT 'member' NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `account`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `dashboard_user_email_unique` ON `dashboard_user` (`email`);--> statement-breakpoint
CREATE INDEX `dashboard_user_account_idx` ON `dashboard_user` (`account_id`);