-- review_one: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 text
-- $3 text
-- $4 text
WITH cur AS (SELECT id, state FROM items WHERE id = $1 FOR UPDATE), u AS (  UPDATE items i SET state = verdict_transition(cur.state, 'review_' || $2::text),    available_at = CASE WHEN $2 = 'available' THEN now() ELSE i.available_at END,    last_reason_code = 'review_answered', last_reason = $3, updated_at = now()  FROM cur JOIN item_sources s ON s.id = cur.id  WHERE i.id = cur.id AND cur.state = 'manual_review'  RETURNING i.id, i.flow_step_id, i.state, verdict_item_json(i, s) AS item), t AS (  INSERT INTO transitions AS tr (item_id, from_state, to_state, cause, reason_code,                                 reason, actor)  SELECT u.id, 'manual_review', u.state, 'review', 'review_answered', $3, $4 FROM u  RETURNING verdict_transition_json(tr) AS tj) SELECT cur.state, (SELECT json_build_object('item', u.item, 'transition', t.tj)::text                    FROM u, t),(SELECT string_agg(an.n || ' ' || an.flow_step_id, E'\n') FROM (SELECT count(*) AS n, flow_step_id FROM u WHERE state = 'available' GROUP BY flow_step_id) an) FROM cur
