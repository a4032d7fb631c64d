-- Follows SQLite's migration 0039: end-to-end encrypted sends. A notification marked encrypted (its
-- recipient and message are the app's ciphertext), the workspace's switch that allows them (null:
-- off) and a paired phone's sealed passphrase, when the user pushes one to it.
ALTER TABLE "device" ADD COLUMN "encryption_passphrase" text;
ALTER TABLE "notification" ADD COLUMN "encrypted" bigint DEFAULT 0 NOT NULL;
ALTER TABLE "workspace_setting" ADD COLUMN "encrypted_sends" bigint;
