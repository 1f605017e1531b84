-- verdict_limit_backoff: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 719aee45ea12d9c2d145a7c4b40c2f4b
CREATE OR REPLACE FUNCTION public.verdict_limit_backoff(p_key text, p_after integer, p_reason text, p_cap integer)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
DECLARE
    l limits;
BEGIN
    INSERT INTO limits AS x (key) VALUES (p_key) ON CONFLICT (key) DO NOTHING;
    SELECT * INTO l FROM limits WHERE key = p_key FOR UPDATE;
    IF coalesce(l.throttled_until > now(), false) THEN
        UPDATE limits SET throttled_until = greatest(throttled_until,
                              now() + least(p_after, p_cap) * interval '1 second'),
                          throttle_reason = coalesce(p_reason, throttle_reason),
                          backoffs_total = backoffs_total + 1, updated_at = now()
         WHERE key = p_key RETURNING * INTO l;
    ELSE
        l.backoff_streak := CASE WHEN l.throttled_until > now() - interval '5 minutes'
                                 THEN l.backoff_streak + 1 ELSE 1 END;
        UPDATE limits SET backoff_streak = l.backoff_streak,
                          throttled_until = now() + least(p_cap::numeric,
                              p_after * power(2::numeric, least(l.backoff_streak - 1, 30)))
                              * interval '1 second',
                          throttle_reason = p_reason, waiting_at = now(),
                          backoffs_total = backoffs_total + 1, updated_at = now()
         WHERE key = p_key RETURNING * INTO l;
    END IF;
    RETURN json_build_object('limit', verdict_limit_json(l))::text;
END $function$
;
