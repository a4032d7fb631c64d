-- Follows SQLite's migration 0018: an event's insertion order within a millisecond (seq).
ALTER TABLE "event" ADD "seq" bigint;
