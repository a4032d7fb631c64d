-- A message the channel delivered once (its id) is stored once; a send's own thread messages have
-- no such id and stay out of the unique index, one index fewer written per send (as migrations/0035).
DROP INDEX IF EXISTS "thread_message_external_uq";
CREATE UNIQUE INDEX "thread_message_external_uq" ON "thread_message" ("thread_id", "external_id") WHERE "external_id" IS NOT NULL;
