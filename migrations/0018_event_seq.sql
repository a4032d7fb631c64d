ALTER TABLE `event` ADD `seq` integer;--> statement-breakpoint
UPDATE `event` SET `seq` = rowid;