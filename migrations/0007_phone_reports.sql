-- Issue 11 (what the phone reports): a paired phone's last reported health and its unhealthy episode,
-- and the MMS headers and attachment metadata an inbound thread message may carry.
ALTER TABLE `device` ADD `health` text;--> statement-breakpoint
ALTER TABLE `device` ADD `unhealthy_reasons` text;--> statement-breakpoint
ALTER TABLE `thread_message` ADD `meta` text;