CREATE TABLE `pool_recipient` (
	`member_id` integer NOT NULL,
	`month` text NOT NULL,
	`recipient` text NOT NULL,
	PRIMARY KEY(`member_id`, `month`, `recipient`)
);
--> statement-breakpoint
CREATE TABLE `pool_usage` (
	`member_id` integer NOT NULL,
	`period` text NOT NULL,
	`messages` integer NOT NULL,
	`segments` integer NOT NULL,
	PRIMARY KEY(`member_id`, `period`)
);
--> statement-breakpoint
ALTER TABLE `pool` ADD `failure_threshold` integer DEFAULT 3 NOT NULL;--> statement-breakpoint
ALTER TABLE `pool` ADD `failure_backoff_seconds` integer DEFAULT 900 NOT NULL;--> statement-breakpoint
ALTER TABLE `pool_member` ADD `daily_limit` integer;--> statement-breakpoint
ALTER TABLE `pool_member` ADD `monthly_limit` integer;--> statement-breakpoint
ALTER TABLE `pool_member` ADD `count_segments` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `pool_member` ADD `monthly_unique_recipients` integer;--> statement-breakpoint
ALTER TABLE `pool_member` ADD `consecutive_failures` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `pool_member` ADD `paused_until` integer;--> statement-breakpoint
ALTER TABLE `pool_member` ADD `backoff_seconds` integer;