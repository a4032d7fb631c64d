CREATE TABLE `email_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`dedupe_key` text NOT NULL,
	`recipients` text NOT NULL,
	`subject` text NOT NULL,
	`body` text NOT NULL,
	`reply_to` text,
	`status` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_at` integer NOT NULL,
	`last_error` text,
	`created_at` integer NOT NULL,
	`sent_at` integer,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `email_outbox_dedupe_key_unique` ON `email_outbox` (`dedupe_key`);--> statement-breakpoint
CREATE INDEX `email_outbox_due_idx` ON `email_outbox` (`next_at`) WHERE status = 'pending';--> statement-breakpoint
ALTER TABLE `email_setting` ADD `forward_to` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `email_setting` ADD `reply_domain` text;