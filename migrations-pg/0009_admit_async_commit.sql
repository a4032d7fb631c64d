-- pigeon_admit commits without waiting for the disk: holding a key's bucket lock through every
-- request's flush made one key's requests wait on each other's fsync (about 500 a second).
CREATE OR REPLACE FUNCTION "pigeon_admit"(p_buckets text[], p_slots bigint[], p_since bigint[], p_limits bigint[], p_expires bigint[], p_count boolean)
RETURNS TABLE ("admitted" boolean, "used" bigint[], "oldest" bigint[]) LANGUAGE plpgsql AS $$
DECLARE
  i int;
  b text;
  u bigint;
  o bigint;
BEGIN
  -- Counts are not business data: this transaction's commit need not wait for the disk, so the
  -- bucket's lock is held for the statement only, not for a flush (a crash forgets a few counts).
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
  IF admitted AND p_count THEN
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
