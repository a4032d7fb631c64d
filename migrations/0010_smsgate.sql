CREATE TABLE `smsgate_message` (
	`row_id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`id` text NOT NULL,
	`device_id` integer,
	`is_encrypted` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`device_id`) REFERENCES `device`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `smsgate_message_workspace_id_uq` ON `smsgate_message` (`workspace_id`,`id`);--> statement-breakpoint
CREATE INDEX `smsgate_message_workspace_created_idx` ON `smsgate_message` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `smsgate_recipient` (
	`message_row_id` integer NOT NULL,
	`position` integer NOT NULL,
	`phone_number` text NOT NULL,
	`notification_id` integer NOT NULL,
	PRIMARY KEY(`message_row_id`, `position`),
	FOREIGN KEY (`message_row_id`) REFERENCES `smsgate_message`(`row_id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`notification_id`) REFERENCES `notification`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `smsgate_recipient_notification_uq` ON `smsgate_recipient` (`notification_id`);--> statement-breakpoint
CREATE TABLE `smsgate_setting` (
	`workspace_id` integer PRIMARY KEY NOT NULL,
	`signing_key` text NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `smsgate_token` (
	`jti` text PRIMARY KEY NOT NULL,
	`workspace_id` integer NOT NULL,
	`api_key_id` integer NOT NULL,
	`kind` text NOT NULL,
	`access_jti` text NOT NULL,
	`scopes` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`revoked_at` integer,
	`used_at` integer,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`api_key_id`) REFERENCES `api_key`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `smsgate_token_access_idx` ON `smsgate_token` (`access_jti`);--> statement-breakpoint
ALTER TABLE `webhook_subscription` ADD `format` text DEFAULT 'pigeon' NOT NULL;--> statement-breakpoint
ALTER TABLE `webhook_subscription` ADD `external_id` text;--> statement-breakpoint
ALTER TABLE `webhook_subscription` ADD `smsgate_event` text;--> statement-breakpoint
ALTER TABLE `webhook_subscription` ADD `smsgate_device_id` integer;--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_subscription_external_uq` ON `webhook_subscription` (`workspace_id`,`external_id`) WHERE external_id IS NOT NULL AND deleted_at IS NULL;