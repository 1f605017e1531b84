-- verdict_audit_json: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 115792971740949bc3ccc8e69e281e4e
CREATE OR REPLACE FUNCTION public.verdict_audit_json(t audit)
 RETURNS json
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT json_build_object(
        'id', t.id, 'item_id', t.item_id, 'job_id', t.job_id, 'from_state', t.from_state,
        'to_state', t.to_state, 'job_status', t.job_status, 'cause', t.cause,
        'reason_code', t.reason_code, 'reason', t.reason, 'forced', t.forced,
        'lint_overridden', t.lint_overridden, 'evidence', t.evidence,
        'actor', t.actor, 'at', verdict_ts(t.at)) $function$
;
