CREATE TABLE `rate_counter` (
	`bucket` text NOT NULL,
	`slot` integer NOT NULL,
	`n` integer NOT NULL,
	`expires_at` integer NOT NULL,
	PRIMARY KEY(`bucket`, `slot`)
);
--> statement-breakpoint
CREATE INDEX `rate_counter_expires_idx` ON `rate_counter` (`expires_at`);