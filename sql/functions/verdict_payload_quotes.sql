-- verdict_payload_quotes: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: ad1529c28089ab6b26d40f75c8ee04bc
CREATE OR REPLACE FUNCTION public.verdict_payload_quotes(p_payload jsonb, p_evidence text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ SELECT coalesce(btrim(regexp_replace(p_evidence, '\s+', ' ', 'g')) <> ''
        AND EXISTS (
            SELECT 1 FROM jsonb_path_query(p_payload, 'strict $.**') v
            WHERE jsonb_typeof(v) = 'string'
              AND strpos(regexp_replace(v #>> '{}', '\s+', ' ', 'g'),
                         btrim(regexp_replace(p_evidence, '\s+', ' ', 'g'))) > 0), false) $function$
;
