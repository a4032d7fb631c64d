DROP INDEX `webhook_delivery_subscription_idx`;--> statement-breakpoint
ALTER TABLE `webhook_delivery` ADD `seq` integer;--> statement-breakpoint
UPDATE `webhook_delivery` SET `seq` = rowid;--> statement-breakpoint
CREATE INDEX `webhook_delivery_subscription_idx` ON `webhook_delivery` (`subscription_id`,`created_at`,`seq`);