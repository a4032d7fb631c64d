CREATE TABLE `status_backlog` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`device_id` integer NOT NULL,
	`external_id` text NOT NULL,
	`payload` text NOT NULL,
	`received_at` integer NOT NULL,
	FOREIGN KEY (`device_id`) REFERENCES `device`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `status_backlog_external_idx` ON `status_backlog` (`external_id`,`device_id`);