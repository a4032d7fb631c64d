-- Follows SQLite's migration 0019: the key's fingerprint and the periodic tasks' leases.
CREATE TABLE "instance_setting" (
	"name" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "lease" (
	"name" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"expires_at" bigint NOT NULL
);
