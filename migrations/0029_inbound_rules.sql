CREATE TABLE `rule` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`name` text NOT NULL,
	`priority` integer NOT NULL,
	`enabled` integer DEFAULT true NOT NULL,
	`match` text NOT NULL,
	`channels` text,
	`action` text NOT NULL,
	`continue_after` integer DEFAULT false NOT NULL,
	`when_holds` text,
	`reply_window_seconds` integer DEFAULT 600 NOT NULL,
	`webhook_id` integer,
	`matched_count` integer DEFAULT 0 NOT NULL,
	`last_matched_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `rule_workspace_name_uq` ON `rule` (`workspace_id`,`name`);--> statement-breakpoint
CREATE INDEX `rule_workspace_priority_idx` ON `rule` (`workspace_id`,`priority`);--> statement-breakpoint
CREATE TABLE `rule_reply` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`rule_id` integer NOT NULL,
	`sender` text NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `rule_reply_sender_idx` ON `rule_reply` (`workspace_id`,`sender`,`at`);--> statement-breakpoint
ALTER TABLE `contact` ADD `tags` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `workspace_setting` ADD `time_zone` text;