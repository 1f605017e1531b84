-- verdict_tool_result_std: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: c69ac272652b20fba4b0f4fb6e3c2442
CREATE OR REPLACE FUNCTION public.verdict_tool_result_std(p_disposition text, p_reason_code text, p_to_state text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
RETURN ((((('Recorded: '::text || CASE p_disposition WHEN 'complete'::text THEN 'completed'::text WHEN 'reject_source'::text THEN 'rejected'::text WHEN 'defer_item'::text THEN 'deferred'::text WHEN 'fail'::text THEN 'failed'::text ELSE 'recorded'::text END) || CASE WHEN ((p_reason_code <> ''::text) AND (p_disposition IS DISTINCT FROM 'complete'::text)) THEN ((' ('::text || p_reason_code) || ')'::text) ELSE ''::text END) || '.'::text) || CASE p_to_state WHEN 'processed'::text THEN ' The item is processed.'::text WHEN 'rejected'::text THEN ' The source is closed for good.'::text WHEN 'manual_review'::text THEN ' The item waits for a person''s review.'::text WHEN 'failed'::text THEN ' The item is not retried.'::text ELSE NULL::text END) || ' Stop now.'::text)
;
