-- heartbeat: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 uuid
-- $3 bigint
-- $4 jsonb
-- $5 bigint
WITH j AS (SELECT id, item_id, status, claim_token = $2::uuid AS token_ok,             coalesce($3::bigint, lease_seconds, $5::bigint) AS lease_s,             octet_length((coalesce(checkpoint, '{}') || $4::jsonb)::text)               > 131072 AS too_big           FROM jobs WHERE id = $1 FOR NO KEY UPDATE), u AS (  UPDATE items i SET lease_expires_at = now() + j.lease_s * interval '1 second',    updated_at = now()  FROM j WHERE i.id = j.item_id AND j.token_ok AND j.status = 'processing'   AND i.state = 'claimed' AND i.current_job_id = j.id AND i.claim_token = $2::uuid   AND j.too_big IS NOT TRUE  RETURNING i.lease_expires_at), uj AS (UPDATE jobs SET lease_expires_at = u.lease_expires_at,          checkpoint = coalesce(jobs.checkpoint || $4::jsonb, $4::jsonb,                                jobs.checkpoint)        FROM u WHERE jobs.id = $1) SELECT j.status, j.token_ok,  (SELECT json_build_object('lease_expires_at', verdict_ts(u.lease_expires_at))::text   FROM u), j.too_big IS TRUE FROM j
