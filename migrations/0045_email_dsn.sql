CREATE TABLE `email_origin` (
	`notification_id` integer PRIMARY KEY NOT NULL,
	`workspace_id` integer NOT NULL,
	`mail_from` text NOT NULL,
	`subject` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `email_setting` ADD `dsn` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `email_setting` ADD `forward_failures` integer DEFAULT false NOT NULL;