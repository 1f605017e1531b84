-- verdict_claim_keys: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: none
-- claim_many's requests with an Idempotency-Key (outside a keyed flow step, whose requests claim
-- alone after it): each one's body hash as idem_claim makes it, the first request of its key in
-- the statement (lead), and how it is answered: 0 it claims (a new key's lead), 1 a replay (the
-- stored answer, response, or the lead's), 2 the key's reuse with another body, 3 a key stored
-- without an answer. Read in the statement's snapshot, one primary-key probe per request (the
-- LIMIT keeps the probe per row: a join would read every key of the route).
CREATE OR REPLACE FUNCTION public.verdict_claim_keys(p_rows jsonb)
 RETURNS TABLE(ord integer, actor text, key text, hash text, lead integer, how integer, response text)
 LANGUAGE sql
 STABLE
AS $function$
    SELECT h.ord, h.actor, h.key, h.hash, h.lead,
           CASE WHEN k.idem_key IS NOT NULL THEN
                  CASE WHEN k.request_hash NOT IN (h.hash, h.raw) THEN 2
                       WHEN k.response IS NULL THEN 3 ELSE 1 END
                WHEN h.ord = h.lead THEN 0
                WHEN h.lead_hash IN (h.hash, h.raw) THEN 1 ELSE 2 END,
           k.response
      FROM (SELECT x.ord, x.actor, x.key, md5(x.body::jsonb::text) AS hash, md5(x.body) AS raw,
                   first_value(x.ord) OVER w AS lead,
                   first_value(md5(x.body::jsonb::text)) OVER w AS lead_hash
              FROM jsonb_to_recordset(p_rows) AS x(ord integer, fs text, actor text, key text,
                                                   body text)
             WHERE x.key IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM flow_steps f WHERE f.flow_step_id = x.fs
                                  AND f.keyed AND NOT f.paused)
            WINDOW w AS (PARTITION BY x.actor, x.key ORDER BY x.ord)) h
      LEFT JOIN LATERAL (SELECT k.idem_key, k.request_hash, k.response FROM idempotency_keys k
                          WHERE k.route = 'claims' AND k.key_name = h.actor
                            AND k.idem_key = h.key
                            AND k.created_at >= now() - interval '24 hours'
                          LIMIT 1) k ON true
$function$
;
