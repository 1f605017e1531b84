-- verdict_identity_digest: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: b5b6ee07a7477a9e56194a718f2925e6
CREATE OR REPLACE FUNCTION public.verdict_identity_digest(p_identifier text)
 RETURNS bytea
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE STRICT
AS $function$ SELECT sha256(convert_to(p_identifier, 'UTF8')) $function$
;
