CREATE TABLE `notification_hourly_delta` (
	`workspace_id` integer NOT NULL,
	`status` text NOT NULL,
	`hour` integer NOT NULL,
	`delivery_type` text NOT NULL,
	`n` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `notification_hourly_delta_workspace_hour_idx` ON `notification_hourly_delta` (`workspace_id`,`hour`);