ALTER TABLE `notification` ADD `channel_payload` text;--> statement-breakpoint
ALTER TABLE `template` ADD `recheck_at` integer;