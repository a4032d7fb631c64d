CREATE TABLE `erasure_log` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`at` integer NOT NULL,
	`actor` text NOT NULL,
	`counts` text NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `erasure_log_workspace_idx` ON `erasure_log` (`workspace_id`,`id`);--> statement-breakpoint
CREATE TABLE `notification_pruned_hourly` (
	`workspace_id` integer NOT NULL,
	`status` text NOT NULL,
	`hour` integer NOT NULL,
	`delivery_type` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`workspace_id`, `status`, `hour`, `delivery_type`)
);
--> statement-breakpoint
CREATE INDEX `thread_message_notification_idx` ON `thread_message` (`notification_id`) WHERE notification_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX `webhook_delivery_event_idx` ON `webhook_delivery` (`event_id`);