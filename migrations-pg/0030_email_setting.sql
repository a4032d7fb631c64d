-- Follows SQLite's migration 0043: the email bridge's settings per workspace (docs/email.md).
CREATE TABLE "email_setting" (
  "workspace_id" bigint PRIMARY KEY,
  "content" text DEFAULT 'body' NOT NULL,
  "default_country" text,
  "secret_hash" text,
  "secret_hint" text,
  "key_id" bigint,
  "key_secret" text,
  "senders" text DEFAULT '[]' NOT NULL,
  "updated_at" bigint NOT NULL
);
CREATE UNIQUE INDEX "email_setting_secret_hash_unique" ON "email_setting" ("secret_hash");
ALTER TABLE "email_setting" ADD CONSTRAINT "email_setting_workspace_id_workspace_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id");
ALTER TABLE "email_setting" ADD CONSTRAINT "email_setting_key_id_api_key_id_fk" FOREIGN KEY ("key_id") REFERENCES "api_key" ("id");
