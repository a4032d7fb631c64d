CREATE TABLE `pool` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` integer NOT NULL,
	`name` text NOT NULL,
	`strategy` text DEFAULT 'sticky' NOT NULL,
	`geomatch` integer DEFAULT false NOT NULL,
	`is_default` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspace`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `pool_workspace_name_uq` ON `pool` (`workspace_id`,`name`);--> statement-breakpoint
CREATE TABLE `pool_member` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`pool_id` integer NOT NULL,
	`device_id` integer NOT NULL,
	`sim_number` integer,
	`number` text,
	`position` integer NOT NULL,
	`paused` integer DEFAULT false NOT NULL,
	FOREIGN KEY (`pool_id`) REFERENCES `pool`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`device_id`) REFERENCES `device`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `pool_member_pool_idx` ON `pool_member` (`pool_id`,`position`);--> statement-breakpoint
CREATE INDEX `pool_member_device_idx` ON `pool_member` (`device_id`);--> statement-breakpoint
CREATE TABLE `pool_sticky` (
	`pool_id` integer NOT NULL,
	`recipient` text NOT NULL,
	`member_id` integer NOT NULL,
	`at` integer NOT NULL,
	PRIMARY KEY(`pool_id`, `recipient`),
	FOREIGN KEY (`pool_id`) REFERENCES `pool`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `pool_sticky_member_idx` ON `pool_sticky` (`member_id`);