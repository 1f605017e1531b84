-- verdict_item_review: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 0610a43dbf4358ec22666f8f68d10982
CREATE OR REPLACE FUNCTION public.verdict_item_review(p_item bigint)
 RETURNS json
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
    SELECT json_build_object(
        'question', (SELECT q.reason FROM audit q
                     WHERE q.item_id = p_item AND q.id < r.id AND q.cause = 'request_review'
                     ORDER BY q.id DESC LIMIT 1),
        'answer', r.reason, 'by', r.actor, 'at', verdict_ts(r.at))
    FROM (SELECT t.id, t.reason, t.actor, t.at FROM audit t
          WHERE t.item_id = p_item AND t.cause = 'review' AND t.to_state = 'available'
          ORDER BY t.id DESC LIMIT 1) r
    WHERE NOT EXISTS (SELECT 1 FROM audit x
                      WHERE x.item_id = p_item AND x.id > r.id
                        AND x.cause NOT IN ('claim', 'lease_expired', 'release', 'admin_release'))
    $function$
;
