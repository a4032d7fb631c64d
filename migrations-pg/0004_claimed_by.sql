-- Follows SQLite's migration 0020: which server's attempt holds a dispatching notification or a
-- delivering webhook delivery.
ALTER TABLE "notification" ADD "claimed_by" text;
--> statement-breakpoint
ALTER TABLE "webhook_delivery" ADD "claimed_by" text;
