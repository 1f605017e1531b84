-- verdict_keys_union: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: c62c6f91295559aa2bb9909ef5865817
CREATE OR REPLACE FUNCTION public.verdict_keys_union(a text[], b text[])
 RETURNS text[]
 LANGUAGE plpgsql
 IMMUTABLE PARALLEL SAFE
AS $function$
BEGIN
    IF b IS NULL THEN
        RETURN a;
    ELSIF a IS NULL THEN
        RETURN b;
    END IF;
    RETURN (SELECT array_agg(DISTINCT k ORDER BY k) FROM unnest(a || b) k);
END $function$
;
