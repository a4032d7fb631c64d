CREATE TABLE `dashboard_scratch` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`body` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `dashboard_scratch_expires_idx` ON `dashboard_scratch` (`expires_at`);