-- Follows SQLite's migration 0030: each workspace's Twilio-style account SID and sealed auth token,
-- and the API key calls made with them act as.
CREATE TABLE "twilio_account" (
  "workspace_id" bigint PRIMARY KEY NOT NULL,
  "account_sid" text NOT NULL,
  "auth_token" text NOT NULL,
  "api_key_id" bigint NOT NULL,
  "created_at" bigint NOT NULL,
  "updated_at" bigint NOT NULL
);
CREATE UNIQUE INDEX "twilio_account_account_sid_unique" ON "twilio_account" ("account_sid");
ALTER TABLE "twilio_account" ADD CONSTRAINT "twilio_account_workspace_id_workspace_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id");
ALTER TABLE "twilio_account" ADD CONSTRAINT "twilio_account_api_key_id_api_key_id_fk" FOREIGN KEY ("api_key_id") REFERENCES "api_key" ("id");
