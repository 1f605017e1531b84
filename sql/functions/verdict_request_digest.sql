-- verdict_request_digest: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: b657fe1039edfa18555ad50ae30000fe
CREATE OR REPLACE FUNCTION public.verdict_request_digest(r jsonb)
 RETURNS bytea
 LANGUAGE sql
 STABLE PARALLEL SAFE STRICT
RETURN sha256(convert_to((r)::text, 'UTF8'::name))
;
