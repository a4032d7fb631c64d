ALTER TABLE `notification` ADD `sim_number` integer;--> statement-breakpoint
ALTER TABLE `notification` ADD `priority` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `notification` ADD `with_delivery_report` integer DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE `notification` ADD `valid_until` integer;--> statement-breakpoint
CREATE INDEX `notification_valid_until_idx` ON `notification` (`valid_until`) WHERE status = 'pending' AND valid_until IS NOT NULL;