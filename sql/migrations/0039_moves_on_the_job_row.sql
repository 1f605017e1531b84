-- sql/0039_moves_on_the_job_row.sql: a job's claim and its end by its holder (a disposition or
-- a release, job_finish and jobs_finish) are recorded by the job's own row instead of two
-- transition rows: the claim by the row itself (its id, claim_from, claim_actor, claimed_at),
-- the end by finish_seq and the finish_* members with status, reason_code, reason and
-- finished_at. Every other move (registration, lease expiry, an admin's release, requeue,
-- resolve, review) stays a transition row. The view `audit` reads all three as transitions,
-- in one order: jobs take their ids from the transitions' sequence, and finish_seq too.
--
-- An existing database keeps its transition rows as they are: a job claimed before this
-- migration has its claim (and, once finished, maybe its end) as transitions; its claim_from
-- is NULL, so the view does not read it twice. audit_floor holds the first id of the shared
-- sequence, below which jobs are never read as claims (an index bound for the feed).

ALTER TABLE jobs
    ADD COLUMN claim_from text,
    ADD COLUMN claim_actor text,
    ADD COLUMN finish_seq bigint,
    ADD COLUMN finish_cause text,
    ADD COLUMN finish_to text,
    ADD COLUMN finish_actor text,
    ADD COLUMN finish_forced boolean,
    ADD COLUMN finish_lint_overridden boolean,
    ADD COLUMN finish_evidence text;

-- one sequence for transitions and jobs, past every id either has used
ALTER TABLE jobs ALTER COLUMN id DROP IDENTITY;
SELECT setval('transitions_id_seq', greatest((SELECT max(id) FROM transitions),
                                             (SELECT max(id) FROM jobs), 1));
ALTER TABLE jobs ALTER COLUMN id SET DEFAULT nextval('transitions_id_seq');

CREATE TABLE audit_floor (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    job_id bigint NOT NULL
);
INSERT INTO audit_floor (job_id) SELECT last_value FROM transitions_id_seq;

-- the change feed reads job ends from an id as it reads transitions
CREATE INDEX jobs_finish_seq ON jobs (finish_seq) WHERE finish_seq IS NOT NULL;

-- Each part of the UNION ALL is a bare scan, with its conditions outside (a part with a WHERE
-- of its own is not flattened into an append: the feed would sort every job after `after`
-- instead of merging three index range reads); `kind` names the part, so that the planner
-- folds each part's conditions to its own.
CREATE VIEW audit AS
 SELECT u.id, u.item_id, u.job_id, u.from_state, u.to_state, u.job_status, u.cause,
        u.reason_code, u.reason, u.forced, u.actor, u.at, u.logged_at, u.lint_overridden,
        u.evidence
 FROM (
    SELECT 't'::"char" AS kind, t.id, t.item_id, t.job_id, t.from_state, t.to_state,
           t.job_status, t.cause, t.reason_code, t.reason, t.forced, t.actor, t.at,
           t.logged_at, t.lint_overridden, t.evidence
    FROM transitions t
    UNION ALL
    SELECT 'c'::"char", j.id, j.item_id, j.id, j.claim_from, 'claimed'::text,
           'processing'::text, 'claim'::text, NULL::text, NULL::text, false, j.claim_actor,
           j.claimed_at, j.claimed_at, false, NULL::text
    FROM jobs j
    UNION ALL
    SELECT 'f'::"char", j.finish_seq, j.item_id, j.id, 'claimed'::text, j.finish_to, j.status,
           j.finish_cause, j.reason_code, j.reason, j.finish_forced, j.finish_actor,
           j.finished_at, j.finished_at, j.finish_lint_overridden, j.finish_evidence
    FROM jobs j) u
 WHERE u.id IS NOT NULL
   AND (u.kind <> 'c'
        OR (u.from_state IS NOT NULL AND u.id > (SELECT f.job_id FROM audit_floor f)));

CREATE FUNCTION verdict_audit_json(t audit)
 RETURNS json
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT json_build_object(
        'id', t.id, 'item_id', t.item_id, 'job_id', t.job_id, 'from_state', t.from_state,
        'to_state', t.to_state, 'job_status', t.job_status, 'cause', t.cause,
        'reason_code', t.reason_code, 'reason', t.reason, 'forced', t.forced,
        'lint_overridden', t.lint_overridden, 'evidence', t.evidence,
        'actor', t.actor, 'at', verdict_ts(t.at)) $function$;

-- the counters' deltas read the audit (sql/0019_counts_from_transitions.sql)
CREATE OR REPLACE VIEW item_count_deltas AS
 SELECT t.id AS transition_id,
    i.flow_step_id,
    s.state,
    s.delta
   FROM ((audit t
     JOIN items i ON ((i.id = t.item_id)))
     CROSS JOIN LATERAL ( VALUES (t.from_state,'-1'::integer), (t.to_state,1)) s(state, delta))
  WHERE ((t.id > ( SELECT counts_folded.transition_id
           FROM counts_folded)) AND (s.state IS NOT NULL));

CREATE OR REPLACE VIEW job_count_deltas AS
 SELECT t.id AS transition_id,
    j.flow_step_id,
    s.status,
    date_trunc('minute'::text, j.claimed_at) AS minute,
    s.delta
   FROM ((audit t
     JOIN jobs j ON ((j.id = t.job_id)))
     CROSS JOIN LATERAL ( VALUES ('processing'::text,
                CASE
                    WHEN (t.job_status = 'processing'::text) THEN 1
                    ELSE '-1'::integer
                END), (
                CASE
                    WHEN (t.job_status <> 'processing'::text) THEN t.job_status
                    ELSE NULL::text
                END,1)) s(status, delta))
  WHERE ((t.id > ( SELECT counts_folded.transition_id
           FROM counts_folded)) AND (t.job_status IS NOT NULL) AND (s.status IS NOT NULL));

CREATE OR REPLACE VIEW transition_count_deltas AS
 SELECT t.id AS transition_id,
    t.cause,
    t.to_state,
    1 AS delta
   FROM audit t
  WHERE (t.id > ( SELECT counts_folded.transition_id
           FROM counts_folded));
