-- Follows SQLite's migration 0023: request limits and sign-in throttles shared by every server.
-- pigeon_admit checks every bucket's count since its own slot against its limit and, when all have
-- room (and p_count is 1), counts one in each, under advisory locks taken in bucket order, so servers
-- admitting at the same moment take turns and never pass a limit together. It answers whether it
-- admitted, each bucket's count (after counting) and its oldest slot in the window.
CREATE TABLE "rate_counter" (
	"bucket" text NOT NULL,
	"slot" bigint NOT NULL,
	"n" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	CONSTRAINT "rate_counter_bucket_slot_pk" PRIMARY KEY("bucket","slot")
);
--> statement-breakpoint
CREATE INDEX "rate_counter_expires_idx" ON "rate_counter" ("expires_at");
--> statement-breakpoint
CREATE FUNCTION "pigeon_admit"(p_buckets text[], p_slots bigint[], p_since bigint[], p_limits bigint[], p_expires bigint[], p_count integer)
RETURNS TABLE ("admitted" boolean, "used" bigint[], "oldest" bigint[]) LANGUAGE plpgsql AS $$
DECLARE
  i int;
  b text;
  u bigint;
  o bigint;
BEGIN
  -- Counts are not business data: this transaction's commit need not wait for the disk, so a
  -- bucket's lock is not held through a flush (a crash may forget the last few counts).
  PERFORM set_config('synchronous_commit', 'off', true);
  admitted := true;
  used := '{}';
  oldest := '{}';
  FOR b IN SELECT DISTINCT x FROM unnest(p_buckets) AS x ORDER BY x LOOP
    PERFORM pg_advisory_xact_lock(hashtext('pigeon_admit:' || b));
  END LOOP;
  FOR i IN 1 .. array_length(p_buckets, 1) LOOP
    SELECT coalesce(sum("n"), 0), min("slot") INTO u, o FROM "rate_counter" WHERE "bucket" = p_buckets[i] AND "slot" >= p_since[i];
    used := used || u;
    oldest := oldest || o;
    IF u >= p_limits[i] THEN
      admitted := false;
    END IF;
  END LOOP;
  IF admitted AND p_count = 1 THEN
    FOR i IN 1 .. array_length(p_buckets, 1) LOOP
      INSERT INTO "rate_counter" ("bucket", "slot", "n", "expires_at") VALUES (p_buckets[i], p_slots[i], 1, p_expires[i])
      ON CONFLICT ("bucket", "slot") DO UPDATE SET "n" = "rate_counter"."n" + 1, "expires_at" = greatest("rate_counter"."expires_at", excluded."expires_at");
      used[i] := used[i] + 1;
      IF oldest[i] IS NULL THEN
        oldest[i] := p_slots[i];
      END IF;
    END LOOP;
  END IF;
  RETURN NEXT;
END
$$;
