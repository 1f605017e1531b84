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
        'in_flight', (SELECT count(*) FROM limit_cells c
                      JOIN jobs j ON j.id = c.job_id
                      WHERE c.key = l.key AND c.kind = 'c' AND j.status = 'processing'),
        'rate_available', CASE WHEN l.rate_count IS NOT NULL THEN (SELECT count(*)
            FROM limit_cells c WHERE c.key = l.key AND c.kind = 'r' AND c.free_at <= now()) END,
        'tokens_reserved', (SELECT coalesce(sum(c.reserved), 0) FROM limit_cells c
            WHERE c.key = l.key AND c.kind = 't' AND c.minute = date_trunc('minute', now())),
        'tokens_used', (SELECT coalesce(sum(c.used), 0) FROM limit_cells c
            WHERE c.key = l.key AND c.kind = 't' AND c.minute = date_trunc('minute', now())),
        'tokens_used_total', (SELECT coalesce(sum(c.used_total), 0) FROM limit_cells c
            WHERE c.key = l.key AND c.kind = 't'),
        'throttled', coalesce(l.throttled_until > now(), false),
        'throttled_until', CASE WHEN l.throttled_until > now()
                                THEN verdict_ts(l.throttled_until) END,
        'throttle_reason', CASE WHEN l.throttled_until > now() THEN l.throttle_reason END,
        'backoff_streak', l.backoff_streak, 'backoffs_total', l.backoffs_total,
        'open', NOT verdict_limit_closed(l, 0),
        'updated_at', verdict_ts(l.updated_at)) $function$
;
