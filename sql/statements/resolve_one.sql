-- resolve_one: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.
-- The text below is byte for byte what verdictd prepares, then one newline.
-- Parameters:
-- $1 bigint
-- $2 text
-- $3 text
-- $4 text
-- $5 text
WITH cur AS (SELECT id, state FROM items WHERE id = $1 FOR UPDATE), u AS (  UPDATE items i SET state = verdict_transition(cur.state, 'resolve_' || $2::text),    last_reason_code = $3, last_reason = $4,    updated_at = now()  FROM cur JOIN item_sources s ON s.id = cur.id  WHERE i.id = cur.id AND cur.state IN ('manual_review', 'failed')  RETURNING i.id, verdict_item_json(i, s) AS item), t AS (  INSERT INTO transitions AS tr (item_id, from_state, to_state, cause, reason_code,                                 reason, actor)  SELECT u.id, cur.state, verdict_transition(cur.state, 'resolve_' || $2::text),         'resolve', $3, $4, $5 FROM u JOIN cur ON cur.id = u.id  RETURNING verdict_transition_json(tr) AS tj) SELECT cur.state, (SELECT json_build_object('item', u.item, 'transition', t.tj)::text                    FROM u, t) FROM cur
