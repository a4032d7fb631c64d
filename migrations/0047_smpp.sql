CREATE TABLE `smpp_credential` (
	`workspace_id` integer PRIMARY KEY NOT NULL,
	`system_id` text NOT NULL,
	`password` text NOT NULL,
	`key_id` integer,
	`key_secret` text,
	`incoming` integer DEFAULT true NOT NULL,
	`created_at` integer NOT NULL,
	`rotated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`key_id`) REFERENCES `api_key`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `smpp_credential_system_id_unique` ON `smpp_credential` (`system_id`);--> statement-breakpoint
CREATE TABLE `smpp_origin` (
	`notification_id` integer PRIMARY KEY NOT NULL,
	`workspace_id` integer NOT NULL,
	`system_id` text NOT NULL,
	`registered_delivery` integer NOT NULL,
	`parts` integer NOT NULL,
	`addresses` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `smpp_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`system_id` text NOT NULL,
	`kind` text NOT NULL,
	`dedupe_key` text NOT NULL,
	`body` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_at` integer NOT NULL,
	`claimed_by` text,
	`claimed_until` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `smpp_outbox_dedupe_key_unique` ON `smpp_outbox` (`dedupe_key`);--> statement-breakpoint
CREATE INDEX `smpp_outbox_due_idx` ON `smpp_outbox` (`system_id`,`next_at`);