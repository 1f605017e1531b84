-- 0044_limit_lanes: a limit key's room is a few LANES, one row each carrying its share of
-- every kind the key sets, instead of one cell row per slot, per burst token and per token
-- shard (docs/decisions/0092-limit-lanes.md).
--
-- A key with settings has `limits.lanes` = L active lanes: 8, fewer when a setting is smaller
-- (L = max(1, least(8, concurrency, burst, tokens_per_minute)), so that every lane's share of
-- every kind is at least 1; concurrency 0 has one lane of 0 slots). Lane n's share of a total
-- T is T / L, plus one for the first T mod L lanes: the shares sum to T. A lane holds
--   concurrency: `slots` (its share) and `holders`, the ids of the jobs holding its slots
--     (a holder counts until its job is visibly no longer 'processing'; pruned on take);
--   rate: `burst` (its share of the burst), `pace` (L * per / count: its share of the rate)
--     and `tat`, the theoretical arrival time of a GCRA: k tokens pass when
--     max(tat, now) + k * pace <= now + burst * pace, and then tat = max(tat, now) + k * pace;
--   tokens per minute: `tokens` (its share), `minute`, `reserved`, `used`, `used_total`, as
--     the token shards kept them (usage settles on the lane a job names in jobs.limit_cells).
-- Lanes numbered L and above are retired (a PUT lowered L): claims never take them, their
-- holders were dealt to the active lanes, and they keep their token counters so that jobs
-- naming them still settle there. The table is new (limit_cells is dropped): its rows share
-- no column but the key with the cells', and a new name says what a row is.

ALTER TABLE limits ADD COLUMN lanes integer NOT NULL DEFAULT 0 CHECK (lanes BETWEEN 0 AND 8);

CREATE TABLE limit_lanes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key        text NOT NULL REFERENCES limits (key) ON DELETE CASCADE,
    n          integer NOT NULL CHECK (n BETWEEN 0 AND 7),
    slots      integer,
    burst      integer,
    pace       interval,
    tokens     bigint,
    used_total bigint NOT NULL DEFAULT 0,
    used       bigint NOT NULL DEFAULT 0,
    minute     timestamptz,
    reserved   bigint NOT NULL DEFAULT 0,
    tat        timestamptz NOT NULL DEFAULT '-infinity',
    holders    bigint[] NOT NULL DEFAULT '{}',
    UNIQUE (key, n)
) WITH (fillfactor = 50);
-- What a claim writes comes last (reserved, tat, the holders array): the WAL record of an
-- update on the same page logs only the bytes between the unchanged prefix and suffix.
-- No index on an updated column: every write of a lane stays a HOT update.

-- Lane n's share of total over lanes lanes (NULL when the total is not set).
CREATE FUNCTION verdict_lane_share(total bigint, lanes integer, n integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT total / lanes + CASE WHEN n < total % lanes THEN 1 ELSE 0 END $$;

-- The lanes' arithmetic, which the claim, the readers and PUT share (created here: the
-- first two take a lane row).
-- The holders of a lane that still hold a slot: every job not visibly finished (a job whose
-- claim or end this snapshot does not see counts as holding: errs only towards full).
CREATE FUNCTION verdict_lane_alive(h bigint[])
 RETURNS bigint[]
 LANGUAGE plpgsql
 STABLE PARALLEL SAFE
AS $function$
BEGIN
    RETURN ARRAY(SELECT x FROM unnest(h) x WHERE NOT EXISTS (SELECT 1 FROM jobs j
                  WHERE j.id = x AND j.status <> 'processing'));
END $function$;

-- How many claims (up to want, or more) lane c can take now, each reserving est tokens: the
-- least over the kinds it carries. Concurrency: its free slots (the holders are looked up
-- only when the array itself has no room for want). Rate: the GCRA tokens left of its burst.
-- Tokens: the estimates that fit its share of the minute (an empty lane passes one estimate
-- larger than its share, never starving it). Inlined (VOLATILE: the clock).
CREATE FUNCTION verdict_lane_units(c limit_lanes, want bigint, est bigint)
 RETURNS bigint
 LANGUAGE sql
AS $function$ SELECT least(
    CASE WHEN c.slots IS NULL THEN NULL
         WHEN cardinality(c.holders) + want <= c.slots THEN want
         ELSE greatest(0, c.slots - cardinality(verdict_lane_alive(c.holders))) END,
    CASE WHEN c.burst IS NULL THEN NULL
         ELSE least(c.burst, greatest(0, floor((extract(epoch FROM c.burst * c.pace)
             - extract(epoch FROM greatest(c.tat, clock_timestamp()) - clock_timestamp()))
             / extract(epoch FROM c.pace)))) END::bigint,
    CASE WHEN c.tokens IS NULL THEN NULL
         WHEN c.minute IS DISTINCT FROM date_trunc('minute', now()) OR c.reserved = 0
         THEN CASE WHEN coalesce(est, 0) = 0 THEN want ELSE greatest(1, c.tokens / est) END
         WHEN c.reserved >= c.tokens THEN 0
         WHEN coalesce(est, 0) = 0 THEN want
         ELSE (c.tokens - c.reserved) / est END) $function$;

-- Lane c's holders after jobs take slots on it: appended; the finished ones are pruned first
-- when the array would pass the lane's share or 32 ids (so it stays short and a take looks
-- its holders up only now and then). Inlined.
CREATE FUNCTION verdict_lane_hold(c limit_lanes, jobs bigint[])
 RETURNS bigint[]
 LANGUAGE sql
 STABLE
AS $function$ SELECT CASE WHEN c.slots IS NULL THEN c.holders
              WHEN cardinality(c.holders) + cardinality(jobs) <= least(c.slots, 32)
              THEN c.holders || jobs
              ELSE verdict_lane_alive(c.holders) || jobs END $function$;

-- the old cells stay still while their room moves over
LOCK TABLE limit_cells IN EXCLUSIVE MODE;

UPDATE limits SET lanes = CASE WHEN concurrency IS NULL AND rate_count IS NULL
                                    AND tokens_per_minute IS NULL THEN 0
                               ELSE greatest(1, least(8, concurrency, rate_burst,
                                                      tokens_per_minute)) END;

-- the active lanes, and (for a token window) all 8, so that shard n's minute moves to lane n
INSERT INTO limit_lanes (key, n, slots, burst, pace, tat, tokens, minute, reserved, used,
                         used_total)
SELECT l.key, g, CASE WHEN g < l.lanes THEN verdict_lane_share(l.concurrency, l.lanes, g) END,
       CASE WHEN g < l.lanes THEN verdict_lane_share(l.rate_burst, l.lanes, g) END,
       CASE WHEN g < l.lanes THEN l.lanes * verdict_limit_interval(l) END,
       -- the rate tokens in use now, spread evenly: every lane owes U / L of its share
       CASE WHEN r.busy > 0 THEN now() + r.busy * verdict_limit_interval(l)
            ELSE '-infinity' END,
       CASE WHEN g < l.lanes THEN verdict_lane_share(l.tokens_per_minute, l.lanes, g) END,
       s.minute, coalesce(s.reserved, 0), coalesce(s.used, 0), coalesce(s.used_total, 0)
  FROM limits l
 CROSS JOIN LATERAL generate_series(0, CASE WHEN l.tokens_per_minute IS NOT NULL THEN 7
                                            ELSE l.lanes - 1 END) g
 CROSS JOIN LATERAL (SELECT count(*) AS busy FROM limit_cells c
                      WHERE c.key = l.key AND c.kind = 'r' AND c.free_at > now()) r
  LEFT JOIN limit_cells s ON s.key = l.key AND s.kind = 't' AND s.n = g
 WHERE l.lanes > 0;

-- the slots held now: every job not visibly finished, dealt round-robin over the lanes
UPDATE limit_lanes x SET holders = h.ids
  FROM (SELECT d.key, d.lane, array_agg(d.job_id ORDER BY d.job_id) AS ids
          FROM (SELECT c.key, c.job_id,
                       (row_number() OVER (PARTITION BY c.key ORDER BY c.job_id) - 1)
                       % l.lanes AS lane
                  FROM limit_cells c JOIN limits l ON l.key = c.key
                 WHERE c.kind = 'c' AND c.job_id IS NOT NULL AND l.concurrency IS NOT NULL
                   AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.job_id
                                    AND j.status <> 'processing')) d
         GROUP BY d.key, d.lane) h
 WHERE x.key = h.key AND x.n = h.lane;

-- a live job names the lanes its usage settles on: shard (key, n) is now lane (key, n)
UPDATE jobs j SET limit_cells = ARRAY(SELECT x.id FROM unnest(j.limit_cells) s(id)
                                        JOIN limit_cells c ON c.id = s.id
                                        JOIN limit_lanes x ON x.key = c.key AND x.n = c.n)
 WHERE j.status = 'processing' AND cardinality(j.limit_cells) > 0;

DROP FUNCTION verdict_shard_fits(limit_cells, bigint, bigint);
DROP TABLE limit_cells;
