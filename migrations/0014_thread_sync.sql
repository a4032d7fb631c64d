CREATE TABLE `thread_sync` (
	`id` integer PRIMARY KEY NOT NULL,
	`notification_id` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `thread_sync` (`id`, `notification_id`) SELECT 1, coalesce(max(`id`), 0) FROM `notification`;
