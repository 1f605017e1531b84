-- verdict_fair_key_set: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: 8226fb8396f097e90a66daabfa10927d
CREATE OR REPLACE FUNCTION public.verdict_fair_key_set(p_fs text, p_key text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
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
END $function$
;
