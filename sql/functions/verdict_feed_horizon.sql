-- verdict_feed_horizon: the current definition. Edit it here to change the function: verdictd
-- applies this file after the migrations whenever it changes (CONTRIBUTING.md, SQL).
-- from-migrations: a910608f59d9903d3c89dab397f507fb
CREATE OR REPLACE FUNCTION public.verdict_feed_horizon()
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT coalesce(min(a.xact_start), 'infinity'::timestamptz)
          FROM pg_stat_activity a
          WHERE a.datname = current_database() AND a.backend_xid IS NOT NULL
            AND a.pid <> pg_backend_pid() $function$
;
