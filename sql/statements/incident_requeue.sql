-- incident_requeue: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 text
-- $3 text
-- $4 boolean
WITH inc AS (SELECT * FROM tool_incidents WHERE id = $1), cand AS (  SELECT x.item_id AS id FROM tool_incident_items x WHERE x.incident_id = $1  UNION SELECT tr.item_id FROM audit tr JOIN items it ON it.id = tr.item_id,   inc WHERE it.flow_step_id = inc.flow_step_id AND tr.to_state = 'rejected'     AND tr.at >= inc.opened_at AND tr.logged_at >= inc.opened_at), cur AS (SELECT i.id, i.state FROM items i         WHERE $4 AND i.id IN (SELECT id FROM cand)           AND i.state IN ('deferred', 'failed', 'manual_review', 'rejected')         ORDER BY i.id FOR UPDATE), u AS (  UPDATE items i SET state = verdict_transition(cur.state, 'requeue'),    available_at = now(),    last_reason_code = 'requeue', last_reason = $2, updated_at = now()  FROM cur WHERE i.id = cur.id RETURNING i.id, i.flow_step_id), t AS (  INSERT INTO transitions (item_id, from_state, to_state, cause, reason_code, reason,                           actor)  SELECT cur.id, cur.state, verdict_transition(cur.state, 'requeue'), 'requeue',         'requeue', $2, $3 FROM cur) SELECT json_build_object('tool_incident', verdict_tool_incident_json(inc),  'requeued', (SELECT coalesce(json_agg(id ORDER BY id), '[]'::json) FROM u))::text,(SELECT string_agg(an.n || ' ' || an.flow_step_id, E'\n') FROM (SELECT count(*) AS n, flow_step_id FROM u  GROUP BY flow_step_id) an) FROM inc
