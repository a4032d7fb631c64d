CREATE TABLE `twilio_callback` (
	`notification_id` integer PRIMARY KEY NOT NULL,
	`workspace_id` integer NOT NULL,
	`url` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`notification_id`) REFERENCES `notification`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `twilio_post` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`kind` text NOT NULL,
	`url` text NOT NULL,
	`params` text NOT NULL,
	`peer` text NOT NULL,
	`reply` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_at` integer NOT NULL,
	`claimed_by` text,
	`last_error` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `twilio_post_due_idx` ON `twilio_post` (`next_at`);--> statement-breakpoint
CREATE INDEX `twilio_post_peer_idx` ON `twilio_post` (`workspace_id`,`peer`);--> statement-breakpoint
ALTER TABLE `pool` ADD `incoming_url` text;--> statement-breakpoint
ALTER TABLE `twilio_account` ADD `incoming_url` text;