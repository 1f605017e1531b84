-- requeue_one: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 boolean
-- $3 text
-- $4 text
WITH cur AS (SELECT id, state FROM items WHERE id = $1 FOR UPDATE), u AS (  UPDATE items i SET state = verdict_transition(cur.state, 'requeue'),    available_at = now(),    failures = CASE WHEN $2 THEN 0 ELSE i.failures END,    defers = CASE WHEN $2 THEN 0 ELSE i.defers END,    last_reason_code = 'requeue', last_reason = $3, updated_at = now()  FROM cur JOIN item_sources s ON s.id = cur.id  WHERE i.id = cur.id AND cur.state <> 'claimed'  RETURNING i.id, i.flow_step_id, verdict_item_json(i, s) AS item), t AS (  INSERT INTO transitions (item_id, from_state, to_state, cause, reason_code, reason,                           actor)  SELECT u.id, cur.state, verdict_transition(cur.state, 'requeue'), 'requeue',         'requeue', $3, $4  FROM u JOIN cur ON cur.id = u.id) SELECT cur.state, (SELECT json_build_object('item', u.item)::text FROM u),(SELECT string_agg(an.n || ' ' || an.flow_step_id, E'\n') FROM (SELECT count(*) AS n, flow_step_id FROM u  GROUP BY flow_step_id) an) FROM cur
