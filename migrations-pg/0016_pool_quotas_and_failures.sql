-- Follows SQLite's migration 0028: carrier-plan caps per pool member, and what each member sent per
-- UTC day and month, with the distinct recipients of each month; and a member's carrier failures in a
-- row, with the pause (and its back-off) they lead to.
CREATE TABLE "pool_recipient" (
  "member_id" bigint NOT NULL,
  "month" text NOT NULL,
  "recipient" text NOT NULL,
  PRIMARY KEY ("member_id", "month", "recipient")
);
CREATE TABLE "pool_usage" (
  "member_id" bigint NOT NULL,
  "period" text NOT NULL,
  "messages" bigint NOT NULL,
  "segments" bigint NOT NULL,
  PRIMARY KEY ("member_id", "period")
);
ALTER TABLE "pool_member" ADD "daily_limit" bigint;
ALTER TABLE "pool_member" ADD "monthly_limit" bigint;
ALTER TABLE "pool_member" ADD "count_segments" bigint DEFAULT 0 NOT NULL;
ALTER TABLE "pool_member" ADD "monthly_unique_recipients" bigint;
ALTER TABLE "pool" ADD "failure_threshold" bigint DEFAULT 3 NOT NULL;
ALTER TABLE "pool" ADD "failure_backoff_seconds" bigint DEFAULT 900 NOT NULL;
ALTER TABLE "pool_member" ADD "consecutive_failures" bigint DEFAULT 0 NOT NULL;
ALTER TABLE "pool_member" ADD "paused_until" bigint;
ALTER TABLE "pool_member" ADD "backoff_seconds" bigint;
