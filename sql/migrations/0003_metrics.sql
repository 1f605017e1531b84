-- 0003_metrics: one escaping rule for Prometheus label values (text format: backslash,
-- double quote and newline are escaped), used by every /metrics family rendered in SQL.
CREATE FUNCTION verdict_prom_label(s text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN replace(replace(replace(s, '\', '\\'), '"', '\"'), E'\n', '\n');
