CREATE TABLE `twilio_account` (
	`workspace_id` integer PRIMARY KEY NOT NULL,
	`account_sid` text NOT NULL,
	`auth_token` text NOT NULL,
	`api_key_id` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`api_key_id`) REFERENCES `api_key`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `twilio_account_account_sid_unique` ON `twilio_account` (`account_sid`);