-- Follows SQLite's migration 0045: which mail a send came from (for the delivery status
-- notification owed to its sender), and per workspace whether those and failure forwards are on.
CREATE TABLE "email_origin" (
  "notification_id" bigint PRIMARY KEY,
  "workspace_id" bigint NOT NULL,
  "mail_from" text NOT NULL,
  "subject" text NOT NULL,
  "created_at" bigint NOT NULL
);
ALTER TABLE "email_origin" ADD CONSTRAINT "email_origin_workspace_id_workspace_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id");
ALTER TABLE "email_setting" ADD COLUMN "dsn" bigint DEFAULT 0 NOT NULL;
ALTER TABLE "email_setting" ADD COLUMN "forward_failures" bigint DEFAULT 0 NOT NULL;
