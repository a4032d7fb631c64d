DROP INDEX `notification_due_idx`;--> statement-breakpoint
CREATE INDEX `notification_due_route_idx` ON `notification` (`stage`,`route`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `notification_failover_idx` ON `notification` (`next_attempt_at`) WHERE routes IS NOT NULL AND status = 'pending' AND stage = 'queued' AND dispatched_at IS NULL;