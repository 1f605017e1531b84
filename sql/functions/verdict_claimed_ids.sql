-- verdict_claimed_ids: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 7cb1792995af3ad1589eea3fcc0bcf3b
CREATE OR REPLACE FUNCTION public.verdict_claimed_ids(p_claims text)
 RETURNS text
 LANGUAGE plpgsql
 IMMUTABLE PARALLEL SAFE STRICT
AS $function$
BEGIN
    RETURN '[' || coalesce((SELECT string_agg(e->>'job_id', ',' ORDER BY k)
                            FROM json_array_elements(p_claims::json->'claims')
                                 WITH ORDINALITY AS c(e, k)), '') || ']';
END $function$
;
