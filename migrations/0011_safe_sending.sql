CREATE TABLE `opt_out_event` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`phone` text NOT NULL,
	`action` text NOT NULL,
	`source` text NOT NULL,
	`reason` text,
	`thread_message_id` integer,
	`channel` text,
	`device_id` integer,
	`at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `opt_out_event_workspace_idx` ON `opt_out_event` (`workspace_id`,`id`);--> statement-breakpoint
CREATE INDEX `opt_out_event_phone_idx` ON `opt_out_event` (`workspace_id`,`phone`,`id`);--> statement-breakpoint
CREATE TABLE `suppression` (
	`workspace_id` integer NOT NULL,
	`phone` text NOT NULL,
	`opted_out_at` integer NOT NULL,
	`source` text NOT NULL,
	`reason` text,
	PRIMARY KEY(`workspace_id`, `phone`),
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `workspace_setting` (
	`workspace_id` integer PRIMARY KEY NOT NULL,
	`quiet_start` text,
	`quiet_end` text,
	`opt_out_keywords` text,
	`opt_in_keywords` text,
	`help_keywords` text,
	`opt_out_reply` text,
	`opt_in_reply` text,
	`help_reply` text,
	`default_routes` text,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `contact` ADD `timezone` text;--> statement-breakpoint
ALTER TABLE `notification` ADD `routes` text;--> statement-breakpoint
ALTER TABLE `notification` ADD `fallback` text;