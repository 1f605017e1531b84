-- verdict_limit_take: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 695eb9833537f0e99c65b339f2c361af
CREATE OR REPLACE FUNCTION public.verdict_limit_take(p_keys text[], p_est bigint)
 RETURNS bigint[]
 LANGUAGE plpgsql
AS $function$
DECLARE
    r record;
    cells bigint[] := '{}';
BEGIN
    -- one row per (key, kind of limit it has), and 'x' for a throttled key (never a cell);
    -- one statement for all the keys of the item
    FOR r IN SELECT x.id FROM limits l
               CROSS JOIN LATERAL (VALUES ('c'::"char"), ('r'), ('t'), ('x')) k(kind)
               LEFT JOIN LATERAL (SELECT c.id FROM limit_cells c
                     WHERE c.key = l.key AND c.kind = k.kind
                       AND CASE k.kind WHEN 'c' THEN NOT c.held AND c.n < l.concurrency
                                       WHEN 'r' THEN c.free_at <= now()
                                       ELSE verdict_shard_fits(c, l.tokens_per_minute, p_est) END
                     LIMIT 1 FOR UPDATE SKIP LOCKED) x ON true
              WHERE l.key = ANY (p_keys)
                AND CASE k.kind WHEN 'c' THEN l.concurrency IS NOT NULL
                                WHEN 'r' THEN l.rate_count IS NOT NULL
                                WHEN 't' THEN l.tokens_per_minute IS NOT NULL
                                ELSE coalesce(l.throttled_until > now(), false) END LOOP
        IF r.id IS NULL THEN
            RETURN NULL;
        END IF;
        cells := cells || r.id;
    END LOOP;
    RETURN cells;
END $function$
;
