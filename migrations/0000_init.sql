CREATE TABLE `account` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`plan_id` integer NOT NULL,
	`status` text DEFAULT 'active' NOT NULL,
	`is_owner` integer DEFAULT false NOT NULL,
	`sms_length_cap` integer DEFAULT 1600 NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`plan_id`) REFERENCES `plan`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `api_key` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`name` text NOT NULL,
	`key` text NOT NULL,
	`secret_hash` text NOT NULL,
	`secret_hint` text NOT NULL,
	`status` text DEFAULT 'active' NOT NULL,
	`created_at` integer NOT NULL,
	`rotated_at` integer,
	`last_used_at` integer,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_key_key_unique` ON `api_key` (`key`);--> statement-breakpoint
CREATE INDEX `api_key_workspace_idx` ON `api_key` (`workspace_id`);--> statement-breakpoint
CREATE TABLE `contact` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`name` text NOT NULL,
	`phone` text NOT NULL,
	`email` text,
	`type_id` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`type_id`) REFERENCES `contact_type`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `contact_workspace_phone_uq` ON `contact` (`workspace_id`,`phone`);--> statement-breakpoint
CREATE INDEX `contact_workspace_name_idx` ON `contact` (`workspace_id`,`name`);--> statement-breakpoint
CREATE TABLE `contact_type` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`code` text NOT NULL,
	`name` text NOT NULL,
	`description` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `contact_type_code_unique` ON `contact_type` (`code`);--> statement-breakpoint
CREATE TABLE `credit_ledger` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`delta` integer NOT NULL,
	`reason` text NOT NULL,
	`notification_id` integer,
	`note` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`notification_id`) REFERENCES `notification`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `credit_ledger_workspace_idx` ON `credit_ledger` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `credit_ledger_notification_idx` ON `credit_ledger` (`notification_id`);--> statement-breakpoint
CREATE TABLE `device` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`status` text DEFAULT 'active' NOT NULL,
	`external_id` text NOT NULL,
	`token_hash` text,
	`phone_number` text,
	`config` text,
	`send_limit_per_minute` integer DEFAULT 60 NOT NULL,
	`blocked_code` text,
	`blocked_reason` text,
	`blocked_at` integer,
	`last_seen_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`deleted_at` integer,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `device_external_id_unique` ON `device` (`external_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `device_token_hash_unique` ON `device` (`token_hash`);--> statement-breakpoint
CREATE INDEX `device_workspace_idx` ON `device` (`workspace_id`,`deleted_at`,`status`);--> statement-breakpoint
CREATE TABLE `idempotency_record` (
	`workspace_id` integer NOT NULL,
	`key` text NOT NULL,
	`route` text NOT NULL,
	`request_hash` text NOT NULL,
	`response_status` integer NOT NULL,
	`response_body` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`workspace_id`, `key`),
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `idempotency_created_idx` ON `idempotency_record` (`created_at`);--> statement-breakpoint
CREATE TABLE `notification` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`api_key_id` integer,
	`delivery_type` text NOT NULL,
	`route` text NOT NULL,
	`device_id` integer,
	`recipient` text NOT NULL,
	`recipient_name` text,
	`template_id` integer,
	`template_vars` text,
	`message` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`stage` text DEFAULT 'queued' NOT NULL,
	`schedule_at` integer,
	`timezone` text,
	`next_attempt_at` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`needs_reconcile` integer DEFAULT false NOT NULL,
	`segments` integer DEFAULT 1 NOT NULL,
	`cost` integer DEFAULT 0 NOT NULL,
	`external_id` text,
	`error_code` text,
	`error_reason` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`dispatched_at` integer,
	`sent_at` integer,
	`delivered_at` integer,
	`failed_at` integer,
	`cancelled_at` integer,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`api_key_id`) REFERENCES `api_key`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`device_id`) REFERENCES `device`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`template_id`) REFERENCES `template`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `notification_workspace_created_idx` ON `notification` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `notification_workspace_status_idx` ON `notification` (`workspace_id`,`status`,`created_at`);--> statement-breakpoint
CREATE INDEX `notification_device_status_idx` ON `notification` (`device_id`,`status`);--> statement-breakpoint
CREATE INDEX `notification_device_dispatched_idx` ON `notification` (`device_id`,`dispatched_at`);--> statement-breakpoint
CREATE INDEX `notification_due_idx` ON `notification` (`stage`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `notification_external_idx` ON `notification` (`external_id`);--> statement-breakpoint
CREATE TABLE `notification_log` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`notification_id` integer NOT NULL,
	`at` integer NOT NULL,
	`event` text NOT NULL,
	`status` text,
	`error_code` text,
	`detail` text,
	FOREIGN KEY (`notification_id`) REFERENCES `notification`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `notification_log_notification_idx` ON `notification_log` (`notification_id`);--> statement-breakpoint
CREATE TABLE `plan` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`code` text NOT NULL,
	`name` text NOT NULL,
	`requests_per_minute` integer DEFAULT 60 NOT NULL,
	`requests_per_day` integer DEFAULT 10000 NOT NULL,
	`monthly_sms_limit` integer,
	`allow_urls` integer DEFAULT true NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `plan_code_unique` ON `plan` (`code`);--> statement-breakpoint
CREATE TABLE `template` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`guid` text NOT NULL,
	`workspace_id` integer,
	`account_id` integer,
	`code` text NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`body` text NOT NULL,
	`channel` text NOT NULL,
	`is_system` integer DEFAULT 0 NOT NULL,
	`status` text DEFAULT 'active' NOT NULL,
	`variables` text NOT NULL,
	`language` text,
	`category` text,
	`external_id` text,
	`business_account_id` text,
	`components` text,
	`status_reason` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`deleted_at` integer,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`account_id`) REFERENCES `account`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `template_guid_unique` ON `template` (`guid`);--> statement-breakpoint
CREATE INDEX `template_workspace_idx` ON `template` (`workspace_id`,`channel`);--> statement-breakpoint
CREATE UNIQUE INDEX `template_workspace_code_uq` ON `template` (`workspace_id`,`code`) WHERE "template"."deleted_at" IS NULL;--> statement-breakpoint
CREATE TABLE `workspace` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account_id` integer NOT NULL,
	`name` text NOT NULL,
	`credit_balance` integer DEFAULT 0 NOT NULL,
	`pairing_token` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `account`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workspace_pairing_token_unique` ON `workspace` (`pairing_token`);