-- 0037_priority_fairness: priority with aging, and fair rotation between the values of an
-- item key (docs/decisions/0093-priority-aging.md, 0094-fair-key-rotation.md).
--
-- Aging. A claim hands out the item of the lowest claim rank first:
--     rank = available_at - priority minutes        (then the lowest id)
-- which orders exactly as "effective priority = priority + minutes waiting since
-- available_at, highest first": a point of priority is worth one minute of waiting. The rank
-- does not depend on the clock, so one index serves it (no sort of the backlog). Priority is
-- bounded (-1000..1000): an item is overtaken by items that became claimable after it only
-- while their priority exceeds its own by more than the minutes between them, so no waiting
-- item is passed by a newer one for more than 2,000 minutes.
--
-- Fairness. A flow step may name a fair key (flow_steps.fair_key, e.g. "site"). An item's
-- fair value is its first limit key (in sorted order) whose name before the first ':' is the
-- fair key ("site:blog-3"), or '' when it has none; it is set at registration (and for the
-- flow step's unfinished items when the fair key is set). fair_values holds one row per
-- (flow step, value) with the time a claim last visited it: the claim with limits goes
-- through the values least recently visited first (locked SKIP LOCKED, so concurrent claims
-- take different values), takes each value's best item by rank, and marks the values it
-- visited (verdict_claim_limited).

UPDATE items SET priority = greatest(-1000, least(1000, priority))
 WHERE priority NOT BETWEEN -1000 AND 1000;
ALTER TABLE items ADD CONSTRAINT items_priority_check CHECK (priority BETWEEN -1000 AND 1000),
                  ADD COLUMN fair_value text;

-- timestamptz - interval is only STABLE in general (a day or month depends on the time
-- zone); minutes alone do not, so this one is IMMUTABLE and may be indexed.
CREATE FUNCTION verdict_claim_rank(available_at timestamptz, priority integer)
    RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT available_at - priority * interval '1 minute' $$;

DROP INDEX items_claimable;
CREATE INDEX items_claimable ON items (flow_step_id, verdict_claim_rank(available_at, priority), id)
    WHERE state IN ('available', 'deferred');
CREATE INDEX items_fair ON items (flow_step_id, fair_value,
                                  verdict_claim_rank(available_at, priority), id)
    WHERE state IN ('available', 'deferred') AND fair_value IS NOT NULL;

ALTER TABLE flow_steps ADD COLUMN fair_key text CHECK (fair_key ~ '^[A-Za-z0-9._@-]{1,100}$');

-- Small: one row per value (sites, tenants), written by the claims that visit it (HOT: no
-- index on visited_at).
CREATE TABLE fair_values (
    flow_step_id text NOT NULL,
    value        text NOT NULL,
    visited_at   timestamptz NOT NULL DEFAULT '-infinity',
    PRIMARY KEY (flow_step_id, value)
) WITH (fillfactor = 50);

-- An item's fair value under fair key k (NULL when k is NULL).
CREATE FUNCTION verdict_fair_value(keys text[], k text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN k IS NOT NULL THEN coalesce((SELECT min(x) FROM unnest(keys) x
                                                         WHERE split_part(x, ':', 1) = k), '')
                 END $$;

-- PATCH /v1/flow-steps/{id} {"fair_key"}: p_key the new fair key (NULL: none). When it
-- changes (the flow step is made when unknown), every item of the flow step gets its fair value again and fair_values is made
-- anew from them (an item requeued later finds its value there). Set it before registering.
CREATE FUNCTION verdict_fair_key_set(p_fs text, p_key text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    AS $$
BEGIN
    INSERT INTO flow_steps (flow_step_id) VALUES (p_fs) ON CONFLICT DO NOTHING;
    UPDATE flow_steps SET fair_key = p_key, updated_at = now()
     WHERE flow_step_id = p_fs AND fair_key IS DISTINCT FROM p_key;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    UPDATE items SET fair_value = verdict_fair_value(limit_keys, p_key)
     WHERE flow_step_id = p_fs AND fair_value IS DISTINCT FROM verdict_fair_value(limit_keys, p_key);
    DELETE FROM fair_values WHERE flow_step_id = p_fs;
    INSERT INTO fair_values (flow_step_id, value)
    SELECT DISTINCT p_fs, fair_value FROM items WHERE flow_step_id = p_fs AND fair_value IS NOT NULL;
END $$;
