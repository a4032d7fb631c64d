-- pigeon_admit with a count flag for each window instead of one for all: a request checks its
-- address's failed-authentication window (without counting in it) and counts in its key's minute
-- and day, in one call. The one-flag form stays, for servers of the previous release still running
-- beside this one during an upgrade, and now calls this one with its flag for every window.
CREATE FUNCTION "pigeon_admit"(p_buckets text[], p_slots bigint[], p_since bigint[], p_limits bigint[], p_expires bigint[], p_count integer[])
RETURNS TABLE ("admitted" boolean, "used" bigint[], "oldest" bigint[]) LANGUAGE plpgsql AS $$
DECLARE
  i int;
  b text;
  u bigint;
  o bigint;
BEGIN
  -- As in the one-flag form: counts are not business data, so no lock is held through a flush.
  PERFORM set_config('synchronous_commit', 'off', true);
  admitted := true;
  used := '{}';
  oldest := '{}';
  -- Only the windows counted in are locked: a window only checked (an address's failures beside
  -- its key) is read as it stands, so requests from one address do not take turns on it.
  FOR b IN SELECT DISTINCT p_buckets[j] FROM generate_subscripts(p_buckets, 1) AS j WHERE p_count[j] = 1 ORDER BY 1 LOOP
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
  IF admitted THEN
    FOR i IN 1 .. array_length(p_buckets, 1) LOOP
      CONTINUE WHEN p_count[i] <> 1;
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
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "pigeon_admit"(p_buckets text[], p_slots bigint[], p_since bigint[], p_limits bigint[], p_expires bigint[], p_count integer)
RETURNS TABLE ("admitted" boolean, "used" bigint[], "oldest" bigint[]) LANGUAGE sql AS $$
  SELECT * FROM "pigeon_admit"(p_buckets, p_slots, p_since, p_limits, p_expires, array_fill(p_count, ARRAY[array_length(p_buckets, 1)]));
$$;
