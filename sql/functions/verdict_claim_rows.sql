-- verdict_claim_rows: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: none
-- The coalesced limited claims' requests (claim_many_limited's rows) as a table: each row's
-- flow step, its sorted distinct limit keys and its token estimate, or p_fs, p_keys and p_est
-- where it names none.
CREATE OR REPLACE FUNCTION public.verdict_claim_rows(p_rows jsonb, p_fs text, p_keys text[], p_est bigint)
 RETURNS TABLE(ord integer, fs text, keys text[], est bigint, worker text, version text, lease integer, actor text, trace text, span text)
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
    SELECT x.ord, coalesce(x.fs, p_fs),
           coalesce((SELECT array_agg(DISTINCT e ORDER BY e)
                       FROM jsonb_array_elements_text(x.keys) e), p_keys),
           coalesce(x.est, p_est), x.worker, x.version, x.lease, x.actor, x.trace, x.span
      FROM jsonb_to_recordset(p_rows) AS x(ord integer, fs text, keys jsonb, est bigint,
                                           worker text, version text, lease integer,
                                           actor text, trace text, span text)
$function$
;
