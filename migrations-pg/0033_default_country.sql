-- Follows SQLite's migration 0046: the country a workspace's national numbers are read in.
ALTER TABLE "workspace_setting" ADD COLUMN "default_country" text;
