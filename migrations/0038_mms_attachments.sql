CREATE TABLE `thread_attachment` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`thread_message_id` integer NOT NULL,
	`part_id` integer,
	`content_type` text NOT NULL,
	`name` text,
	`size` integer NOT NULL,
	`data` blob NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`thread_message_id`) REFERENCES `thread_message`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `thread_attachment_message_idx` ON `thread_attachment` (`thread_message_id`);--> statement-breakpoint
CREATE INDEX `thread_attachment_workspace_idx` ON `thread_attachment` (`workspace_id`,`created_at`);