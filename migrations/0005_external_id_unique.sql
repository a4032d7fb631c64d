-- A provider message belongs to one notification. Databases written before this index may hold
-- two notifications claiming one provider id (the crash-recovery bug it prevents); the oldest keeps it.
UPDATE `notification` SET `external_id` = NULL WHERE `external_id` IS NOT NULL AND `id` NOT IN (SELECT min(`id`) FROM `notification` WHERE `external_id` IS NOT NULL GROUP BY `external_id`);--> statement-breakpoint
DROP INDEX `notification_external_idx`;--> statement-breakpoint
CREATE UNIQUE INDEX `notification_external_unique_idx` ON `notification` (`external_id`) WHERE external_id IS NOT NULL;
