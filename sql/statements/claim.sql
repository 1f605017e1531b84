-- claim: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 text
-- $2 text
-- $3 bigint
-- $4 double precision
-- $5 text
-- $6 text
WITH cand AS (  SELECT id, state, attempts FROM items  WHERE flow_step_id = $1 AND state IN ('available', 'deferred')    AND available_at <= now()    AND NOT EXISTS (SELECT 1 FROM flow_steps f WHERE f.flow_step_id = $1 AND f.paused)  ORDER BY priority DESC, available_at, id  LIMIT $3 FOR UPDATE SKIP LOCKED), j AS (  INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, claim_token,                    lease_expires_at, worker_version, lease_seconds)  SELECT c.id, $1, $2, c.attempts + 1, gen_random_uuid(),         now() + $4 * interval '1 second', $6, $4::integer FROM cand c  RETURNING id, item_id, claim_token, attempt, lease_expires_at), u AS (  UPDATE items i SET state = 'claimed', attempts = j.attempt,    claim_token = j.claim_token, current_job_id = j.id,    lease_expires_at = j.lease_expires_at, updated_at = now()  FROM j JOIN item_sources s ON s.id = j.item_id  WHERE i.id = j.item_id AND i.id = ANY (ARRAY(SELECT item_id FROM j))  RETURNING i.id, i.priority, i.available_at, verdict_item_json(i, s) AS item), t AS (  INSERT INTO transitions (item_id, job_id, from_state, to_state, job_status, cause,                           actor)  SELECT c.id, j.id, c.state, 'claimed', 'processing', 'claim', $5  FROM cand c JOIN j ON j.item_id = c.id) SELECT json_build_object('claims', coalesce(json_agg(json_build_object(   'job_id', j.id, 'claim_token', j.claim_token, 'attempt', j.attempt,   'lease_expires_at', verdict_ts(j.lease_expires_at), 'item', u.item,   'previous_checkpoint', (SELECT p.checkpoint FROM jobs p WHERE p.item_id = u.id     AND p.id < j.id AND p.checkpoint IS NOT NULL ORDER BY p.id DESC LIMIT 1))   ORDER BY u.priority DESC, u.available_at, u.id), '[]'::json))::text FROM u JOIN j ON j.item_id = u.id
