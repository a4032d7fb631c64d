CREATE TABLE `email_setting` (
	`workspace_id` integer PRIMARY KEY NOT NULL,
	`content` text DEFAULT 'body' NOT NULL,
	`default_country` text,
	`secret_hash` text,
	`secret_hint` text,
	`key_id` integer,
	`key_secret` text,
	`senders` text DEFAULT '[]' NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`key_id`) REFERENCES `api_key`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `email_setting_secret_hash_unique` ON `email_setting` (`secret_hash`);