/* statements.c - every SQL statement of verdict in one table, always parameterised, prepared
 * once per connection by conn.c. Nothing here runs anything.
 *
 * Lock order: a statement or transaction that locks both a job and its item locks the JOB
 * FIRST, then the item; several jobs go in job id order (each job, then its item). That holds
 * for dispositions, batches, session outcomes, tool failures, the holder's and the admin's
 * release (job_lock / jobs_lock lock the job FOR NO KEY UPDATE; the finishing statement then
 * updates the item: a claimed item is changed only by whoever holds its processing job's lock,
 * so it cannot move in between, and it costs no separate lock record), the heartbeat (its job row
 * is locked before its item is updated) and the sweeper (job, then item, both SKIP LOCKED: it never
 * waits). Statements that lock items only (claim, resolve, requeue) never lock a job that already
 * exists. tests/integration/test_lockorder.c fires them all together. */
#include "store_internal.h"

#include "verdict/store/claims.h" /* VD_CHECKPOINT_MAX_MERGED_SQL */

/* ", <column> <type>" of jobs_finish's recordset, from VD_FINISH_COLUMNS */
#define FINISH_COLUMN_DEF(col, type, kind, value) ", " #col " " type

/* jobs_finish's input: one row per job with the columns of VD_FINISH_COLUMNS, and whether its
 * tool_result text is the standard one, kept as a flag
 * (sql/migrations/0028_standard_tool_results.sql). */
#define JOBS_FINISH_INPUT                                                                          \
    "r AS MATERIALIZED (SELECT *, verdict_tool_result_is_std(tool_result_text,"                    \
    "  tool_result_terminal, disposition, reason_code, to_state) AS tool_result_std"               \
    " FROM jsonb_to_recordset($1::jsonb) AS r(ord integer" VD_FINISH_COLUMNS(                      \
        FINISH_COLUMN_DEF) ", trace_id text))"

/* The lock statements' view of the answer a finished job keeps
 * (sql/migrations/0026_answers_in_jobs.sql): whether `request` is the request it answered (jsonb
 * equality by digest; the request, up to a whole session report, is hashed only for a job that
 * keeps one), and the answer (NULL: none kept; PL/pgSQL entered only for a job that keeps one). */
#define KEPT_ANSWER(request)                                                                       \
    "CASE WHEN j.answer_digest IS NULL THEN false"                                                 \
    "  ELSE coalesce(j.answer_digest = verdict_request_digest(" request "), false) END,"           \
    " CASE WHEN j.answer_head IS NOT NULL OR j.answer_response IS NOT NULL"                        \
    "  THEN verdict_kept_answer(j) END"

/* The normalised registration batch (http/h_items.c builds it; every field is filled). */
#define ITEMS_INPUT                                                                                \
    "input AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(ord int, flow_step_id text,"       \
    " source_type text, item_identifier text, payload jsonb, priority int, delay_seconds int,"     \
    " max_attempts int, max_defers int, limit_keys text[]))"

/* The lock statements' last column: a tool failure holds the job's `complete` back. A write
 * or required tool of the job failed, the envelope said not to call it again (deterministic,
 * or transient past the loop threshold), and no later success of it was reported (cleared_at).
 * Write and required come from the flow step's declared tools (flow_steps.tools); a tool not
 * declared is judged by the failure's own `required` flag. One probe of tool_failures_job. */
#define VD_SQL_REQUIRED_BLOCKED                                                                    \
    "EXISTS (SELECT 1 FROM tool_failures f"                                                        \
    "  LEFT JOIN flow_steps d ON d.flow_step_id = j.flow_step_id"                                  \
    "  WHERE f.job_id = j.id AND NOT f.retryable AND f.cleared_at IS NULL"                         \
    "    AND CASE WHEN d.tools ? f.tool"                                                           \
    "        THEN d.tools -> f.tool ->> 'role' = 'write'"                                          \
    "          OR coalesce((d.tools -> f.tool ->> 'required')::boolean, false)"                    \
    "        ELSE f.required END)"
/* The selection of a bulk requeue or resolve and of its dry run (items_select): $1 flow step,
 * $2 the states (a JSON array of names; never 'claimed'), $3 last_reason_code, $5 a tool that
 * failed in one of the item's jobs, $6 a version that failure's worker_version is below
 * (verdict_semver_cmp; a failure without a version never is), $7/$8 the item's last change
 * (updated_at) at or after / before. Both failure filters hold for the same failure. */
#define BULK_FILTER                                                                                \
    " WHERE flow_step_id = $1 AND state IN (SELECT jsonb_array_elements_text($2::jsonb))"          \
    "   AND state <> 'claimed' AND ($3::text IS NULL OR last_reason_code = $3)"                    \
    "   AND ($7::timestamptz IS NULL OR updated_at >= $7::timestamptz)"                            \
    "   AND ($8::timestamptz IS NULL OR updated_at < $8::timestamptz)"                             \
    "   AND (($5::text IS NULL AND $6::text IS NULL) OR EXISTS (SELECT 1 FROM jobs bj"             \
    "        JOIN tool_failures bf ON bf.job_id = bj.id WHERE bj.item_id = items.id"               \
    "        AND ($5::text IS NULL OR bf.tool = $5)"                                               \
    "        AND ($6::text IS NULL OR verdict_semver_cmp(bf.worker_version, $6) < 0)))"
/* How many rows a list call reads at most past its cursor (GET /v1/items, GET /v1/jobs), and
 * the upper bound of a newest-first page below `after` (0: from the newest), as an index
 * condition (an OR with the parameter could only filter). */
#define VD_LIST_WINDOW "10000"
/* Items filtered by their own row (state, reason code: an items_pkey probe per source row) or by
 * worker (a jobs_pkey probe more): a window of 2,000 for them, ~3 ms at any size. */
#define ITEMS_WINDOW                                                                               \
    "(CASE WHEN $2::text IS NULL AND $5::text IS NULL AND $6::text IS NULL THEN " VD_LIST_WINDOW   \
    " ELSE 2000 END)"
#define ITEMS_BELOW "(CASE WHEN $3::bigint = 0 THEN 9223372036854775807 ELSE $3::bigint END)"
#define JOBS_BELOW "(CASE WHEN $4::bigint = 0 THEN 9223372036854775807 ELSE $4::bigint END)"

/* The filters of GET /v1/items ($1 flow step, $2 state, $5 reason code, $6 worker). The
 * worker is a scalar sub-select (one jobs_pkey probe per item read), not an EXISTS: a custom
 * plan turned that into a hashed sub-plan over every job of the worker (a whole scan of jobs,
 * 390 ms at 1,000,000). */
#define ITEMS_FILTER                                                                               \
    " WHERE ($1::text IS NULL OR src.flow_step_id = $1) AND ($2::text IS NULL OR it.state = $2)"   \
    "   AND ($5::text IS NULL OR it.last_reason_code = $5)"                                        \
    "   AND ($6::text IS NULL OR (SELECT cj.worker_id FROM jobs cj"                                \
    "                             WHERE cj.id = it.current_job_id) = $6)"                          \
    "   AND ($7::text IS NULL OR src.item_identifier = $7)"                                        \
    "   AND ($8::text IS NULL OR starts_with(src.item_identifier, $8))"

/* The filters of GET /v1/jobs ($1 flow step, $2 status, $3 since, $6 reason code, $7 worker,
 * $8 item). */
#define JOBS_FILTER                                                                                \
    " WHERE ($1::text IS NULL OR j.flow_step_id = $1) AND ($2::text IS NULL OR j.status = $2)"     \
    "   AND ($3::timestamptz IS NULL OR j.claimed_at >= $3::timestamptz)"                          \
    "   AND ($6::text IS NULL OR j.reason_code = $6) AND ($7::text IS NULL OR j.worker_id = $7)"   \
    "   AND ($8::bigint IS NULL OR j.item_id = $8)"                                                \
    "   AND ($9::text IS NULL OR j.claim_trace_id = $9 OR j.disposition_trace_id = $9)"

/* Long-poll claims (README "Long-poll claims"): a statement that makes items claimable now
 * answers, in an extra last column, what to announce: one line "<count> <flow_step_id>" per
 * flow step (count 0: unknown), NULL when nothing. The store hands it to vd_sql_announce, which
 * sends the NOTIFYs once the change is committed, in a transaction of their own: a NOTIFY in
 * the writing transaction would serialise every such commit on PostgreSQL's notify lock. */
#define VD_SQL_ANNOUNCE(rows, where)                                                               \
    "(SELECT string_agg(an.n || ' ' || an.flow_step_id, E'\\n') FROM"                              \
    " (SELECT count(*) AS n, flow_step_id FROM " rows " " where " GROUP BY flow_step_id) an)"

/* The change feed's scan (GET /v1/transitions): the audit rows after $1 in id order, stopping
 * at the first row made after the oldest open writing transaction began (a smaller id may still
 * commit there; sql/migrations/0008_feed.sql) and after VD_FEED_WINDOW rows. The horizon is
 * computed once (a one-row subquery kept apart by OFFSET 0) and both stops are window run
 * conditions (a running count of the late rows must stay 0, the row number within the window):
 * the scan ends there instead of filtering every later row. A flow-step filter so reads a
 * window, not the history after $1. */
#define VD_FEED_WINDOW "2000"
#define FEED_SCAN                                                                                  \
    "(SELECT x.t, x.id FROM (SELECT t, t.id,"                                                      \
    "   count(*) FILTER (WHERE t.logged_at >= h.at) OVER win AS late, row_number() OVER win AS n"  \
    "   FROM (SELECT verdict_feed_horizon() AS at OFFSET 0) h, audit t WHERE t.id > $1"            \
    "   WINDOW win AS (ORDER BY t.id)) x WHERE x.late = 0 AND x.n <= " VD_FEED_WINDOW ")"

/* The items of the jobs j claimed (claim_many, claim_many_take): each moved to claimed with
 * its job, answered as JSON with an editor's review when its last change may be one. */
#define CLAIMED_ITEMS                                                                              \
    " u AS ("                                                                                      \
    "  UPDATE items i SET state = verdict_transition(i.state, 'claim'), attempts = j.attempt,"     \
    "    claim_token = j.claim_token, current_job_id = j.id,"                                      \
    "    lease_expires_at = j.lease_expires_at, updated_at = now()"                                \
    "  FROM j JOIN item_sources s ON s.id = j.item_id"                                             \
    "  WHERE i.id = j.item_id AND i.id = ANY (ARRAY(SELECT item_id FROM j))"                       \
    "  RETURNING i.id, verdict_item_json(i, s) AS item,"                                           \
    "    CASE WHEN i.last_reason_code IN ('review_answered', 'lease_expired', 'admin_release')"    \
    "      THEN verdict_item_review(i.id) END AS review)"

/* claim_many's and claim_many_keyed's claims: r holds the requests that claim (ord, fs,
 * worker, version, lease, actor, trace, span, and k: the request's place among those of its
 * flow step). Per flow step its candidates are numbered in claim order, by the rank selected
 * once (verdict_claim_rank is inlined: its body is immutable; priority with aging, the index
 * items_claimable: sql/migrations/0037_priority_fairness.sql), and candidate k goes to that
 * flow step's request k: each gets its own job and token, the job's row recording the claim
 * (claim_from, claim_actor: sql/migrations/0039), in ord order, or nothing when fewer were
 * claimable. A keyed flow step's candidates are left to the claim with limits. */
#define CLAIM_MANY_CLAIMS                                                                          \
    " g AS (SELECT fs, count(*) AS n FROM r GROUP BY fs),"                                         \
    " locked AS ("                                                                                 \
    "  SELECT g.fs, l.* FROM g CROSS JOIN LATERAL ("                                               \
    "   SELECT id, state, attempts, verdict_claim_rank(available_at, priority) AS rank"            \
    "   FROM items"                                                                                \
    "   WHERE flow_step_id = g.fs AND state IN ('available', 'deferred')"                          \
    "     AND available_at <= now()"                                                               \
    "     AND NOT EXISTS (SELECT 1 FROM flow_steps f WHERE f.flow_step_id = g.fs"                  \
    "                     AND (f.paused OR f.keyed))"                                              \
    "   ORDER BY verdict_claim_rank(available_at, priority), id"                                   \
    "   LIMIT g.n FOR UPDATE SKIP LOCKED) l),"                                                     \
    " cand AS MATERIALIZED (SELECT l.id, l.state, l.attempts, r.* FROM"                            \
    "  (SELECT *, (row_number() OVER (PARTITION BY fs ORDER BY rank, id) - 1)::integer AS n"       \
    "   FROM locked) l"                                                                            \
    "  JOIN r ON r.fs = l.fs AND r.k = l.n),"                                                      \
    " j AS ("                                                                                      \
    "  INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, claim_token,"                  \
    "                    lease_expires_at, worker_version, lease_seconds, claim_trace_id,"         \
    "                    claim_span_id, claim_from, claim_actor)"                                  \
    "  SELECT c.id, c.fs, c.worker, c.attempts + 1, gen_random_uuid(),"                            \
    "         now() + c.lease * interval '1 second', c.version, c.lease, c.trace, c.span,"         \
    "         c.state, c.actor"                                                                    \
    "  FROM cand c ORDER BY c.ord"                                                                 \
    "  RETURNING id, item_id, claim_token, attempt, lease_expires_at)," CLAIMED_ITEMS

/* Each claiming request's answer (ord, answer): the claim's answer for one item; NULL for a
 * keyed flow step's requests (they then claim with limits). A first attempt has no earlier
 * job (a job's attempt is its item's claims so far, plus one): no checkpoint read. */
#define CLAIM_MANY_ANSWERS                                                                         \
    " SELECT r.ord, CASE WHEN EXISTS (SELECT 1 FROM flow_steps f"                                  \
    "   WHERE f.flow_step_id = r.fs AND f.keyed AND NOT f.paused) THEN NULL"                       \
    "  WHEN j.id IS NULL THEN json_build_object('claims', '[]'::json)::text"                       \
    "  ELSE json_build_object('claims', json_build_array(json_build_object("                       \
    "   'job_id', j.id, 'claim_token', j.claim_token, 'attempt', j.attempt,"                       \
    "   'lease_expires_at', verdict_ts(j.lease_expires_at), 'item', u.item,"                       \
    "   'previous_checkpoint', CASE WHEN j.attempt > 1 THEN (SELECT p.checkpoint FROM jobs p"      \
    "     WHERE p.item_id = u.id AND p.id < j.id AND p.checkpoint IS NOT NULL"                     \
    "     ORDER BY p.id DESC LIMIT 1) END,"                                                        \
    "   'review', u.review)))::text END AS answer"                                                 \
    " FROM r LEFT JOIN cand c ON c.ord = r.ord LEFT JOIN j ON j.item_id = c.id"                    \
    " LEFT JOIN u ON u.id = c.id"

/* Whether lane c has room for the run (run.n claims of $4 tokens each): verdict_lane_units,
 * which counts a full lane's live holders with verdict_lane_alive only when the run would not
 * fit beside all of them (a call starts nothing until a lane needs it, where a subquery here
 * was started at every claim: bench/results/2026-11-28-limited-claim-anatomy.md);
 * verdict_lane_alive looks each holder up by jobs_pkey whatever its plan was made on
 * (decision 0122). A lane that sets nothing has room. */
#define LANE_ROOM " coalesce(verdict_lane_units(c, run.n, $4::bigint), run.n) >= run.n"

/* claim_many_take: the coalesced limited claims of one key set ($3, a JSON array, or NULL)
 * and one token estimate per item ($4, or NULL) in one statement, the limit room taken in it:
 * $2 holds one row per request, as claim_many's, and a flow step's request k gets its
 * candidate k as claim_many gives it. The run takes, per key, one lane with room for all of
 * it (verdict_limit_take_many's first way, written here), or, when a key has none, is split
 * over lanes by verdict_limit_split; a throttled key hands out nothing. A request in a
 * flow step that is keyed (items with keys of their own), paused or fair is answered NULL:
 * the store claims those with claim_many_limited. The one statement longer than the 4,095
 * characters C99 promises a string literal (GCC and Clang have no such limit). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
static const char claim_many_take[] =
    "WITH r AS MATERIALIZED ("
    "  SELECT x.*, coalesce((SELECT NOT (f.keyed OR f.paused) AND f.fair_key IS NULL"
    "                          FROM flow_steps f WHERE f.flow_step_id = x.fs), true) AS fast,"
    "         (row_number() OVER (PARTITION BY x.fs ORDER BY x.ord) - 1)::integer AS k"
    "  FROM (SELECT y.ord, coalesce(y.fs, $1) AS fs, y.worker, y.version, y.lease, y.actor,"
    "               y.trace, y.span"
    "          FROM jsonb_to_recordset($2::jsonb) AS y(ord integer, fs text, worker text,"
    "               version text, lease integer, actor text, trace text, span text)) x),"
    " kk AS MATERIALIZED (SELECT (SELECT array_agg(DISTINCT e ORDER BY e)"
    "                               FROM jsonb_array_elements_text($3::jsonb) e) AS keys),"
    " g AS (SELECT fs, count(*) AS n FROM r WHERE fast GROUP BY fs),"
    " locked AS ("
    "  SELECT g.fs, l.* FROM g CROSS JOIN LATERAL ("
    "   SELECT id, state, attempts, verdict_claim_rank(available_at, priority) AS rank"
    "   FROM items"
    "   WHERE flow_step_id = g.fs AND state IN ('available', 'deferred')"
    "     AND available_at <= now()"
    "   ORDER BY verdict_claim_rank(available_at, priority), id"
    "   LIMIT g.n FOR UPDATE SKIP LOCKED) l),"
    /* the job's id comes first: its lanes name it (sql/migrations/0038) */
    " cand AS MATERIALIZED ("
    "  SELECT l.id, l.state, l.attempts, nextval('transitions_id_seq') AS job, r.* FROM"
    "   (SELECT *, (row_number() OVER (PARTITION BY fs ORDER BY rank, id) - 1)::integer"
    "    AS n FROM locked) l"
    "   JOIN r ON r.fs = l.fs AND r.k = l.n),"
    " run AS MATERIALIZED (SELECT count(*)::integer AS n,"
    "                             array_agg(c.job ORDER BY c.ord) AS jobs FROM cand c),"
    /* per key one active lane with room for the whole run, walked from a random lane
       SKIP LOCKED and wrapping, as verdict_limit_take_many's first way */
    " need AS ("
    "  SELECT l.key, l.lanes, coalesce(l.throttled_until > now(), false) AS shut,"
    "         floor(random() * l.lanes)::integer AS start"
    "    FROM limits l, kk, run"
    "   WHERE run.n > 0 AND l.key = ANY (kk.keys)"
    "     AND (l.lanes > 0 OR l.throttled_until > now())),"
    " f AS MATERIALIZED ("
    "  SELECT n.shut, CASE WHEN NOT n.shut THEN coalesce(x.id, y.id) END AS id"
    "    FROM need n CROSS JOIN run"
    "    LEFT JOIN LATERAL (SELECT c.id FROM limit_lanes c"
    "        WHERE NOT n.shut AND c.key = n.key AND c.n >= n.start AND c.n < n.lanes"
    "          AND (c.slots IS NULL OR c.slots >= run.n) AND" LANE_ROOM
    "        ORDER BY c.n LIMIT 1 FOR UPDATE SKIP LOCKED) x ON true"
    "    LEFT JOIN LATERAL (SELECT c.id FROM limit_lanes c"
    "        WHERE NOT n.shut AND x.id IS NULL AND c.key = n.key AND c.n < n.start"
    "          AND (c.slots IS NULL OR c.slots >= run.n) AND" LANE_ROOM
    "        ORDER BY c.n LIMIT 1 FOR UPDATE SKIP LOCKED) y ON true),"
    " w AS ("
    "  UPDATE limit_lanes c SET"
    "      holders = verdict_lane_hold(c, run.jobs),"
    "      tat = CASE WHEN c.burst IS NULL THEN c.tat"
    "                 ELSE greatest(c.tat, clock_timestamp()) + run.n * c.pace END,"
    "      reserved = CASE WHEN c.tokens IS NULL THEN c.reserved"
    "                      WHEN c.minute = date_trunc('minute', now())"
    "                      THEN c.reserved + coalesce($4::bigint, 0) * run.n"
    "                      ELSE coalesce($4::bigint, 0) * run.n END,"
    "      used = CASE WHEN c.tokens IS NOT NULL"
    "                       AND c.minute IS DISTINCT FROM date_trunc('minute', now())"
    "                  THEN 0 ELSE c.used END,"
    "      minute = CASE WHEN c.tokens IS NOT NULL THEN date_trunc('minute', now())"
    "                    ELSE c.minute END"
    "    FROM f, run WHERE c.id = f.id AND NOT EXISTS (SELECT 1 FROM f g WHERE g.id IS NULL)"
    "  RETURNING c.id, c.tokens IS NOT NULL AS t),"
    /* ok: every key took its lane (or there are none): every candidate is granted, on those
       lanes; shut: a key is throttled, none is. Otherwise (a key has no lane with room for
       the whole run) verdict_limit_split splits the run over lanes: the lanes this
       statement locked are its own, and it updated none of them (split: a JSON array of the
       token lanes of each job granted, in the run's order) */
    " took AS MATERIALIZED ("
    "  SELECT a.shut, a.ok, (SELECT array_agg(w.id ORDER BY w.id) FROM w WHERE w.t) AS cells,"
    "    CASE WHEN NOT a.shut AND NOT a.ok"
    "    THEN verdict_limit_split(kk.keys, $4::bigint, run.jobs) END AS split"
    "  FROM (SELECT coalesce(bool_or(f.shut), false) AS shut,"
    "               coalesce(bool_and(f.id IS NOT NULL), true) AS ok FROM f) a, kk, run),"
    " cl AS MATERIALIZED ("
    "  SELECT c.*, CASE WHEN t.ok THEN t.cells ELSE (SELECT array_agg(x::bigint)"
    "    FROM jsonb_array_elements_text(t.split -> (array_position(run.jobs, c.job) - 1)) x)"
    "    END AS cells"
    "  FROM cand c, took t, run WHERE NOT t.shut"
    "   AND (t.ok OR array_position(run.jobs, c.job) <= jsonb_array_length(t.split))),"
    /* a key set that hands out fewer items than asked is marked waiting, as a limited claim
       of one that got nothing marks it (verdict_claim_pick): a function call only then */
    " mark AS MATERIALIZED ("
    "  SELECT CASE WHEN kk.keys IS NOT NULL"
    "    AND (SELECT count(*) FROM cl) < (SELECT count(*) FROM r WHERE r.fast)"
    "    THEN verdict_limits_mark_waiting(kk.keys)::text END AS m FROM kk),"
    " j AS ("
    "  INSERT INTO jobs (id, item_id, flow_step_id, worker_id, attempt, claim_token,"
    "                    lease_expires_at, worker_version, limit_keys, limit_cells,"
    "                    estimated_tokens, lease_seconds, claim_trace_id, claim_span_id,"
    "                    claim_from, claim_actor)"
    "  SELECT c.job, c.id, c.fs, c.worker, c.attempts + 1, gen_random_uuid(),"
    "         now() + c.lease * interval '1 second', c.version, kk.keys, c.cells,"
    "         CASE WHEN kk.keys IS NOT NULL THEN $4::bigint END, c.lease, c.trace, c.span,"
    "         c.state, c.actor"
    "  FROM cl c, kk ORDER BY c.ord"
    "  RETURNING id, item_id, claim_token, attempt, lease_expires_at, limit_keys)," CLAIMED_ITEMS
    " SELECT r.ord, CASE WHEN NOT r.fast THEN NULL"
    "  WHEN j.id IS NULL THEN json_build_object('claims', '[]'::json)::text"
    "  ELSE json_build_object('claims', json_build_array(json_build_object("
    "   'job_id', j.id, 'claim_token', j.claim_token, 'attempt', j.attempt,"
    "   'lease_expires_at', verdict_ts(j.lease_expires_at), 'item', u.item,"
    "   'limit_keys', j.limit_keys,"
    "   'previous_checkpoint', CASE WHEN j.attempt > 1 THEN (SELECT p.checkpoint FROM jobs p"
    "     WHERE p.item_id = u.id AND p.id < j.id AND p.checkpoint IS NOT NULL"
    "     ORDER BY p.id DESC LIMIT 1) END,"
    "   'review', u.review)))::text END AS answer"
    " FROM r CROSS JOIN mark LEFT JOIN cl c ON c.ord = r.ord"
    " LEFT JOIN j ON j.item_id = c.id LEFT JOIN u ON u.id = c.id ORDER BY r.ord";
#pragma GCC diagnostic pop

const vd_sql_statement vd_sql_statements[VD_SQL__MAX] = {
    [VD_SQL_SCHEMA_VERSION] = {"schema_version",
                               "SELECT coalesce(max(version), 0) FROM schema_migrations"},

    /* SPEC §1.3 "lease passed": failure budget left -> deferred, available now; else failed.
     * SKIP LOCKED: replicas sweeping together, or a disposition in flight, are left alone. The
     * job is locked before its item (the lock order above). */
    [VD_SQL_SWEEP_LEASES] =
        {"sweep_leases",
         "WITH due AS ("
         "  SELECT i.id, i.current_job_id FROM items i JOIN jobs dj ON dj.id = i.current_job_id"
         "  WHERE i.state = 'claimed' AND i.lease_expires_at < now() AND dj.status = 'processing'"
         "  ORDER BY i.lease_expires_at LIMIT $1 FOR NO KEY UPDATE OF dj, i SKIP LOCKED),"
         " u AS ("
         "  UPDATE items i SET"
         "    state = verdict_transition(i.state, 'lease_expired', i.failures, i.max_attempts),"
         "    failures = least(i.failures + 1, i.max_attempts), available_at = now(),"
         "    lease_expires_at = NULL,"
         "    claim_token = NULL, last_reason_code = 'lease_expired',"
         "    last_reason = 'the lease passed without a disposition', updated_at = now()"
         "  FROM due WHERE i.id = due.id"
         "  RETURNING i.id, due.current_job_id AS job_id, i.state, i.flow_step_id),"
         " j AS ("
         "  UPDATE jobs SET status = 'expired', finished_at = now()"
         "  FROM u WHERE jobs.id = u.job_id AND jobs.status = 'processing')"
         " INSERT INTO transitions (item_id, job_id, from_state, to_state, job_status, cause,"
         "                          reason_code, reason, actor)"
         " SELECT u.id, u.job_id, 'claimed', u.state, 'expired', 'lease_expired',"
         "        'lease_expired', 'the lease passed without a disposition', 'sweeper' FROM u"
         /* a deferred item is claimable now: announced for long-poll claims */
         " RETURNING item_id, " VD_SQL_ANNOUNCE("u", "WHERE u.state = 'deferred'")},

    [VD_SQL_PURGE_IDEMPOTENCY] =
        {"purge_idempotency",
         "DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours'"},

    /* Idempotency-Key: the first caller inserts the record inside its transaction; a
     * concurrent repeat waits on the row lock, then finds the stored answer. A record past
     * 24 h that the sweeper has not purged yet counts as absent: it is taken over. Bodies are
     * compared as jsonb (the same JSON re-indented or reordered is the same request); md5($4)
     * still matches records stored before that rule. */
    [VD_SQL_IDEM_CLAIM] =
        {"idem_claim", "INSERT INTO idempotency_keys AS k (route, key_name, idem_key, request_hash)"
                       " VALUES ($1, $2, $3, md5($4::text::jsonb::text))"
                       " ON CONFLICT (route, key_name, idem_key) DO UPDATE"
                       "  SET request_hash = excluded.request_hash, status = NULL, response = NULL,"
                       "      created_at = now()"
                       "  WHERE k.created_at < now() - interval '24 hours'"
                       " RETURNING 1"},
    [VD_SQL_IDEM_GET] = {"idem_get", "SELECT request_hash IN (md5($4::text::jsonb::text), "
                                     "md5($4::text)), response FROM idempotency_keys"
                                     " WHERE route = $1 AND key_name = $2 AND idem_key = $3"
                                     "   AND created_at >= now() - interval '24 hours'"},
    [VD_SQL_IDEM_SAVE] = {"idem_save", "UPDATE idempotency_keys SET status = 200, response = $4"
                                       " WHERE route = $1 AND key_name = $2 AND idem_key = $3"},

    [VD_SQL_FLOW_STEPS_ENSURE] =
        {"flow_steps_ensure",
         "INSERT INTO flow_steps (flow_step_id)"
         " SELECT DISTINCT e->>'flow_step_id' FROM jsonb_array_elements($1::jsonb) e"
         " ORDER BY 1 ON CONFLICT DO NOTHING"},

    /* New items only: an existing item (processed, rejected, anything) is left untouched. */
    [VD_SQL_ITEMS_INSERT] =
        {"items_insert",
         "WITH " ITEMS_INPUT ","
         /* the source row decides: its identity is unique by the identifier's digest
          * (item_sources_identity, sql/migrations/0023_item_sources.sql); the first of duplicates
          * wins */
         " src AS ("
         "  INSERT INTO item_sources (flow_step_id, source_type, item_identifier, payload)"
         "  SELECT flow_step_id, source_type, item_identifier, payload FROM input ORDER BY ord"
         "  ON CONFLICT (flow_step_id, source_type, verdict_identity_digest(item_identifier))"
         "  DO NOTHING RETURNING id, flow_step_id, source_type, item_identifier),"
         " ins AS ("
         "  INSERT INTO items (id, flow_step_id, priority, available_at, max_attempts,"
         "                     max_defers, limit_keys, fair_value)"
         "  SELECT DISTINCT ON (s.id) s.id, s.flow_step_id, x.priority,"
         "         now() + x.delay_seconds * interval '1 second', x.max_attempts, x.max_defers,"
         "         (SELECT array_agg(DISTINCT k ORDER BY k) FROM unnest(x.limit_keys) k),"
         "         verdict_fair_value(x.limit_keys, (SELECT f.fair_key FROM flow_steps f"
         "                                           WHERE f.flow_step_id = s.flow_step_id))"
         "  FROM src s JOIN input x ON x.flow_step_id = s.flow_step_id"
         "   AND x.source_type = s.source_type AND x.item_identifier = s.item_identifier"
         "  ORDER BY s.id, x.ord"
         "  RETURNING id, flow_step_id, available_at, fair_value),"
         /* the fair values of a flow step with a fair key
            (sql/migrations/0037_priority_fairness.sql) */
         " fv AS (INSERT INTO fair_values (flow_step_id, value)"
         "        SELECT DISTINCT flow_step_id, fair_value FROM ins WHERE fair_value IS NOT NULL"
         "        ON CONFLICT DO NOTHING),"
         /* items with limit keys: the flow step is claimed with limits from now on */
         " kf AS (UPDATE flow_steps f SET keyed = true WHERE NOT f.keyed AND f.flow_step_id IN"
         "        (SELECT flow_step_id FROM input WHERE limit_keys IS NOT NULL)),"
         " tr AS ("
         "  INSERT INTO transitions (item_id, to_state, cause, actor)"
         "  SELECT id, 'available', 'register', $2 FROM ins)"
         /* a delayed item is not announced: the waiters' periodic retry finds it */
         " SELECT coalesce(json_agg(id), '[]'::json)::text," VD_SQL_ANNOUNCE(
             "ins", "WHERE ins.available_at <= now()") " FROM ins"},

    [VD_SQL_ITEMS_REGISTERED] =
        {"items_registered",
         "WITH " ITEMS_INPUT ","
         " created AS (SELECT e::bigint AS id FROM jsonb_array_elements_text($2::jsonb) e),"
         " r AS ("
         "  SELECT x.ord, s.id, s.flow_step_id, s.source_type, s.item_identifier, i.state,"
         "         (c.id IS NOT NULL AND x.ord = min(x.ord) OVER (PARTITION BY s.id)) AS created"
         "  FROM input x JOIN item_sources s ON s.flow_step_id = x.flow_step_id"
         "   AND s.source_type = x.source_type"
         "   AND verdict_identity_digest(s.item_identifier) ="
         "       verdict_identity_digest(x.item_identifier)"
         "   AND s.item_identifier = x.item_identifier"
         "  JOIN items i ON i.id = s.id"
         "  LEFT JOIN created c ON c.id = s.id)"
         " SELECT json_build_object('items', coalesce(json_agg(json_build_object("
         "   'id', id, 'flow_step_id', flow_step_id, 'source_type', source_type,"
         "   'item_identifier', item_identifier, 'state', state, 'created', created)"
         "   ORDER BY ord), '[]'::json))::text FROM r"},

    [VD_SQL_ITEMS_LOOKUP] =
        {"items_lookup",
         "SELECT json_build_object('items', coalesce(json_agg(json_build_object("
         "  'id', s.id, 'item_identifier', s.item_identifier, 'state', s.state) ORDER BY s.ord),"
         "  '[]'::json))::text"
         " FROM (SELECT i.id, s.item_identifier, i.state, min(r.ord) AS ord"
         "       FROM jsonb_array_elements_text($3::jsonb) WITH ORDINALITY AS r(ident, ord)"
         "       JOIN item_sources s ON s.flow_step_id = $1 AND s.source_type = $2"
         "        AND verdict_identity_digest(s.item_identifier) = verdict_identity_digest(r.ident)"
         "        AND s.item_identifier = r.ident"
         "       JOIN items i ON i.id = s.id"
         "       GROUP BY i.id, s.item_identifier, i.state) s"},

    [VD_SQL_ITEM_GET] =
        {"item_get",
         "SELECT json_build_object('item', verdict_item_json(i, s), 'transitions',"
         "  (SELECT coalesce(json_agg(verdict_audit_json(t) ORDER BY (t).id DESC), '[]'::json)"
         "   FROM (SELECT tr AS t FROM audit tr WHERE tr.item_id = i.id"
         "         ORDER BY tr.id DESC LIMIT 100) s))::text"
         " FROM items i JOIN item_sources s ON s.id = i.id WHERE i.id = $1"},

    /* Keyset pagination by id over a window of at most ITEMS_WINDOW rows after $3 (its
     * bound, hi, from an index-only scan of items_pkey): a filtered call reads that window at
     * most, however rare its matches and however many items there are. next_after is set when
     * the page is full (its last id) or the window was (hi: more may match after it); null at
     * the end. worker_id matches the worker of the item's latest job (current_job_id is kept
     * after the job ends). The window bounds item_sources as well as items: the planner does
     * not carry a range across the join's equality, and without it the generic plan read and
     * sorted the whole of item_sources (a parallel sequential scan, 0.5 s at 1,000,000). */
    [VD_SQL_ITEMS_LIST] =
        {"items_list",
         "WITH w AS (SELECT max(id) AS hi, count(*) AS n FROM (SELECT id FROM items"
         "            WHERE id > $3 ORDER BY id LIMIT " ITEMS_WINDOW ") b)"
         " SELECT json_build_object('items', coalesce(json_agg(verdict_item_json(s.it, s.src)"
         "   ORDER BY (s.it).id), '[]'::json),"
         "  'next_after', CASE WHEN count(*) = $4 THEN max((s.it).id)"
         "   WHEN (SELECT n FROM w) = " ITEMS_WINDOW " THEN (SELECT hi FROM w) END)::text"
         " FROM (SELECT it, src FROM items it JOIN item_sources src ON src.id = it.id" ITEMS_FILTER
         "       AND it.id > $3 AND it.id <= (SELECT hi FROM w)"
         "       AND src.id > $3 AND src.id <= (SELECT hi FROM w) ORDER BY it.id LIMIT $4) s"},
    /* The same, newest first: after is the id to go below (0: from the newest). */
    [VD_SQL_ITEMS_LIST_DESC] =
        {"items_list_desc",
         "WITH w AS (SELECT min(id) AS lo, count(*) AS n FROM (SELECT id FROM items"
         "            WHERE id < " ITEMS_BELOW " ORDER BY id DESC LIMIT " ITEMS_WINDOW ") b)"
         " SELECT json_build_object('items', coalesce(json_agg(verdict_item_json(s.it, s.src)"
         "   ORDER BY (s.it).id DESC), '[]'::json),"
         "  'next_after', CASE WHEN count(*) = $4 THEN min((s.it).id)"
         "   WHEN (SELECT n FROM w) = " ITEMS_WINDOW " THEN (SELECT lo FROM w) END)::text"
         " FROM (SELECT it, src FROM items it JOIN item_sources src ON src.id = it.id" ITEMS_FILTER
         "       AND it.id < " ITEMS_BELOW " AND it.id >= (SELECT lo FROM w)"
         "       AND src.id < " ITEMS_BELOW " AND src.id >= (SELECT lo FROM w)"
         "       ORDER BY it.id DESC LIMIT $4) s"},

    /* claim_many: the claims of one item each that many requests made at once
     * (service/coalesce.c), of one flow step or several, one statement: $1 holds one row per
     * request (ord 0..n-1, its flow step, worker, version, lease, actor, trace and span). One
     * row per request: its ord and answer (CLAIM_MANY_CLAIMS, CLAIM_MANY_ANSWERS). */
    [VD_SQL_CLAIM_MANY] =
        {"claim_many",
         "WITH r AS (SELECT *, (row_number() OVER (PARTITION BY fs ORDER BY ord) - 1)::integer"
         "  AS k FROM jsonb_to_recordset($1::jsonb) AS r(ord integer, fs text,"
         "  worker text, version text, lease integer, actor text, trace text, span "
         "text))," CLAIM_MANY_CLAIMS CLAIM_MANY_ANSWERS " ORDER BY r.ord"},

    /* claim_many_keyed: the same when some requests carry an Idempotency-Key (the row's key
     * and raw body; decision 0100): a stored key answers its stored reply or refusal without
     * claiming, a new key's first request claims and its key row is kept with the answer in
     * the same statement, a second request with the key in the group answers as the first;
     * one row per request: its ord, answer and how it answers (vd_claim_idem). Its own
     * statement, so that claims without keys do not start its plan (+0.47 M instructions). */
    [VD_SQL_CLAIM_MANY_KEYED] =
        {"claim_many_keyed",
         "WITH r0 AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(ord integer, fs text,"
         "  worker text, version text, lease integer, actor text, trace text, span text)),"
         /* the requests with an Idempotency-Key, and how each answers */
         " h AS MATERIALIZED (SELECT * FROM verdict_claim_keys($1::jsonb)),"
         /* the requests that claim: without a key, or the first of a new key */
         " r AS (SELECT *, (row_number() OVER (PARTITION BY fs ORDER BY ord) - 1)::integer"
         "  AS k FROM r0 WHERE NOT EXISTS (SELECT 1 FROM h WHERE h.ord = r0.ord AND h.how > "
         "0))," CLAIM_MANY_CLAIMS ", a AS MATERIALIZED (" CLAIM_MANY_ANSWERS "),"
         /* a new key keeps its lead's answer, in the claim's transaction (idem_claim and
            idem_save in one); one stored meanwhile by another request is not taken over */
         " ins AS (INSERT INTO idempotency_keys AS k (route, key_name, idem_key, request_hash,"
         "   status, response)"
         "  SELECT 'claims', h.actor, h.key, h.hash, 200, a.answer FROM h JOIN a ON a.ord = h.ord"
         "  ORDER BY 2, 3"
         "  ON CONFLICT (route, key_name, idem_key) DO UPDATE"
         "  SET request_hash = excluded.request_hash, status = excluded.status,"
         "      response = excluded.response, created_at = now()"
         "  WHERE k.created_at < now() - interval '24 hours' RETURNING k.key_name, k.idem_key)"
         /* one row per request: its ord, answer and how (verdict_claim_keys) */
         " SELECT r0.ord, CASE coalesce(h.how, 0) WHEN 0 THEN a.answer"
         "  WHEN 1 THEN coalesce(h.response, l.answer) END, coalesce(h.how, 0)"
         " FROM r0 LEFT JOIN h ON h.ord = r0.ord LEFT JOIN a ON a.ord = r0.ord"
         " LEFT JOIN a l ON l.ord = h.lead"
         /* a new key stored by another request since the statement began: all again */
         " WHERE verdict_idem_raced(EXISTS (SELECT 1 FROM h WHERE h.how = 0 AND NOT EXISTS"
         "  (SELECT 1 FROM ins WHERE ins.key_name = h.actor AND ins.idem_key = h.key)))"
         " ORDER BY r0.ord"},

    /* claim_many_limited: the same for requests that name limit keys or a token estimate, or
     * in a keyed flow step (sql/functions/verdict_claim_many_limited.sql): $4 the group's limit
     * keys (JSON array, or NULL), $5 its estimated tokens per item (or NULL). One pick takes
     * the limit cells of every item handed out; one row per request: its ord and answer. */
    [VD_SQL_CLAIM_MANY_LIMITED] =
        {"claim_many_limited",
         "SELECT req, answer FROM verdict_claim_many_limited($1, $2::jsonb, $3::int,"
         " (SELECT array_agg(DISTINCT e ORDER BY e) FROM jsonb_array_elements_text($4::jsonb) e),"
         " $5::bigint)"},

    /* claim_many_take: the limited claims of one key set (see claim_many_take above) */
    [VD_SQL_CLAIM_MANY_TAKE] = {"claim_many_take", claim_many_take},

    /* SPEC §4: one statement claims the batch. The CTE with LIMIT .. FOR UPDATE SKIP LOCKED
     * locks exactly the rows it returns; concurrent claimers skip each other's rows. Only the
     * database clock is used. A paused flow step yields nothing. */
    [VD_SQL_CLAIM] =
        {"claim",
         "WITH cand AS ("
         "  SELECT id, state, attempts FROM items"
         "  WHERE flow_step_id = $1 AND state IN ('available', 'deferred')"
         "    AND available_at <= now()"
         /* a keyed flow step (items with limit keys) is claimed by claim_limited */
         "    AND NOT EXISTS (SELECT 1 FROM flow_steps f WHERE f.flow_step_id = $1"
         "                    AND (f.paused OR f.keyed))"
         /* priority with aging: items_claimable (sql/migrations/0037_priority_fairness.sql) */
         "  ORDER BY verdict_claim_rank(available_at, priority), id"
         "  LIMIT $3 FOR UPDATE SKIP LOCKED),"
         " j AS ("
         /* the job's row records the claim (claim_from, claim_actor: sql/migrations/0039) */
         "  INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, claim_token,"
         "                    lease_expires_at, worker_version, lease_seconds, claim_trace_id,"
         "                    claim_span_id, claim_from, claim_actor)"
         "  SELECT c.id, $1, $2, c.attempts + 1, gen_random_uuid(),"
         "         now() + $4 * interval '1 second', $6, $4::integer, $7, $8, c.state, $5"
         "  FROM cand c"
         "  RETURNING id, item_id, claim_token, attempt, lease_expires_at),"
         " u AS ("
         "  UPDATE items i SET state = verdict_transition(i.state, 'claim'), attempts = j.attempt,"
         "    claim_token = j.claim_token, current_job_id = j.id,"
         "    lease_expires_at = j.lease_expires_at, updated_at = now()"
         /* the ANY keeps a generic plan (LIMIT $3 unknown) on items_pkey, not a seq scan */
         "  FROM j JOIN item_sources s ON s.id = j.item_id"
         "  WHERE i.id = j.item_id AND i.id = ANY (ARRAY(SELECT item_id FROM j))"
         "  RETURNING i.id, i.priority, i.available_at, verdict_item_json(i, s) AS item,"
         /* an editor's answer reaches the next attempt (sql/migrations/0034_traces_reviews.sql);
          * read only for an item whose last change may be a review (last_reason_code is the one
          * before this claim: the claim does not set it) */
         "    CASE WHEN i.last_reason_code IN ('review_answered', 'lease_expired', 'admin_release')"
         "      THEN verdict_item_review(i.id) END AS review)"
         /* NULL for a keyed flow step that is not paused: the store claims with limits */
         " SELECT CASE WHEN EXISTS (SELECT 1 FROM flow_steps f WHERE f.flow_step_id = $1"
         "                          AND f.keyed AND NOT f.paused) THEN NULL"
         "  ELSE json_build_object('claims', coalesce(json_agg(json_build_object("
         "   'job_id', j.id, 'claim_token', j.claim_token, 'attempt', j.attempt,"
         "   'lease_expires_at', verdict_ts(j.lease_expires_at), 'item', u.item,"
         /* i17c: the last checkpoint of the item's most recent earlier job that has one
          * (jobs_item; nothing to read for an item never claimed before). A first attempt
          * has none: a job's attempt is its item's attempts plus one, and only a claim,
          * which inserts the job, sets attempts. Not read then: the subquery's generic plan,
          * made while jobs was small, may be a sequential scan of jobs kept as it grows */
         "   'previous_checkpoint', CASE WHEN j.attempt > 1 THEN (SELECT p.checkpoint FROM jobs p"
         "     WHERE p.item_id = u.id AND p.id < j.id AND p.checkpoint IS NOT NULL"
         "     ORDER BY p.id DESC LIMIT 1) END,"
         "   'review', u.review)"
         "   ORDER BY verdict_claim_rank(u.available_at, u.priority), u.id), '[]'::json))::text END"
         " FROM u JOIN j ON j.item_id = u.id"},

    /* A claim with limits (sql/migrations/0032_flow_control.sql): $7 the claim's limit keys (a JSON
     * array of strings, sorted, or NULL), $8 the tokens each item reserves (or NULL), $9 and
     * $10 the request's trace and span ids (or NULL; sql/migrations/0036_limited_claim_traces.sql).
     */
    [VD_SQL_CLAIM_LIMITED] = {"claim_limited",
                              "SELECT verdict_claim_limited($1, $2, $3::int, $4::int, $5, $6,"
                              " (SELECT array_agg(DISTINCT e ORDER BY e)"
                              "  FROM jsonb_array_elements_text($7::jsonb) e), $8::bigint,"
                              " $9::text, $10::text)"},

    /* Extends the lease only while the token still holds the item. Answers the job's status,
     * whether the token is the job's, and the new lease (NULL when not extended). The job row
     * is locked first (the lock order above); a heartbeat queued behind its own job's
     * disposition then reads the finished job (READ COMMITTED re-reads a row it waited for)
     * and answers job_finalized. */
    [VD_SQL_HEARTBEAT] =
        {"heartbeat",
         /* i17c: $4 a checkpoint (JSON object or NULL) merged into the job's with ||, written
          * only with the lease (fenced the same way); too_big: the merge would pass
          * VD_CHECKPOINT_MAX_MERGED bytes as PostgreSQL renders it, and nothing is written */
         /* $3 NULL (no lease_seconds): the claim's own length, else $5 (the server default) */
         "WITH j AS (SELECT id, item_id, status, claim_token = $2::uuid AS token_ok,"
         "             coalesce($3::bigint, lease_seconds, $5::bigint) AS lease_s,"
         "             octet_length((coalesce(checkpoint, '{}') || $4::jsonb)::text)"
         "               > " VD_CHECKPOINT_MAX_MERGED_SQL " AS too_big"
         "           FROM jobs WHERE id = $1 FOR NO KEY UPDATE),"
         " u AS ("
         "  UPDATE items i SET lease_expires_at = now() + j.lease_s * interval '1 second',"
         "    updated_at = now()"
         "  FROM j WHERE i.id = j.item_id AND j.token_ok AND j.status = 'processing'"
         "   AND i.state = 'claimed' AND i.current_job_id = j.id AND i.claim_token = $2::uuid"
         "   AND j.too_big IS NOT TRUE"
         "  RETURNING i.lease_expires_at),"
         " uj AS (UPDATE jobs SET lease_expires_at = u.lease_expires_at,"
         "          checkpoint = coalesce(jobs.checkpoint || $4::jsonb, $4::jsonb,"
         "                                jobs.checkpoint)"
         "        FROM u WHERE jobs.id = $1)"
         " SELECT j.status, j.token_ok,"
         "  (SELECT json_build_object('lease_expires_at', verdict_ts(u.lease_expires_at))::text"
         "   FROM u), j.too_big IS TRUE"
         " FROM j"},

    [VD_SQL_FLOW_STEP_SET_PAUSED] =
        {"flow_step_set_paused",
         "INSERT INTO flow_steps AS f (flow_step_id, paused) VALUES ($1, $2)"
         " ON CONFLICT (flow_step_id) DO UPDATE SET paused = $2, updated_at = now()"
         " RETURNING json_build_object('flow_step', verdict_flow_step_json(f))::text,"
         /* a resume: how many are claimable is not counted (0: wake every waiter) */
         "  CASE WHEN NOT f.paused THEN '0 ' || f.flow_step_id END"},

    /* PATCH /v1/flow-steps/{id}: the settings given ($2..$5, NULL = keep), the flow step
     * created with the defaults for the rest when unknown
     * (sql/migrations/0013_flow_step_settings.sql). */
    [VD_SQL_FLOW_STEP_CONFIGURE] =
        {"flow_step_configure",
         "INSERT INTO flow_steps AS f (flow_step_id, incident_min_items, incident_window_minutes,"
         "                             pause_on_incident, strict_evidence, tools)"
         " VALUES ($1, coalesce($2::int, 5), coalesce($3::int, 15), coalesce($4::bool, false),"
         "         coalesce($5::bool, false), coalesce($6::jsonb, '{}'))"
         " ON CONFLICT (flow_step_id) DO UPDATE SET"
         "  incident_min_items = coalesce($2::int, f.incident_min_items),"
         "  incident_window_minutes = coalesce($3::int, f.incident_window_minutes),"
         "  pause_on_incident = coalesce($4::bool, f.pause_on_incident),"
         "  strict_evidence = coalesce($5::bool, f.strict_evidence),"
         "  tools = coalesce($6::jsonb, f.tools), updated_at = now()"
         " RETURNING json_build_object('flow_step', verdict_flow_step_json(f))::text"},

    /* The settings the service reads inside a job's transaction; no row: the defaults. */
    [VD_SQL_FLOW_STEP_SETTINGS] =
        {"flow_step_settings",
         "SELECT incident_min_items, incident_window_minutes, pause_on_incident, strict_evidence"
         " FROM flow_steps WHERE flow_step_id = $1"},

    [VD_SQL_FLOW_STEPS_LIST] =
        {"flow_steps_list",
         "SELECT json_build_object('flow_steps', coalesce(json_agg(verdict_flow_step_json(f)"
         "  ORDER BY f.flow_step_id), '[]'::json))::text FROM flow_steps f"},

    /* The job and its item, locked, for a write on the job (SPEC §1.3 fencing); the same
     * columns as jobs_lock, for one job (its positional form plans and runs faster). */
    [VD_SQL_JOB_LOCK] =
        {"job_lock",
         "SELECT 0, j.status, j.claim_token = $2::uuid, coalesce(j.disposition, ''),"
         "  j.required_tool_failed,"
         "  " KEPT_ANSWER(
             "$3::jsonb") ", i.id, i.state,"
                          "  (i.state = 'claimed' AND i.current_job_id = j.id AND i.claim_token = "
                          "j.claim_token),"
                          "  i.failures, i.defers, i.max_attempts, "
                          "i.max_defers, " VD_SQL_REQUIRED_BLOCKED ","
                          /* claim_next claims for this flow step, worker and worker version */
                          "  j.flow_step_id, j.worker_id, j.worker_version"
                          " FROM jobs j JOIN items i ON i.id = j.item_id WHERE j.id = $1"
                          " FOR NO KEY UPDATE OF j"},

    /* Item, job, the transition row and the answer kept for replays, in one statement (the
     * caller's transaction's last, sent with its COMMIT). The parameters are the columns of
     * VD_FINISH_COLUMNS in order; the answer is built by verdict_job_answer from $17..$19
     * and $22..$23 (the tool_result), and the claims of claim_next ($24). */
    [VD_SQL_JOB_FINISH] =
        {"job_finish",
         "WITH ui AS ("
         "  UPDATE items i SET state = $3, failures = $9, defers = $10,"
         "    available_at = CASE WHEN $3 = 'deferred'"
         "                        THEN now() + $11::float8 * interval '1 second'"
         "                        WHEN $3 = 'available' THEN now()" /* a release */
         "                        ELSE i.available_at END,"
         "    lease_expires_at = NULL, claim_token = NULL, last_reason_code = $7,"
         "    last_reason = $8, updated_at = now()"
         "  FROM item_sources s WHERE i.id = $2 AND s.id = $2"
         "  RETURNING verdict_item_json(i, s) AS item, i.state, i.failures, i.defers,"
         "    i.available_at),"
         " uj AS ("
         "  UPDATE jobs j SET status = $4, finished_at = now(), disposition = $6,"
         "    reason_code = $7, reason = $8, disposition_trace_id = $25,"
         /* the job's row records its end, in the transitions' order (sql/migrations/0039) */
         "    finish_seq = nextval('transitions_id_seq'), finish_cause = $5, finish_to = $3,"
         "    finish_forced = $12, finish_actor = $13, finish_lint_overridden = $20,"
         "    finish_evidence = $21,"
         "    engine_data = j.engine_data || coalesce($14::jsonb, '{}'::jsonb),"
         "    adjudication = coalesce($15::text::jsonb, j.adjudication),"
         /* the answer is kept compactly in the job's row (sql/migrations/0021_compact_answers.sql,
          * sql/migrations/0026_answers_in_jobs.sql): its head and tail members and the item's
          * fields the job row does not say; with claim_next, $24 is the claim's answer {"claims" :
          * [...]}: it closes the answer, and the kept tail ends with the claimed job ids, from
          * which a replay renders the same claims (verdict_kept_answer,
          * sql/migrations/0017_claim_next.sql) */
         "    answer_digest = verdict_request_digest($16::jsonb),"
         /* a standard tool_result text is kept as a flag
            (sql/migrations/0028_standard_tool_results.sql) */
         "    answer_tool_result_std = tr.std,"
         "    answer_head = verdict_answer_head($17, $18, $15::text,"
         "      CASE WHEN tr.std THEN NULL ELSE $22 END, $23),"
         "    answer_tail = verdict_answer_tail($17, $19) || CASE WHEN $24::text IS NULL"
         "      THEN '' ELSE ',\"claimed\":' || verdict_claimed_ids($24) END,"
         "    answer_item_state = ui.state, answer_item_failures = ui.failures,"
         "    answer_item_defers = ui.defers, answer_item_available_at = ui.available_at"
         /* OFFSET 0 keeps tr a subquery: tr.std stays a column, cheap enough for the planner
            to inline verdict_answer_head (called on the whole test, it would be run as a
            function, its body parsed and planned on every execution) */
         "  FROM ui, (SELECT verdict_tool_result_is_std($22, $23, $6, $7, $3) AS std OFFSET 0) tr"
         "  WHERE j.id = $1 RETURNING verdict_job_json(j) AS job),"
         " a AS ("
         "  SELECT verdict_job_answer($17, $18, $15::text, uj.job, ui.item, $19, $22, $23)"
         "    AS answer"
         "  FROM ui, uj)"
         " SELECT $1, CASE WHEN $24::text IS NULL THEN answer"
         "        ELSE left(answer, -1) || ',' || substr($24::text, 2) END FROM a"},

    /* Jobs and their items under row locks, in job id order, with the answer kept for a
     * replay; $1 is [{"ord","job_id","token","request"}...] (vd_store_jobs_lock). */
    [VD_SQL_JOBS_LOCK] =
        {"jobs_lock",
         "SELECT x.ord, j.status, j.claim_token = x.token, coalesce(j.disposition, ''),"
         "  j.required_tool_failed,"
         "  " KEPT_ANSWER(
             "x.request") ", i.id, i.state,"
                          "  (i.state = 'claimed' AND i.current_job_id = j.id AND i.claim_token = "
                          "j.claim_token),"
                          "  i.failures, i.defers, i.max_attempts, "
                          "i.max_defers, " VD_SQL_REQUIRED_BLOCKED ","
                          /* claim_next claims for this flow step, worker and worker version */
                          "  j.flow_step_id, j.worker_id, j.worker_version"
                          " FROM (SELECT * FROM jsonb_to_recordset($1::jsonb)"
                          "       AS x(ord integer, job_id bigint, token uuid, request jsonb)) x"
                          " JOIN jobs j ON j.id = x.job_id JOIN items i ON i.id = j.item_id"
                          /* the ANY keeps the generic plan on jobs_pkey: a set-returning function
                           * is guessed at 100 rows, for which a hash join over a scan of jobs looks
                           * cheaper */
                          " WHERE j.id = ANY (ARRAY(SELECT (e->>'job_id')::bigint"
                          "                         FROM jsonb_array_elements($1::jsonb) e))"
                          " ORDER BY j.id FOR NO KEY UPDATE OF j"},

    /* Items, jobs, one transition each and the answers kept for replays, in one statement
     * (the transaction's last, sent with its COMMIT); $1 is one object per job with the
     * columns of VD_FINISH_COLUMNS (vd_store_jobs_finish). The answers are verdict_job_answer's.
     * The ANYs keep the generic plan on the primary keys (see jobs_lock). */
    [VD_SQL_JOBS_FINISH] =
        {"jobs_finish",
         "WITH " JOBS_FINISH_INPUT ","
         " ui AS ("
         "  UPDATE items i SET state = r.to_state, failures = r.failures, defers = r.defers,"
         "    available_at = CASE WHEN r.to_state = 'deferred'"
         "                        THEN now() + r.delay * interval '1 second'"
         "                        WHEN r.to_state = 'available' THEN now()"
         "                        ELSE i.available_at END,"
         "    lease_expires_at = NULL, claim_token = NULL, last_reason_code = r.reason_code,"
         "    last_reason = r.reason, updated_at = now()"
         "  FROM r JOIN item_sources s ON s.id = r.item_id"
         "  WHERE i.id = r.item_id AND i.id = ANY (ARRAY(SELECT item_id FROM r))"
         "  RETURNING i.id, verdict_item_json(i, s) AS item, i.state,"
         "    i.failures, i.defers, i.available_at),"
         " uj AS ("
         "  UPDATE jobs j SET status = r.job_status, finished_at = now(),"
         "    disposition = r.disposition, reason_code = r.reason_code, reason = r.reason,"
         "    disposition_trace_id = coalesce(r.trace_id, $2::text),"
         /* each end recorded by its job's row, in job id order (sql/migrations/0039) */
         "    finish_seq = sq.seq, finish_cause = r.cause, finish_to = r.to_state,"
         "    finish_forced = r.forced, finish_actor = r.actor,"
         "    finish_lint_overridden = r.lint_overridden, finish_evidence = r.evidence,"
         "    engine_data = j.engine_data || coalesce(r.engine_data, '{}'::jsonb),"
         "    adjudication = coalesce(r.adjudication::jsonb, j.adjudication),"
         /* kept compactly in the job's row, as job_finish keeps it */
         "    answer_digest = verdict_request_digest(r.request),"
         "    answer_tool_result_std = r.tool_result_std,"
         "    answer_head = verdict_answer_head(r.answer_disposition, r.answer_adjudication,"
         "      r.adjudication, CASE WHEN r.tool_result_std THEN NULL ELSE r.tool_result_text END,"
         "      r.tool_result_terminal),"
         "    answer_tail = verdict_answer_tail(r.answer_disposition, r.deprecation_hint)"
         /* a coalesced single call's claim_next: kept as job_finish keeps it */
         "      || CASE WHEN r.claims IS NULL THEN ''"
         "         ELSE ',\"claimed\":' || verdict_claimed_ids(r.claims) END,"
         "    answer_item_state = ui.state, answer_item_failures = ui.failures,"
         "    answer_item_defers = ui.defers, answer_item_available_at = ui.available_at"
         "  FROM r JOIN ui ON ui.id = r.item_id"
         "  JOIN (SELECT o.job_id, nextval('transitions_id_seq') AS seq"
         "        FROM (SELECT job_id FROM r ORDER BY job_id) o) sq ON sq.job_id = r.job_id"
         "  WHERE j.id = r.job_id AND j.id = ANY (ARRAY(SELECT job_id FROM r))"
         "  RETURNING j.id, verdict_job_json(j) AS job)"
         " SELECT r.job_id, CASE WHEN r.claims IS NULL THEN a.answer"
         "   ELSE left(a.answer, -1) || ',' || substr(r.claims, 2) END"
         " FROM r JOIN uj ON uj.id = r.job_id JOIN ui ON ui.id = r.item_id,"
         "   LATERAL (SELECT verdict_job_answer(r.answer_disposition, r.answer_adjudication,"
         "     r.adjudication, uj.job, ui.item, r.deprecation_hint, r.tool_result_text,"
         "     r.tool_result_terminal) AS answer) a"},

    [VD_SQL_JOB_GET] =
        {"job_get", "SELECT json_build_object('job', verdict_job_detail_json(j))::text FROM jobs j"
                    " WHERE j.id = $1"},

    /* A job with its item, when the claim token given is the job's (whatever its status): the
     * claim an MCP session is bound to (h_mcp.c). No row: no such job, or another's token. */
    [VD_SQL_JOB_CLAIMED] =
        {"job_claimed",
         "SELECT json_build_object('job', verdict_job_json(j), 'item',"
         "  verdict_item_json(i, s))::text"
         " FROM jobs j JOIN items i ON i.id = j.item_id JOIN item_sources s ON s.id = j.item_id"
         " WHERE j.id = $1 AND j.claim_token = $2::uuid"},

    /* As items_list: a window of at most VD_LIST_WINDOW jobs after $4. With an item ($8) the
     * jobs_of_item statements read that item's jobs from jobs_item instead. */
    [VD_SQL_JOBS_LIST] =
        {"jobs_list",
         "WITH w AS (SELECT max(id) AS hi, count(*) AS n FROM (SELECT id FROM jobs"
         "            WHERE id > $4 ORDER BY id LIMIT " VD_LIST_WINDOW ") b)"
         " SELECT json_build_object('jobs', coalesce(json_agg(verdict_job_json(s.j)"
         "   ORDER BY (s.j).id), '[]'::json),"
         "  'next_after', CASE WHEN count(*) = $5 THEN max((s.j).id)"
         "   WHEN (SELECT n FROM w) = " VD_LIST_WINDOW " THEN (SELECT hi FROM w) END)::text"
         " FROM (SELECT j FROM jobs j" JOBS_FILTER " AND j.id > $4 AND j.id <= (SELECT hi FROM w)"
         "       ORDER BY j.id LIMIT $5) s"},
    [VD_SQL_JOBS_LIST_DESC] =
        {"jobs_list_desc",
         "WITH w AS (SELECT min(id) AS lo, count(*) AS n FROM (SELECT id FROM jobs"
         "            WHERE id < " JOBS_BELOW " ORDER BY id DESC LIMIT " VD_LIST_WINDOW ") b)"
         " SELECT json_build_object('jobs', coalesce(json_agg(verdict_job_json(s.j)"
         "   ORDER BY (s.j).id DESC), '[]'::json),"
         "  'next_after', CASE WHEN count(*) = $5 THEN min((s.j).id)"
         "   WHEN (SELECT n FROM w) = " VD_LIST_WINDOW " THEN (SELECT lo FROM w) END)::text"
         " FROM (SELECT j FROM jobs j" JOBS_FILTER " AND j.id < " JOBS_BELOW
         "       AND j.id >= (SELECT lo FROM w) ORDER BY j.id DESC LIMIT $5) s"},
    /* One item's jobs (GET /v1/jobs?item_id=): a range of jobs_item, whole (an item has few). */
    [VD_SQL_JOBS_OF_ITEM] =
        {"jobs_of_item", "SELECT json_build_object('jobs', coalesce(json_agg(verdict_job_json(s.j)"
                         "   ORDER BY (s.j).id), '[]'::json),"
                         "  'next_after', CASE WHEN count(*) = $5 THEN max((s.j).id) END)::text"
                         " FROM (SELECT j FROM jobs j" JOBS_FILTER " AND j.item_id = $8"
                         "       AND j.id > $4 ORDER BY j.id LIMIT $5) s"},
    [VD_SQL_JOBS_OF_ITEM_DESC] =
        {"jobs_of_item_desc",
         "SELECT json_build_object('jobs', coalesce(json_agg(verdict_job_json(s.j)"
         "   ORDER BY (s.j).id DESC), '[]'::json),"
         "  'next_after', CASE WHEN count(*) = $5 THEN min((s.j).id) END)::text"
         " FROM (SELECT j FROM jobs j" JOBS_FILTER " AND j.item_id = $8"
         "       AND j.id < " JOBS_BELOW " ORDER BY j.id DESC LIMIT $5) s"},

    /* The change feed: audit rows after an id, oldest first, each with its item's flow step
     * and identifiers: FEED_SCAN joined to item_sources_pkey, until the page is full or the
     * scan stops. Its cost is the rows read after $1 (at most VD_FEED_WINDOW), never the size
     * of the history. next_after: the last id returned when the page is full, else the last
     * id scanned (or $1 when none), so a filter with few matches pages on through windows;
     * caught_up: the page is short and the scan stopped before its window's end (e's scan runs
     * only then: its uses are behind the page's count). */
    [VD_SQL_TRANSITIONS_FEED] =
        {"transitions_feed",
         "WITH e AS (SELECT count(*) AS n, max(w.id) AS hi FROM " FEED_SCAN " w)"
         " SELECT json_build_object('transitions', coalesce(json_agg(s.j ORDER BY s.id), "
         "'[]'::json),"
         "  'next_after', CASE WHEN count(*) = $3 THEN max(s.id)"
         "                     ELSE coalesce((SELECT hi FROM e), $1) END,"
         "  'caught_up', count(*) < $3 AND (SELECT n FROM e) < " VD_FEED_WINDOW ","
         "  'last_id', (SELECT coalesce(max(id), 0) FROM audit))::text"
         " FROM (SELECT w.id, verdict_audit_json(w.t)::jsonb || jsonb_build_object("
         "         'flow_step_id', s.flow_step_id, 'source_type', s.source_type,"
         "         'item_identifier', s.item_identifier) AS j"
         "       FROM " FEED_SCAN " w"
         "       JOIN item_sources s ON s.id = (w.t).item_id"
         "       WHERE $2::text IS NULL OR s.flow_step_id = $2"
         "       ORDER BY w.id LIMIT $3) s"},

    /* An admin decides a parked item (manual_review or failed -> processed or rejected).
     * Answers the state it was in and, when it was parked, the item and its transition. */
    [VD_SQL_RESOLVE_ONE] =
        {"resolve_one",
         "WITH cur AS (SELECT id, state FROM items WHERE id = $1 FOR UPDATE),"
         " u AS ("
         "  UPDATE items i SET state = verdict_transition(cur.state, 'resolve_' || $2::text),"
         "    last_reason_code = $3, last_reason = $4,"
         "    updated_at = now()"
         "  FROM cur JOIN item_sources s ON s.id = cur.id"
         "  WHERE i.id = cur.id AND cur.state IN ('manual_review', 'failed')"
         "  RETURNING i.id, verdict_item_json(i, s) AS item),"
         " t AS ("
         "  INSERT INTO transitions AS tr (item_id, from_state, to_state, cause, reason_code,"
         "                                 reason, actor)"
         "  SELECT u.id, cur.state, verdict_transition(cur.state, 'resolve_' || $2::text),"
         "         'resolve', $3, $4, $5 FROM u JOIN cur ON cur.id = u.id"
         "  RETURNING verdict_transition_json(tr) AS tj)"
         " SELECT cur.state, (SELECT json_build_object('item', u.item, 'transition', t.tj)::text"
         "                    FROM u, t) FROM cur"},

    /* Bulk resolve: up to $4 items of a flow step in one parked state (lowest ids first,
     * rows locked by others skipped); answers the ids resolved. */
    [VD_SQL_RESOLVE_BULK] =
        {"resolve_bulk",
         "WITH cur AS ("
         "  SELECT id, state FROM items"
         "  WHERE flow_step_id = $1 AND state = $2 AND state IN ('manual_review', 'failed')"
         "    AND ($3::text IS NULL OR last_reason_code = $3)"
         "  ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED),"
         " u AS ("
         "  UPDATE items i SET state = verdict_transition(cur.state, 'resolve_' || $5::text),"
         "    last_reason_code = $6, last_reason = $7,"
         "    updated_at = now()"
         "  FROM cur WHERE i.id = cur.id RETURNING i.id),"
         " t AS ("
         "  INSERT INTO transitions (item_id, from_state, to_state, cause, reason_code, reason,"
         "                           actor)"
         "  SELECT cur.id, cur.state, verdict_transition(cur.state, 'resolve_' || $5::text),"
         "         'resolve', $6, $7, $8 FROM cur)"
         " SELECT coalesce(json_agg(id ORDER BY id), '[]'::json)::text FROM u"},

    /* What a bulk requeue or resolve would select now (dry run): ids, lowest first. */
    [VD_SQL_ITEMS_SELECT] = {"items_select",
                             "SELECT coalesce(json_agg(id ORDER BY id), '[]'::json)::text FROM ("
                             "  SELECT id FROM items" BULK_FILTER " ORDER BY id LIMIT $4) s"},

    /* SPEC §1.3 "any but claimed -> available" (admin). Answers the state it was in and,
     * unless it was claimed, the requeued item. */
    [VD_SQL_REQUEUE_ONE] =
        {"requeue_one",
         "WITH cur AS (SELECT id, state FROM items WHERE id = $1 FOR UPDATE),"
         " u AS ("
         "  UPDATE items i SET state = verdict_transition(cur.state, 'requeue'),"
         "    available_at = now(),"
         "    failures = CASE WHEN $2 THEN 0 ELSE i.failures END,"
         "    defers = CASE WHEN $2 THEN 0 ELSE i.defers END,"
         "    last_reason_code = 'requeue', last_reason = $3, updated_at = now()"
         "  FROM cur JOIN item_sources s ON s.id = cur.id"
         "  WHERE i.id = cur.id AND cur.state <> 'claimed'"
         "  RETURNING i.id, i.flow_step_id, verdict_item_json(i, s) AS item),"
         " t AS ("
         "  INSERT INTO transitions (item_id, from_state, to_state, cause, reason_code, reason,"
         "                           actor)"
         "  SELECT u.id, cur.state, verdict_transition(cur.state, 'requeue'), 'requeue',"
         "         'requeue', $3, $4"
         "  FROM u JOIN cur ON cur.id = u.id)"
         " SELECT cur.state, (SELECT json_build_object('item', u.item)::text FROM "
         "u)," VD_SQL_ANNOUNCE("u", "") " FROM cur"},

    [VD_SQL_REQUEUE_BULK] =
        {"requeue_bulk",
         "WITH cur AS ("
         "  SELECT id, state FROM items" BULK_FILTER
         "  ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED),"
         " u AS ("
         "  UPDATE items i SET state = verdict_transition(cur.state, 'requeue'),"
         "    available_at = now(),"
         "    failures = CASE WHEN $9 THEN 0 ELSE i.failures END,"
         "    defers = CASE WHEN $9 THEN 0 ELSE i.defers END,"
         "    last_reason_code = 'requeue', last_reason = $10, updated_at = now()"
         "  FROM cur WHERE i.id = cur.id RETURNING i.id, i.flow_step_id),"
         " t AS ("
         "  INSERT INTO transitions (item_id, from_state, to_state, cause, reason_code, reason,"
         "                           actor)"
         "  SELECT u.id, cur.state, verdict_transition(cur.state, 'requeue'), 'requeue', 'requeue',"
         "         $10, $11"
         "  FROM u JOIN cur ON cur.id = u.id)"
         " SELECT coalesce(json_agg(id ORDER BY id), '[]'::json)::text, " VD_SQL_ANNOUNCE(
             "u", "") " FROM u"},

    /* An admin's release of a live claim (POST /v1/items/{id}/release): the item's state and
     * current job, read before the job and item are locked (job_lock, the disposition path's
     * order), then the release itself, sent with the COMMIT. The job keeps no answer: that is
     * how the holder's next write knows its claim was taken. */
    /* The holder's releases of an item since its last verdict (a disposition, a requeue or a
     * resolve): what VERDICT_MAX_RELEASES counts (transitions_item serves both scans). */
    [VD_SQL_ITEM_RELEASES] =
        {"item_releases",
         "SELECT count(*) FROM audit t WHERE t.item_id = $1 AND t.cause = 'release'"
         "   AND t.id > coalesce((SELECT max(v.id) FROM audit v WHERE v.item_id = $1"
         "     AND v.cause NOT IN ('register', 'claim', 'release', 'admin_release',"
         "                         'lease_expired')), 0)"},
    /* A reported success of tool $2 in job $1 clears its earlier failures in the job
     * (cleared_at): how many it cleared. */
    [VD_SQL_TOOL_SUCCESS] = {"tool_success",
                             "WITH u AS (UPDATE tool_failures SET cleared_at = now()"
                             "  WHERE job_id = $1 AND tool = $2 AND cleared_at IS NULL RETURNING 1)"
                             " SELECT count(*) FROM u"},
    /* Whether a tool failure still holds job $1's `complete` back (after tool_success). */
    [VD_SQL_TOOL_PENDING] = {"tool_pending",
                             "SELECT " VD_SQL_REQUIRED_BLOCKED " FROM jobs j WHERE j.id = $1"},
    /* What an MCP session's tools/list offers: whether the claim is live (the job processing,
     * holding its item, the lease not passed), whether a tool failed deterministically in the
     * job, whether a tool failure holds `complete` back, and the item. */
    [VD_SQL_MCP_OFFER] =
        {"mcp_offer",
         "SELECT j.status = 'processing' AND i.state = 'claimed' AND i.current_job_id = j.id"
         "   AND i.claim_token = j.claim_token AND coalesce(i.lease_expires_at > now(), false),"
         "  EXISTS (SELECT 1 FROM tool_failures f WHERE f.job_id = j.id"
         "          AND f.kind = 'deterministic'),"
         "  " VD_SQL_REQUIRED_BLOCKED ", j.item_id"
         " FROM jobs j JOIN items i ON i.id = j.item_id"
         " WHERE j.id = $1 AND j.claim_token = $2::uuid"},
    [VD_SQL_ITEM_CURRENT_JOB] =
        {"item_current_job", "SELECT state, coalesce(current_job_id, 0) FROM items WHERE id = $1"},
    [VD_SQL_ITEM_RELEASE] =
        {"item_release",
         "WITH ui AS ("
         "  UPDATE items i SET state = verdict_transition(i.state, 'admin_release'),"
         "    available_at = now(),"
         "    lease_expires_at = NULL, claim_token = NULL, last_reason_code = 'admin_release',"
         "    last_reason = $3, updated_at = now()"
         "  FROM item_sources s WHERE i.id = $1 AND s.id = $1"
         "  RETURNING i.flow_step_id, verdict_item_json(i, s) AS item),"
         " uj AS ("
         "  UPDATE jobs j SET status = 'released', finished_at = now(),"
         "    reason_code = 'admin_release', reason = $3"
         "  WHERE j.id = $2 RETURNING verdict_job_json(j) AS job),"
         " t AS ("
         "  INSERT INTO transitions (item_id, job_id, from_state, to_state, job_status, cause,"
         "                           reason_code, reason, actor)"
         "  VALUES ($1, $2, 'claimed', verdict_transition('claimed', 'admin_release'), 'released',"
         "          'admin_release', 'admin_release', $3, $4))"
         " SELECT json_build_object('job', uj.job, 'item', ui.item)::text,"
         "  '1 ' || ui.flow_step_id FROM ui, uj"},

    /* What a finish that makes its items claimable now (a release, a defer without delay)
     * announces; read in its transaction (vd_store_jobs_finish). $1 the items' ids. */
    [VD_SQL_CLAIMABLE_ANNOUNCE] = {"claimable_announce",
                                   "SELECT " VD_SQL_ANNOUNCE("items",
                                                             "WHERE id = ANY ($1::bigint[])")},
    /* The announcement itself (vd_sql_announce), after the commit, in a transaction of its
     * own that writes nothing; $1 the lines. */
    [VD_SQL_ANNOUNCE] = {"announce", "SELECT pg_notify('verdict_claimable', x)"
                                     " FROM unnest(string_to_array($1, E'\\n')) x WHERE x <> ''"},

    [VD_SQL_JOB_SET_ADJUDICATION] =
        {"job_set_adjudication",
         "WITH uj AS (UPDATE jobs j SET adjudication = $2::text::jsonb WHERE j.id = $1"
         "            RETURNING j.item_id, verdict_job_json(j) AS job)"
         " SELECT verdict_job_answer(NULL, true, $2::text, uj.job, verdict_item_json(i, s), NULL)"
         " FROM uj JOIN items i ON i.id = uj.item_id JOIN item_sources s ON s.id = uj.item_id"},

    /* SPEC session-outcome.md §6: the item's earlier adjudications, newest first. */
    [VD_SQL_PRIOR_ADJUDICATIONS] =
        {"prior_adjudications",
         "SELECT coalesce(json_agg(adjudication ORDER BY id DESC), '[]'::json)::text FROM jobs"
         " WHERE item_id = $1 AND id < $2 AND adjudication IS NOT NULL"},

    /* SPEC §8 /v1/stats from the counters of sql/migrations/0002_stats.sql, folded from the
     * transitions (the *_deltas views: the ones not folded yet, sql/migrations/0019): cost
     * independent of the number of items. Every state and status key is present, zero included. */
    [VD_SQL_STATS] =
        {"stats",
         "WITH fs AS (SELECT flow_step_id, paused FROM flow_steps"
         "            WHERE $1::text IS NULL OR flow_step_id = $1),"
         " ic AS (SELECT flow_step_id, state, sum(n) AS n FROM ("
         "   SELECT flow_step_id, state, n FROM item_counts"
         "   UNION ALL SELECT flow_step_id, state, delta FROM item_count_deltas) x"
         "   WHERE flow_step_id IN (SELECT flow_step_id FROM fs) GROUP BY 1, 2),"
         " jc AS (SELECT flow_step_id, status,"
         "   coalesce(sum(n) FILTER (WHERE minute >= date_trunc('minute', now()"
         "     - interval '1 hour')), 0) AS hour, sum(n) AS day FROM ("
         "   SELECT flow_step_id, status, minute, n FROM job_counts"
         "   UNION ALL SELECT flow_step_id, status, minute, delta FROM job_count_deltas) x"
         "   WHERE minute >= date_trunc('hour', now() - interval '1 day')"
         "     AND flow_step_id IN (SELECT flow_step_id FROM fs) GROUP BY 1, 2),"
         /* $2, $3: the item states and job statuses of domain.h */
         " states AS (SELECT unnest($2::text[]) AS s),"
         " statuses AS (SELECT unnest($3::text[]) AS s),"
         /* the model usage dispositions reported (sql/migrations/0038): per flow step (key '') and
            key */
         " us AS MATERIALIZED (SELECT * FROM verdict_usage_sums($1)),"
         " per AS (SELECT fs.flow_step_id, json_build_object("
         "   'flow_step_id', fs.flow_step_id, 'paused', fs.paused,"
         "   'items', (SELECT json_object_agg(st.s, coalesce((SELECT n FROM ic WHERE"
         "      ic.flow_step_id = fs.flow_step_id AND ic.state = st.s), 0)) FROM states st),"
         "   'jobs_last_hour', (SELECT json_object_agg(st.s, coalesce((SELECT hour FROM jc WHERE"
         "      jc.flow_step_id = fs.flow_step_id AND jc.status = st.s), 0)) FROM statuses st),"
         "   'jobs_last_day', (SELECT json_object_agg(st.s, coalesce((SELECT day FROM jc WHERE"
         "      jc.flow_step_id = fs.flow_step_id AND jc.status = st.s), 0)) FROM statuses st),"
         "   'oldest_claimable_age_seconds', (SELECT floor(extract(epoch FROM now()"
         "      - min(i.available_at)))::bigint FROM items i WHERE i.flow_step_id = fs.flow_step_id"
         "      AND i.state IN ('available', 'deferred') AND i.available_at <= now()),"
         "   'stuck_claims', (SELECT count(*) FROM items i WHERE i.flow_step_id = fs.flow_step_id"
         "      AND i.state = 'claimed' AND i.lease_expires_at < now()),"
         "   'usage', (SELECT json_build_object('jobs', coalesce(sum(us.jobs), 0),"
         "      'input_tokens', coalesce(sum(us.input_tokens), 0),"
         "      'output_tokens', coalesce(sum(us.output_tokens), 0),"
         "      'cost_usd', coalesce(sum(us.cost_usd), 0)) FROM us"
         "      WHERE us.flow_step_id = fs.flow_step_id AND us.key = '')) AS j FROM fs),"
         " uk AS (SELECT json_build_object('key', us.key, 'jobs', sum(us.jobs),"
         "   'input_tokens', sum(us.input_tokens), 'output_tokens', sum(us.output_tokens),"
         "   'cost_usd', sum(us.cost_usd)) AS j, us.key FROM us"
         "   WHERE us.key <> '' AND us.flow_step_id IN (SELECT flow_step_id FROM fs)"
         "   GROUP BY us.key)"
         " SELECT json_build_object('generated_at', verdict_ts(now()),"
         "  'flow_steps', coalesce((SELECT json_agg(j ORDER BY flow_step_id) FROM per), "
         "'[]'::json),"
         "  'usage_by_key', coalesce((SELECT json_agg(uk.j ORDER BY uk.key) FROM uk), '[]'::json),"
         "  'totals', json_build_object('items', (SELECT json_object_agg(st.s, coalesce("
         "     (SELECT sum(n) FROM ic WHERE ic.state = st.s), 0)) FROM states st),"
         "   'usage', (SELECT json_build_object('jobs', coalesce(sum(us.jobs), 0),"
         "      'input_tokens', coalesce(sum(us.input_tokens), 0),"
         "      'output_tokens', coalesce(sum(us.output_tokens), 0),"
         "      'cost_usd', coalesce(sum(us.cost_usd), 0)) FROM us"
         "      WHERE us.key = '' AND us.flow_step_id IN (SELECT flow_step_id FROM fs))))::text"},

    /* The samples of the database-derived /metrics families, one row each: (family, label a,
     * label b, value), families numbered as vd_db_family; $1 is the item states (domain.h).
     * Rendering them is the http layer's (metrics.c). */
    [VD_SQL_METRICS] =
        {"metrics",
         "WITH ic AS (SELECT flow_step_id, state, sum(n) AS n FROM ("
         "   SELECT flow_step_id, state, n FROM item_counts"
         "   UNION ALL SELECT flow_step_id, state, delta FROM item_count_deltas) x GROUP BY 1, 2),"
         " tc AS (SELECT cause, to_state, sum(n) AS n FROM ("
         "   SELECT cause, to_state, n FROM transition_counts"
         "   UNION ALL SELECT cause, to_state, delta FROM transition_count_deltas) x"
         "   GROUP BY 1, 2),"
         " states AS (SELECT unnest($1::text[]) AS s)"
         " SELECT 0, f.flow_step_id, st.s, coalesce((SELECT n FROM ic"
         "   WHERE ic.flow_step_id = f.flow_step_id AND ic.state = st.s), 0)"
         "  FROM flow_steps f CROSS JOIN states st"
         " UNION ALL SELECT 1, cause, to_state, n FROM tc"
         /* both per flow step from partial indexes: items_leases, items_claimable_age */
         " UNION ALL SELECT 2, f.flow_step_id, NULL, coalesce(sc.n, 0)"
         "  FROM flow_steps f LEFT JOIN (SELECT flow_step_id, count(*) AS n FROM items"
         "    WHERE state = 'claimed' AND lease_expires_at < now() GROUP BY 1) sc"
         "    ON sc.flow_step_id = f.flow_step_id"
         " UNION ALL SELECT 3, f.flow_step_id, NULL,"
         "  coalesce((SELECT floor(extract(epoch FROM now() - min(i.available_at)))::bigint"
         "   FROM items i WHERE i.flow_step_id = f.flow_step_id"
         "   AND i.state IN ('available', 'deferred') AND i.available_at <= now()), 0)"
         "  FROM flow_steps f"
         /* every (flow step, tool) that had an incident: 0 once all are resolved */
         " UNION ALL SELECT 4, flow_step_id, tool, count(*) FILTER (WHERE state = 'open')"
         "  FROM tool_incidents GROUP BY 2, 3"
         /* flow control (sql/migrations/0032_flow_control.sql), per limit key */
         " UNION ALL SELECT 5, l.key, NULL, (SELECT count(*) FROM limit_lanes c"
         "   CROSS JOIN LATERAL unnest(c.holders) h JOIN jobs j ON j.id = h"
         "   WHERE c.key = l.key AND j.status = 'processing') FROM limits l"
         " UNION ALL SELECT 6, l.key, NULL, coalesce((l.throttled_until > now())::int, 0)"
         "  FROM limits l"
         " UNION ALL SELECT 7, l.key, NULL, (SELECT coalesce(sum(c.used_total), 0)"
         "   FROM limit_lanes c WHERE c.key = l.key) FROM limits l"
         /* the model usage reported, per flow step (sql/migrations/0038: counters + unfolded rows)
          */
         " UNION ALL SELECT 8, f.flow_step_id, NULL, coalesce((SELECT sum(u.input_tokens"
         "   + u.output_tokens) FROM verdict_usage_sums(f.flow_step_id) u WHERE u.key = ''), 0)"
         "  FROM flow_steps f"
         /* the review queue (items_flow_state, then each item's latest transition) */
         " UNION ALL SELECT 9 + k.k, f.flow_step_id, NULL,"
         "  CASE WHEN k.k = 0 THEN rq.n ELSE rq.oldest END"
         "  FROM flow_steps f CROSS JOIN LATERAL (SELECT count(*) AS n, coalesce(floor(extract("
         "     epoch FROM now() - min(lt.at)))::bigint, 0) AS oldest"
         "    FROM items i CROSS JOIN LATERAL (SELECT t.cause, t.at FROM audit t"
         "      WHERE t.item_id = i.id ORDER BY t.id DESC LIMIT 1) lt"
         "    WHERE i.flow_step_id = f.flow_step_id AND i.state = 'manual_review'"
         "      AND lt.cause = 'request_review') rq"
         "  CROSS JOIN (VALUES (0), (1)) k(k)"
         " ORDER BY 1, 2, 3"},

    [VD_SQL_COMPACT_COUNTS] = {"compact_counts",
                               "SELECT verdict_compact_counts(), verdict_rollup_job_counts(),"
                               " verdict_fold_usage()"},

    /* Retention (VERDICT_RETENTION_DAYS): history of done items only, in small batches. Both
     * start from the BRIN index of the row's age (nothing old: a few blocks read) and look the
     * item up per candidate (a sub-select, which PostgreSQL keeps a per-row lookup instead of
     * joining all items; sql/migrations/0027_retention_by_age.sql). */
    [VD_SQL_RETENTION_TRANSITIONS] =
        {"retention_transitions",
         "DELETE FROM transitions WHERE id = ANY (ARRAY("
         "  SELECT t.id FROM transitions t"
         "  WHERE t.logged_at < now() - $1 * interval '1 day'"
         "    AND t.at < now() - $1 * interval '1 day'"
         "    AND (SELECT i.state IN ('processed', 'rejected')"
         "                AND i.updated_at < now() - $1 * interval '1 day'"
         "         FROM items i WHERE i.id = t.item_id)"
         "  LIMIT $2))"
         /* never a row the counters have not taken yet
          * (sql/migrations/0019_counts_from_transitions.sql); checked on the rows found (inside,
          * the generic plan walked the primary key up to it: 0.3 s over 400,000 transitions) */
         "  AND id <= (SELECT transition_id FROM counts_folded)"},
    /* an item whose current job goes forgets it; jobs go after their item's transitions
     * (sql/migrations/0022: no foreign key does either) */
    [VD_SQL_RETENTION_JOBS] =
        {"retention_jobs",
         "WITH d AS (DELETE FROM jobs WHERE id = ANY (ARRAY("
         "  SELECT j.id FROM jobs j"
         "  WHERE j.claimed_at < now() - $1 * interval '1 day'"
         "    AND j.finished_at < now() - $1 * interval '1 day'"
         /* never a job whose end (sql/migrations/0039) the counters have not taken yet */
         "    AND coalesce(j.finish_seq, 0) <= (SELECT transition_id FROM counts_folded)"
         "    AND (SELECT i.state IN ('processed', 'rejected')"
         "                AND i.updated_at < now() - $1 * interval '1 day'"
         /* never a job a transition still names (sql/migrations/0022) */
         "                AND NOT EXISTS (SELECT 1 FROM transitions t WHERE t.item_id = i.id)"
         "         FROM items i WHERE i.id = j.item_id)"
         "  LIMIT $2)) RETURNING id, item_id),"
         " u AS (UPDATE items SET current_job_id = NULL FROM d"
         "       WHERE items.id = d.item_id AND items.current_job_id = d.id),"
         /* a lane naming a job that is gone would count it as holding for ever
          * (sql/migrations/0044); the lanes are locked in id order, as a disposition's usage
          * locks them */
         " s AS (UPDATE limit_lanes SET holders = ARRAY(SELECT h FROM unnest(holders) h"
         "         WHERE h <> ALL (ARRAY(SELECT id FROM d)))"
         "       WHERE id IN (SELECT x.id FROM limit_lanes x"
         "         WHERE x.holders && ARRAY(SELECT id FROM d) ORDER BY x.id FOR UPDATE))"
         " SELECT id FROM d"},
    /* What the rejection lint (service/lint.c) needs of a job, read in the finishing
     * transaction after the job is locked: a deterministic tool failure, a retriable last
     * adjudication, the flow step's strict mode, and whether $2 (evidence, may be NULL) is
     * quoted in the item's payload (verdict_payload_quotes,
     * sql/migrations/0015_rejection_lint.sql). */
    [VD_SQL_REJECT_FACTS] =
        {"reject_facts",
         "SELECT EXISTS (SELECT 1 FROM tool_failures f"
         "               WHERE f.job_id = j.id AND f.kind = 'deterministic'),"
         "  coalesce(j.adjudication->>'outcome' = 'retriable'"
         "           OR j.adjudication->>'needs_retry' = 'true', false),"
         "  coalesce(s.strict_evidence, false),"
         "  $2::text IS NOT NULL AND verdict_payload_quotes(src.payload, $2::text),"
         /* the error texts of the item's tool failures, any job, newest first (at most 50) */
         "  (SELECT json_agg(x.error) FROM (SELECT f.error FROM jobs pj"
         "     JOIN tool_failures f ON f.job_id = pj.id WHERE pj.item_id = j.item_id"
         "     ORDER BY f.id DESC LIMIT 50) x)::text"
         " FROM jobs j JOIN item_sources src ON src.id = j.item_id"
         " LEFT JOIN flow_steps s ON s.flow_step_id = j.flow_step_id WHERE j.id = $1"},

    /* GET /v1/jobs/{id}/briefing: the job and the item's 20 attempts before it, oldest
     * first, each with its tool failures per tool (deterministic when any was; the last
     * error, a deterministic one first). */
    [VD_SQL_BRIEFING] =
        {"briefing",
         "SELECT json_build_object('job_id', j.id, 'item_id', j.item_id, 'attempt', j.attempt,"
         "  'attempts', coalesce((SELECT json_agg(json_build_object("
         "    'job_id', p.id, 'attempt', p.attempt, 'status', p.status,"
         "    'disposition', p.disposition, 'reason_code', p.reason_code, 'reason', p.reason,"
         "    'finished_at', verdict_ts(p.finished_at),"
         "    'tool_failures', coalesce((SELECT json_agg(json_build_object("
         "        'tool', x.tool, 'kind', x.kind, 'count', x.n, 'last_error', x.last_error)"
         "        ORDER BY x.tool)"
         "      FROM (SELECT f.tool, count(*) AS n,"
         "              CASE WHEN bool_or(f.kind = 'deterministic') THEN 'deterministic'"
         "                   ELSE 'transient' END AS kind,"
         "              (array_agg(f.error ORDER BY f.kind = 'deterministic' DESC, f.id DESC))[1]"
         "                AS last_error"
         "            FROM tool_failures f WHERE f.job_id = p.id GROUP BY f.tool) x),"
         "      '[]'::json)) ORDER BY p.id)"
         "   FROM (SELECT * FROM jobs q WHERE q.item_id = j.item_id AND q.id < j.id"
         "         ORDER BY q.id DESC LIMIT 20) p), '[]'::json),"
         "  'review', verdict_item_review(j.item_id))::text"
         " FROM jobs j WHERE j.id = $1"},

    /* Tooling incidents (sql/migrations/0014_tool_incidents.sql, service/incidents.c). The open
     * incident of a flow step ($1, or the flow step of item $2), the one of tool $3 first. */
    [VD_SQL_INCIDENT_OPEN] =
        {"incident_open", "SELECT t.id, t.tool, t.items FROM tool_incidents t"
                          " WHERE t.state = 'open'"
                          "   AND t.flow_step_id = coalesce($1, (SELECT i.flow_step_id FROM items i"
                          "                                      WHERE i.id = $2::bigint))"
                          " ORDER BY (t.tool = $3 OR $3 = ANY (t.tools)) DESC NULLS LAST,"
                          "   t.items DESC, t.id LIMIT 1"},

    /* The decisions of one template one at a time, until the transaction ends: the count
     * that follows then sees every failure committed before (READ COMMITTED takes a new
     * snapshot per statement), so concurrent failures neither miss the threshold nor open
     * two incidents (the unique index tool_incidents_open_template is the backstop). */
    [VD_SQL_INCIDENT_LOCK] = {"incident_lock",
                              "SELECT pg_advisory_xact_lock(hashtextextended("
                              "  concat_ws(chr(1), 'verdict.incident', $1::text, $2::text), 0))"},

    /* $1 flow step, $2 tool, $3 template id, $4 item, $5 window (minutes), $6 min items,
     * $7 pause the flow step when this opens one, $8 sample error, $9 the template's text.
     * Links the item (and the tool) to the open incident of the template, or opens one with
     * every item and tool of the window (tool_failures_template). Answers the incident (0:
     * none) and whether this statement opened it. */
    [VD_SQL_INCIDENT_NOTE] =
        {"incident_note",
         "WITH o AS (SELECT id FROM tool_incidents WHERE flow_step_id = $1"
         "           AND template_id = $3::bigint AND state = 'open'),"
         " w AS (SELECT f.item_id, f.at, f.tool FROM tool_failures f"
         "       WHERE f.flow_step_id = $1 AND f.template_id = $3::bigint AND f.counted"
         "         AND f.at >= now() - $5 * interval '1 minute'),"
         " s AS (SELECT DISTINCT item_id FROM w WHERE item_id IS NOT NULL),"
         " ins AS ("
         "  INSERT INTO tool_incidents (flow_step_id, tool, signature, sample_error, items,"
         "                              first_seen, template_id, template, tools)"
         "  SELECT $1, $2, $9, $8, (SELECT count(*) FROM s), (SELECT min(at) FROM w),"
         "         $3::bigint, $9, (SELECT array_agg(DISTINCT tool ORDER BY tool) FROM w)"
         "  WHERE NOT EXISTS (SELECT 1 FROM o) AND (SELECT count(*) FROM s) >= $6"
         "  ON CONFLICT (flow_step_id, template_id) WHERE state = 'open' DO NOTHING"
         "  RETURNING id),"
         " li AS (INSERT INTO tool_incident_items (incident_id, item_id)"
         "        SELECT ins.id, s.item_id FROM ins, s ON CONFLICT DO NOTHING),"
         " lo AS (INSERT INTO tool_incident_items (incident_id, item_id)"
         "        SELECT o.id, $4 FROM o ON CONFLICT DO NOTHING RETURNING incident_id),"
         " uo AS (UPDATE tool_incidents t SET last_seen = now(),"
         "          items = t.items + (SELECT count(*) FROM lo),"
         "          tools = CASE WHEN $2 = ANY (t.tools) THEN t.tools ELSE t.tools || $2 END"
         "        FROM o WHERE t.id = o.id RETURNING t.id),"
         " p AS (UPDATE flow_steps fs SET paused = true, updated_at = now()"
         "       WHERE fs.flow_step_id = $1 AND $7 AND NOT fs.paused"
         "         AND EXISTS (SELECT 1 FROM ins))"
         " SELECT coalesce((SELECT id FROM ins), (SELECT id FROM uo), 0),"
         "        EXISTS (SELECT 1 FROM ins)"},

    /* The failure of item $2 through tool $3 joins open incident $1 (its template's): link the
     * item and the tool. No row when the incident is no longer open. */
    [VD_SQL_INCIDENT_LINK] =
        {"incident_link",
         "WITH l AS (INSERT INTO tool_incident_items (incident_id, item_id)"
         "           SELECT $1::bigint, $2::bigint WHERE EXISTS (SELECT 1 FROM tool_incidents"
         "             WHERE id = $1::bigint AND state = 'open')"
         "           ON CONFLICT DO NOTHING RETURNING incident_id)"
         " UPDATE tool_incidents t SET last_seen = now(), items = t.items + (SELECT count(*) FROM "
         "l),"
         "   tools = CASE WHEN $3 = ANY (t.tools) THEN t.tools ELSE t.tools || $3 END"
         " WHERE t.id = $1::bigint AND t.state = 'open' RETURNING t.id, t.tool, t.items"},

    /* GET /v1/tool-incidents: keyset pagination by id ($3 after, $4 limit). */
    [VD_SQL_INCIDENTS_LIST] =
        {"incidents_list",
         "SELECT json_build_object('tool_incidents',"
         "  coalesce(json_agg(verdict_tool_incident_json(s.t) ORDER BY (s.t).id), '[]'::json),"
         "  'next_after', CASE WHEN count(*) = $4 THEN max((s.t).id) END)::text"
         " FROM (SELECT t FROM tool_incidents t"
         "       WHERE ($1::text IS NULL OR t.state = $1)"
         "         AND ($2::text IS NULL OR t.flow_step_id = $2) AND t.id > $3"
         "       ORDER BY t.id LIMIT $4) s"},

    [VD_SQL_INCIDENT_GET] =
        {"incident_get",
         "SELECT json_build_object('tool_incident', verdict_tool_incident_json(t)::jsonb"
         "  || jsonb_build_object('affected_items', (SELECT coalesce(jsonb_agg("
         "       jsonb_build_object('id', i.id, 'item_identifier', s.item_identifier,"
         "                          'state', i.state) ORDER BY i.id), '[]'::jsonb)"
         "     FROM tool_incident_items x JOIN items i ON i.id = x.item_id"
         "     JOIN item_sources s ON s.id = x.item_id"
         "     WHERE x.incident_id = t.id)))::text"
         " FROM tool_incidents t WHERE t.id = $1"},

    /* Lock the incident and resolve it when open: answers its state before (no row: no such
     * incident). */
    [VD_SQL_INCIDENT_CLOSE] =
        {"incident_close",
         "WITH cur AS (SELECT id, state FROM tool_incidents WHERE id = $1 FOR UPDATE),"
         " u AS (UPDATE tool_incidents t SET state = 'resolved', resolved_at = now(),"
         "         resolved_by = $3, resolve_reason = $2"
         "       FROM cur WHERE t.id = cur.id AND cur.state = 'open')"
         " SELECT state FROM cur"},

    /* After incident_close, in its transaction: back to available (like requeue_one, one
     * transition each) every linked item that is deferred, failed, manual_review or
     * rejected, and every item of the flow step rejected while it was open ($4: requeue at
     * all). Items locked in id order; a claimed item is left alone. */
    [VD_SQL_INCIDENT_REQUEUE] =
        {"incident_requeue",
         "WITH inc AS (SELECT * FROM tool_incidents WHERE id = $1),"
         " cand AS ("
         "  SELECT x.item_id AS id FROM tool_incident_items x WHERE x.incident_id = $1"
         "  UNION SELECT tr.item_id FROM audit tr JOIN items it ON it.id = tr.item_id,"
         "   inc WHERE it.flow_step_id = inc.flow_step_id AND tr.to_state = 'rejected'"
         /* logged_at >= at (clock_timestamp() vs the transaction's now()): the BRIN index
          * transitions_logged_at finds the recent rows (transitions_at is gone, 0018) */
         "     AND tr.at >= inc.opened_at AND tr.logged_at >= inc.opened_at),"
         " cur AS (SELECT i.id, i.state FROM items i"
         "         WHERE $4 AND i.id IN (SELECT id FROM cand)"
         "           AND i.state IN ('deferred', 'failed', 'manual_review', 'rejected')"
         "         ORDER BY i.id FOR UPDATE),"
         " u AS ("
         "  UPDATE items i SET state = verdict_transition(cur.state, 'requeue'),"
         "    available_at = now(),"
         "    last_reason_code = 'requeue', last_reason = $2, updated_at = now()"
         "  FROM cur WHERE i.id = cur.id RETURNING i.id, i.flow_step_id),"
         " t AS ("
         "  INSERT INTO transitions (item_id, from_state, to_state, cause, reason_code, reason,"
         "                           actor)"
         "  SELECT cur.id, cur.state, verdict_transition(cur.state, 'requeue'), 'requeue',"
         "         'requeue', $2, $3 FROM cur)"
         " SELECT json_build_object('tool_incident', verdict_tool_incident_json(inc),"
         "  'requeued', (SELECT coalesce(json_agg(id ORDER BY id), '[]'::json) FROM "
         "u))::text," VD_SQL_ANNOUNCE("u", "") " FROM inc"},

    /* Failure templates (sql/migrations/0030, service/templates.c). The joins of one (flow step,
     * shape) one at a time across replicas, until the transaction ends; sent in one pipeline with
     * the candidates that follow, so they are read after the lock. */
    [VD_SQL_TEMPLATE_LOCK] = {"template_lock",
                              "SELECT pg_advisory_xact_lock(hashtextextended("
                              "  concat_ws(chr(1), 'verdict.template', $1::text, $2::text), 0))"},

    /* The templates of ($1 flow step, $2 shape), each with the earlier failures of job $3
     * that joined it (of tool $4, and of any tool: the loop guard and recurrence) and its open
     * incident (0: none), read here so that they cost no round trip of their own. */
    [VD_SQL_TEMPLATE_CANDIDATES] =
        {"template_candidates",
         "SELECT t.id, t.template, c.same_tool, c.same_job,"
         "       coalesce((SELECT i.id FROM tool_incidents i WHERE i.flow_step_id = $1"
         "                 AND i.template_id = t.id AND i.state = 'open'), 0)"
         " FROM failure_templates t"
         " CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE f.tool = $4) AS same_tool,"
         "                            count(*) AS same_job FROM tool_failures f"
         "                     WHERE f.job_id = $3::bigint AND f.template_id = t.id) c"
         " WHERE t.flow_step_id = $1 AND t.shape = $2 ORDER BY t.id LIMIT 256"},

    /* A template whose text changed ($1 id, $2 text): sent deferred with the failure's insert. */
    [VD_SQL_TEMPLATE_UPDATE] = {"template_update",
                                "UPDATE failure_templates SET template = $2, updated_at = now()"
                                " WHERE id = $1::bigint"},

    /* A new template of ($1 flow step, $2 shape) with text $3: its id. */
    [VD_SQL_TEMPLATE_INSERT] = {"template_insert",
                                "INSERT INTO failure_templates (flow_step_id, shape, template)"
                                " VALUES ($1, $2, $3) RETURNING id"},

    /* A tool failure with $9 its template and $10 whether it counts toward incidents; it marks
     * the job when the tool is required ($6), and answers the failure's id. */
    [VD_SQL_TOOL_FAILURE_INSERT_TEMPLATE] =
        {"tool_failure_insert_template",
         "WITH j AS (SELECT id, item_id, flow_step_id FROM jobs WHERE id = $1),"
         " f AS (INSERT INTO tool_failures (job_id, tool, args, kind, retryable, required,"
         "                                  error, item_id, flow_step_id, signature,"
         "                                  template_id, counted)"
         "       SELECT $1, $2, $3, $4, $5, $6, $7, j.item_id, j.flow_step_id, $8, $9::bigint,"
         "              $10 FROM j"
         "       RETURNING id, job_id),"
         " u AS (UPDATE jobs SET required_tool_failed = true FROM f"
         "       WHERE jobs.id = f.job_id AND $6)"
         " SELECT id FROM f"},

    /* A failure found deterministic after its insert (its template's incident is open). */
    [VD_SQL_TOOL_FAILURE_FINAL] = {"tool_failure_final",
                                   "UPDATE tool_failures SET kind = 'deterministic',"
                                   " retryable = false WHERE id = $1::bigint"},
    /* Limits per key (sql/migrations/0032_flow_control.sql): PUT sets every setting ($2
     * concurrency, $3 per (seconds), $4 count, $5 burst, $6 tokens per minute; NULL: none) and the
     * cells. */
    [VD_SQL_LIMIT_PUT] = {"limit_put", "SELECT verdict_limit_put($1, $2::int, $3::int, $4::int,"
                                       " $5::int, $6::bigint)"},
    [VD_SQL_LIMIT_GET] = {"limit_get",
                          "SELECT json_build_object('limit', verdict_limit_json(l))::text"
                          " FROM limits l WHERE l.key = $1"},
    [VD_SQL_LIMITS_LIST] = {"limits_list", "SELECT json_build_object('limits',"
                                           " coalesce(json_agg(verdict_limit_json(l) ORDER BY"
                                           " l.key), '[]'::json))::text FROM limits l"},
    [VD_SQL_LIMIT_DELETE] = {"limit_delete", "DELETE FROM limits WHERE key = $1"
                                             " RETURNING json_build_object('deleted', key)::text"},
    /* $2 retry_after_seconds, $3 reason, $4 the cap of a grown pause */
    [VD_SQL_LIMIT_BACKOFF] = {"limit_backoff",
                              "SELECT verdict_limit_backoff($1, $2::int, $3, $4::int)"},
    /* a disposition's usage of job $1 ($2 input, $3 output tokens, $4 cost, $5 model): true
     * when the item's summed usage passes its flow step's budget */
    [VD_SQL_JOB_USAGE] = {"job_usage", "SELECT verdict_job_usage($1::bigint, $2::bigint,"
                                       " $3::bigint, $4::numeric, $5)"},
    /* a flow step's cost budget ($2 tokens, $3 dollars; NULL keeps, 0 removes) */
    [VD_SQL_FLOW_STEP_BUDGETS] =
        {"flow_step_budgets",
         "UPDATE flow_steps f SET"
         "  max_item_tokens = CASE WHEN $2::bigint IS NULL THEN f.max_item_tokens"
         "   WHEN $2::bigint > 0 THEN $2::bigint END,"
         "  max_item_cost_usd = CASE WHEN $3::numeric IS NULL THEN f.max_item_cost_usd"
         "   WHEN $3::numeric > 0 THEN $3::numeric END, updated_at = now()"
         " WHERE f.flow_step_id = $1"
         " RETURNING json_build_object('flow_step', verdict_flow_step_json(f)::jsonb"
         "  || jsonb_build_object('max_item_tokens', f.max_item_tokens,"
         "                        'max_item_cost_usd', f.max_item_cost_usd))::text"},
    /* a flow step's fair key ($2; NULL: none): sql/migrations/0037_priority_fairness.sql */
    [VD_SQL_FLOW_STEP_FAIR_KEY] = {"flow_step_fair_key",
                                   "SELECT verdict_fair_key_set($1, $2) IS NULL"},
    /* seconds until every key of job $1 is open again (rate_limited deferrals) */
    [VD_SQL_JOB_REOPEN_SECONDS] = {"job_reopen_seconds",
                                   "SELECT verdict_job_reopen_seconds($1::bigint)"},

    /* An editor answers an item in manual_review (POST /v1/items/{id}/review): $2 the state it
     * goes to (available: retry; processed; rejected), $3 the answer, $4 the editor. One
     * transition of cause review, its reason the answer; the claim and the briefing read it
     * back (verdict_item_review). Answers the state it was in and, when it was in
     * manual_review, the item and the transition. */
    [VD_SQL_REVIEW_ONE] =
        {"review_one",
         "WITH cur AS (SELECT id, state FROM items WHERE id = $1 FOR UPDATE),"
         " u AS ("
         "  UPDATE items i SET state = verdict_transition(cur.state, 'review_' || $2::text),"
         "    available_at = CASE WHEN $2 = 'available' THEN now() ELSE i.available_at END,"
         "    last_reason_code = 'review_answered', last_reason = $3, updated_at = now()"
         "  FROM cur JOIN item_sources s ON s.id = cur.id"
         "  WHERE i.id = cur.id AND cur.state = 'manual_review'"
         "  RETURNING i.id, i.flow_step_id, i.state, verdict_item_json(i, s) AS item),"
         " t AS ("
         "  INSERT INTO transitions AS tr (item_id, from_state, to_state, cause, reason_code,"
         "                                 reason, actor)"
         "  SELECT u.id, 'manual_review', u.state, 'review', 'review_answered', $3, $4 FROM u"
         "  RETURNING verdict_transition_json(tr) AS tj)"
         " SELECT cur.state, (SELECT json_build_object('item', u.item, 'transition', t.tj)::text"
         "                    FROM u, t)," VD_SQL_ANNOUNCE(
             "u", "WHERE state = 'available'") " FROM cur"},

    /* The review queue (GET /v1/reviews): items in manual_review of flow step $1 (NULL: any),
     * each with the question of its latest request_review when that is its latest change,
     * oldest first; and per flow step the items waiting, the questions among them and the
     * age of the oldest question. */
    [VD_SQL_REVIEWS_LIST] =
        {"reviews_list",
         "WITH w AS ("
         "  SELECT i.id, s.flow_step_id, s.item_identifier, i.updated_at,"
         "    CASE WHEN lt.cause = 'request_review' THEN lt.reason END AS question,"
         "    CASE WHEN lt.cause = 'request_review' THEN lt.at END AS asked_at,"
         "    lt.job_id, lt.actor"
         "  FROM items i JOIN item_sources s ON s.id = i.id"
         "  CROSS JOIN LATERAL (SELECT t.cause, t.reason, t.at, t.job_id, t.actor"
         "    FROM audit t WHERE t.item_id = i.id ORDER BY t.id DESC LIMIT 1) lt"
         "  WHERE i.state = 'manual_review' AND ($1::text IS NULL OR s.flow_step_id = $1))"
         " SELECT json_build_object("
         "  'flow_steps', (SELECT coalesce(json_agg(json_build_object("
         "     'flow_step_id', g.flow_step_id, 'waiting', g.waiting, 'questions', g.questions,"
         "     'oldest_question_age_seconds', g.oldest) ORDER BY g.flow_step_id), '[]'::json)"
         "   FROM (SELECT flow_step_id, count(*) AS waiting, count(question) AS questions,"
         "           floor(extract(epoch FROM now() - min(asked_at)))::bigint AS oldest"
         "         FROM w GROUP BY flow_step_id) g),"
         "  'reviews', (SELECT coalesce(json_agg(json_build_object("
         "     'item_id', x.id, 'flow_step_id', x.flow_step_id,"
         "     'item_identifier', x.item_identifier, 'question', x.question,"
         "     'asked_at', verdict_ts(x.asked_at), 'asked_by', CASE WHEN x.question IS NOT NULL"
         "       THEN x.actor END, 'job_id', CASE WHEN x.question IS NOT NULL THEN x.job_id END,"
         "     'waiting_since', verdict_ts(x.updated_at))"
         "     ORDER BY x.asked_at NULLS LAST, x.id), '[]'::json)"
         "   FROM (SELECT * FROM w ORDER BY asked_at NULLS LAST, id LIMIT $2) x))::text"},

    /* OTLP span links of a claim (docs/decisions/0064-retry-span-links.md): for each job of
     * $1 (the claim's job ids), the claim trace and span of its item's most recent earlier
     * job, as 48 hex digits (trace then span), comma-separated; "" when none has one. */
    [VD_SQL_CLAIM_LINKS] =
        {"claim_links",
         "SELECT coalesce(string_agg(p.claim_trace_id || p.claim_span_id, ',' ORDER BY j.id), '')"
         " FROM jobs j CROSS JOIN LATERAL (SELECT e.claim_trace_id, e.claim_span_id FROM jobs e"
         "   WHERE e.item_id = j.item_id AND e.id < j.id ORDER BY e.id DESC LIMIT 1) p"
         " WHERE j.id = ANY ($1::bigint[]) AND p.claim_span_id IS NOT NULL"},
};
