CREATE TABLE `thread_pending` (
	`notification_id` integer PRIMARY KEY NOT NULL
);
