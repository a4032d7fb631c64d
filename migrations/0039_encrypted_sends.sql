ALTER TABLE `device` ADD `encryption_passphrase` text;--> statement-breakpoint
ALTER TABLE `notification` ADD `encrypted` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `workspace_setting` ADD `encrypted_sends` integer;