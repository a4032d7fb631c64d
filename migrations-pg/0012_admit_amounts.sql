-- pigeon_admit counts an amount in each window instead of a flag: a server that has several
-- requests of one key waiting admits them in one call (src/http/shared-limits.ts), counting as many
-- in the key's minute and day, under one turn of their locks. A window has room for an amount when
-- its count plus the amount stays within its limit; a window only checked (amount 0) has room while
-- its count is below its limit, as before. A flag of 1 is an amount of 1, so callers of migration
-- 0010's form (a server of the previous release during an upgrade) get the same answers.
CREATE OR REPLACE FUNCTION "pigeon_admit"(p_buckets text[], p_slots bigint[], p_since bigint[], p_limits bigint[], p_expires bigint[], p_count integer[])
RETURNS TABLE ("admitted" boolean, "used" bigint[], "oldest" bigint[]) LANGUAGE plpgsql AS $$
DECLARE
  i int;
  b text;
  u bigint;
  o bigint;
BEGIN
  -- As before: counts are not business data, so no lock is held through a flush.
  PERFORM set_config('synchronous_commit', 'off', true);
  admitted := true;
  used := '{}';
  oldest := '{}';
  -- Only the windows counted in are locked, in bucket order.
  FOR b IN SELECT DISTINCT p_buckets[j] FROM generate_subscripts(p_buckets, 1) AS j WHERE p_count[j] > 0 ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock(hashtext('pigeon_admit:' || b));
  END LOOP;
  FOR i IN 1 .. array_length(p_buckets, 1) LOOP
    SELECT coalesce(sum("n"), 0), min("slot") INTO u, o FROM "rate_counter" WHERE "bucket" = p_buckets[i] AND "slot" >= p_since[i];
    used := used || u;
    oldest := oldest || o;
    IF u + greatest(p_count[i], 1) > p_limits[i] THEN
      admitted := false;
    END IF;
  END LOOP;
  IF admitted THEN
    FOR i IN 1 .. array_length(p_buckets, 1) LOOP
      CONTINUE WHEN p_count[i] <= 0;
      INSERT INTO "rate_counter" ("bucket", "slot", "n", "expires_at") VALUES (p_buckets[i], p_slots[i], p_count[i], p_expires[i])
      ON CONFLICT ("bucket", "slot") DO UPDATE SET "n" = "rate_counter"."n" + excluded."n", "expires_at" = greatest("rate_counter"."expires_at", excluded."expires_at");
      used[i] := used[i] + p_count[i];
      IF oldest[i] IS NULL THEN
        oldest[i] := p_slots[i];
      END IF;
    END LOOP;
  END IF;
  RETURN NEXT;
END
$$;
