CREATE TABLE `mobile_code` (
	`code` text PRIMARY KEY NOT NULL,
	`workspace_id` integer NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `phone_event` (
	`id` text PRIMARY KEY NOT NULL,
	`device_id` integer NOT NULL,
	`event` text NOT NULL,
	`received_at` integer NOT NULL,
	FOREIGN KEY (`device_id`) REFERENCES `device`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `phone_event_received_idx` ON `phone_event` (`received_at`);--> statement-breakpoint
CREATE TABLE `thread` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`channel` text NOT NULL,
	`device_id` integer DEFAULT 0 NOT NULL,
	`peer` text NOT NULL,
	`peer_name` text,
	`contact_id` integer,
	`last_message_at` integer NOT NULL,
	`last_message_preview` text DEFAULT '' NOT NULL,
	`last_direction` text NOT NULL,
	`unread_count` integer DEFAULT 0 NOT NULL,
	`last_inbound_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`contact_id`) REFERENCES `contact`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `thread_peer_uq` ON `thread` (`workspace_id`,`channel`,`device_id`,`peer`);--> statement-breakpoint
CREATE INDEX `thread_workspace_last_idx` ON `thread` (`workspace_id`,`last_message_at`);--> statement-breakpoint
CREATE TABLE `thread_message` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`thread_id` integer NOT NULL,
	`direction` text NOT NULL,
	`body` text NOT NULL,
	`notification_id` integer,
	`device_id` integer,
	`external_id` text,
	`at` integer NOT NULL,
	FOREIGN KEY (`thread_id`) REFERENCES `thread`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`notification_id`) REFERENCES `notification`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `thread_message_thread_idx` ON `thread_message` (`thread_id`,`at`);--> statement-breakpoint
CREATE UNIQUE INDEX `thread_message_external_uq` ON `thread_message` (`thread_id`,`external_id`);--> statement-breakpoint
ALTER TABLE `device` ADD `send_interval_min` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `device` ADD `send_interval_max` integer DEFAULT 5 NOT NULL;--> statement-breakpoint
ALTER TABLE `device` ADD `push_token` text;--> statement-breakpoint
ALTER TABLE `device` ADD `sim_cards` text;--> statement-breakpoint
ALTER TABLE `device` ADD `webhook_key` text;--> statement-breakpoint
ALTER TABLE `device` ADD `app_version` text;--> statement-breakpoint
ALTER TABLE `notification` ADD `cancel_pending` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `workspace` ADD `mobile_login` text;--> statement-breakpoint
ALTER TABLE `workspace` ADD `mobile_password_hash` text;--> statement-breakpoint
CREATE UNIQUE INDEX `workspace_mobile_login_unique` ON `workspace` (`mobile_login`);