CREATE TABLE `notification_hourly` (
	`workspace_id` integer NOT NULL,
	`status` text NOT NULL,
	`hour` integer NOT NULL,
	`delivery_type` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`workspace_id`, `status`, `hour`, `delivery_type`)
);
--> statement-breakpoint
CREATE TRIGGER `notification_hourly_insert` AFTER INSERT ON `notification` BEGIN
  INSERT INTO `notification_hourly` (`workspace_id`, `status`, `hour`, `delivery_type`, `n`)
  VALUES (new.`workspace_id`, new.`status`, new.`created_at` / 3600000, new.`delivery_type`, 1)
  ON CONFLICT (`workspace_id`, `status`, `hour`, `delivery_type`) DO UPDATE SET `n` = `n` + 1;
END;--> statement-breakpoint
CREATE TRIGGER `notification_hourly_update` AFTER UPDATE OF `status`, `delivery_type`, `workspace_id`, `created_at` ON `notification`
WHEN old.`status` IS NOT new.`status` OR old.`delivery_type` IS NOT new.`delivery_type` OR old.`workspace_id` IS NOT new.`workspace_id` OR old.`created_at` IS NOT new.`created_at` BEGIN
  UPDATE `notification_hourly` SET `n` = `n` - 1
  WHERE `workspace_id` = old.`workspace_id` AND `status` = old.`status` AND `hour` = old.`created_at` / 3600000 AND `delivery_type` = old.`delivery_type`;
  INSERT INTO `notification_hourly` (`workspace_id`, `status`, `hour`, `delivery_type`, `n`)
  VALUES (new.`workspace_id`, new.`status`, new.`created_at` / 3600000, new.`delivery_type`, 1)
  ON CONFLICT (`workspace_id`, `status`, `hour`, `delivery_type`) DO UPDATE SET `n` = `n` + 1;
END;--> statement-breakpoint
CREATE TRIGGER `notification_hourly_delete` AFTER DELETE ON `notification` BEGIN
  UPDATE `notification_hourly` SET `n` = `n` - 1
  WHERE `workspace_id` = old.`workspace_id` AND `status` = old.`status` AND `hour` = old.`created_at` / 3600000 AND `delivery_type` = old.`delivery_type`;
END;--> statement-breakpoint
INSERT INTO `notification_hourly` (`workspace_id`, `status`, `hour`, `delivery_type`, `n`)
SELECT `workspace_id`, `status`, `created_at` / 3600000, `delivery_type`, count(*) FROM `notification` GROUP BY 1, 2, 3, 4;
