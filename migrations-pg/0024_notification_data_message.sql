-- Mirrors migrations/0037_notification_data_message.sql: a data SMS's payload and port (JSON as text).
ALTER TABLE "notification" ADD COLUMN "data_message" text;
