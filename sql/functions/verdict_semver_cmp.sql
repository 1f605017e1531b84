-- verdict_semver_cmp: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 18bf4e3f4d1d9c077ff4f938ee5cef72
CREATE OR REPLACE FUNCTION public.verdict_semver_cmp(a text, b text)
 RETURNS integer
 LANGUAGE plpgsql
 IMMUTABLE PARALLEL SAFE STRICT
AS $function$
DECLARE
    rx constant text := '^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)'
                        '(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$';
    ma text[] := regexp_match(a, rx);
    mb text[] := regexp_match(b, rx);
    pa text[];
    pb text[];
    x text;
    y text;
BEGIN
    IF ma IS NULL OR mb IS NULL THEN
        RETURN NULL;
    END IF;
    FOR i IN 1..3 LOOP
        IF ma[i]::numeric <> mb[i]::numeric THEN
            RETURN sign(ma[i]::numeric - mb[i]::numeric)::integer;
        END IF;
    END LOOP;
    IF ma[4] IS NULL OR mb[4] IS NULL THEN -- a release is above its pre-releases
        RETURN CASE WHEN ma[4] IS NULL AND mb[4] IS NULL THEN 0
                    WHEN ma[4] IS NULL THEN 1 ELSE -1 END;
    END IF;
    pa := string_to_array(ma[4], '.');
    pb := string_to_array(mb[4], '.');
    FOR i IN 1..least(cardinality(pa), cardinality(pb)) LOOP
        x := pa[i];
        y := pb[i];
        CONTINUE WHEN x = y;
        IF x ~ '^[0-9]+$' AND y ~ '^[0-9]+$' THEN
            RETURN sign(x::numeric - y::numeric)::integer;
        ELSIF x ~ '^[0-9]+$' OR y ~ '^[0-9]+$' THEN
            RETURN CASE WHEN x ~ '^[0-9]+$' THEN -1 ELSE 1 END;
        END IF;
        RETURN CASE WHEN x COLLATE "C" < y COLLATE "C" THEN -1 ELSE 1 END;
    END LOOP;
    RETURN sign(cardinality(pa) - cardinality(pb))::integer;
END $function$
;
