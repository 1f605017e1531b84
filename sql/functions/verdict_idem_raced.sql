-- verdict_idem_raced: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: none
-- claim_many with Idempotency-Keys: true, or, when p_raced (a new key of the statement was
-- stored by a concurrent request after the statement's snapshot, so its stored answer cannot be
-- read in it), a serialization failure: the whole statement rolls back and runs again, and then
-- reads that key's stored answer.
CREATE OR REPLACE FUNCTION public.verdict_idem_raced(p_raced boolean)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF p_raced THEN
        RAISE EXCEPTION 'an Idempotency-Key of the coalesced claims was stored concurrently'
            USING ERRCODE = 'serialization_failure';
    END IF;
    RETURN true;
END
$function$
;
