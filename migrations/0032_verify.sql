CREATE TABLE `verification` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`service_id` integer NOT NULL,
	`workspace_id` integer NOT NULL,
	`recipient` text NOT NULL,
	`channel` text NOT NULL,
	`code` text NOT NULL,
	`status` text NOT NULL,
	`checks` integer DEFAULT 0 NOT NULL,
	`expires_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`service_id`) REFERENCES `verify_service`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `verification_service_recipient_idx` ON `verification` (`service_id`,`recipient`,`created_at`);--> statement-breakpoint
CREATE TABLE `verification_send` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`verification_id` integer NOT NULL,
	`service_id` integer NOT NULL,
	`recipient` text NOT NULL,
	`prefix` text NOT NULL,
	`channel` text NOT NULL,
	`notification_id` integer,
	`at` integer NOT NULL,
	FOREIGN KEY (`verification_id`) REFERENCES `verification`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `verification_send_recipient_idx` ON `verification_send` (`service_id`,`recipient`,`at`);--> statement-breakpoint
CREATE INDEX `verification_send_prefix_idx` ON `verification_send` (`service_id`,`prefix`,`at`);--> statement-breakpoint
CREATE INDEX `verification_send_notification_idx` ON `verification_send` (`notification_id`);--> statement-breakpoint
CREATE TABLE `verify_service` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`name` text NOT NULL,
	`code_length` integer DEFAULT 6 NOT NULL,
	`ttl_seconds` integer DEFAULT 600 NOT NULL,
	`pool_id` integer,
	`chatapp_template_id` integer,
	`per_number_limit` integer DEFAULT 5 NOT NULL,
	`prefix_hourly_budget` integer DEFAULT 100 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `verify_service_workspace_idx` ON `verify_service` (`workspace_id`);