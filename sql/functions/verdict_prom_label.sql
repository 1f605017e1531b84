-- verdict_prom_label: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: c05822560fe0f52793637e1a1bafc17d
CREATE OR REPLACE FUNCTION public.verdict_prom_label(s text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE STRICT
RETURN replace(replace(replace(s, '\'::text, '\\'::text), '"'::text, '\"'::text), '
'::text, '\n'::text)
;
