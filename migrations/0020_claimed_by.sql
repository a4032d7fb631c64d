ALTER TABLE `notification` ADD `claimed_by` text;--> statement-breakpoint
ALTER TABLE `webhook_delivery` ADD `claimed_by` text;