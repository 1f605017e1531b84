-- item_release: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 bigint
-- $3 text
-- $4 text
WITH ui AS (  UPDATE items i SET state = verdict_transition(i.state, 'admin_release'),    available_at = now(),    lease_expires_at = NULL, claim_token = NULL, last_reason_code = 'admin_release',    last_reason = $3, updated_at = now()  FROM item_sources s WHERE i.id = $1 AND s.id = $1  RETURNING i.flow_step_id, verdict_item_json(i, s) AS item), uj AS (  UPDATE jobs j SET status = 'released', finished_at = now(),    reason_code = 'admin_release', reason = $3  WHERE j.id = $2 RETURNING verdict_job_json(j) AS job), t AS (  INSERT INTO transitions (item_id, job_id, from_state, to_state, job_status, cause,                           reason_code, reason, actor)  VALUES ($1, $2, 'claimed', verdict_transition('claimed', 'admin_release'), 'released',          'admin_release', 'admin_release', $3, $4)) SELECT json_build_object('job', uj.job, 'item', ui.item)::text,  '1 ' || ui.flow_step_id FROM ui, uj
