-- verdict_limit_json: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 35d07b36da4d8f2a0813a4b619768f04
CREATE OR REPLACE FUNCTION public.verdict_limit_json(l limits)
 RETURNS json
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT json_build_object(
        'key', l.key, 'concurrency', l.concurrency,
        'rate', CASE WHEN l.rate_count IS NOT NULL THEN json_build_object(
            'per', CASE l.rate_per_seconds WHEN 1 THEN 'second' WHEN 60 THEN 'minute'
                   ELSE 'hour' END,
            'count', l.rate_count, 'burst', l.rate_burst) END,
        'tokens_per_minute', l.tokens_per_minute,
        'in_flight', (SELECT count(*) FROM limit_lanes c CROSS JOIN LATERAL unnest(c.holders) h
                      JOIN jobs j ON j.id = h
                      WHERE c.key = l.key AND j.status = 'processing'),
        -- the GCRA tokens of the active lanes that a claim could take now
        'rate_available', CASE WHEN l.rate_count IS NOT NULL THEN (SELECT coalesce(sum(
            least(c.burst, greatest(0, floor((extract(epoch FROM c.burst * c.pace)
                - extract(epoch FROM greatest(c.tat, now()) - now()))
                / extract(epoch FROM c.pace))))), 0)::bigint
            FROM limit_lanes c WHERE c.key = l.key AND c.n < l.lanes AND c.burst IS NOT NULL) END,
        'tokens_reserved', (SELECT coalesce(sum(c.reserved), 0) FROM limit_lanes c
            WHERE c.key = l.key AND c.minute = date_trunc('minute', now())),
        'tokens_used', (SELECT coalesce(sum(c.used), 0) FROM limit_lanes c
            WHERE c.key = l.key AND c.minute = date_trunc('minute', now())),
        'tokens_used_total', (SELECT coalesce(sum(c.used_total), 0) FROM limit_lanes c
            WHERE c.key = l.key),
        'throttled', coalesce(l.throttled_until > now(), false),
        'throttled_until', CASE WHEN l.throttled_until > now()
                                THEN verdict_ts(l.throttled_until) END,
        'throttle_reason', CASE WHEN l.throttled_until > now() THEN l.throttle_reason END,
        'backoff_streak', l.backoff_streak, 'backoffs_total', l.backoffs_total,
        'open', NOT verdict_limit_closed(l, 0),
        'updated_at', verdict_ts(l.updated_at)) $function$
;
