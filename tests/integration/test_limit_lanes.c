/* test_limit_lanes.c - what the lanes of a limit key add (sql/migrations/0044_limit_lanes.sql,
 * docs/decisions/0092-limit-lanes.md): a limit smaller than 8 has as many lanes as it allows,
 * one claim after another walks past full lanes until the key is full; a PUT that lowers the
 * concurrency while jobs hold slots deals them over the new lanes, so that no claim passes
 * before enough of them end; a run of items takes one lane per key (one row write per key,
 * counted from the statistics and from the rows the claim's transaction wrote); a run larger
 * than any lane's room is split over lanes; and the coarse case the decision documents: room
 * of one kind in one lane and of another kind in another refuses a claim that the key as a
 * whole would have room for, until a holder ends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store_internal.h"
#include "verdict/util.h"
#include "vt.h"
#include "vt_api.h"

static vt_server srv;

VT_FIXTURE(.srv = {&srv})

/* A claim of up to limit items of flow with keys (a JSON array text) and the token estimate
 * (negative: none); fills out (sorted by job id) and returns how many. */
static int claim(const char *flow, int limit, const char *keys, int est, vt_claim *out)
{
    char body[512], tokens[48] = "";
    if (est >= 0)
        snprintf(tokens, sizeof(tokens), ", \"estimated_tokens\": %d", est);
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"%s\", \"worker_id\": \"ln\", \"limit\": %d,"
             " \"limit_keys\": %s%s}",
             flow, limit, keys, tokens);
    vt_resp r = vt_http(&srv, "POST", "/v1/claims", VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    const cJSON *claims = cJSON_GetObjectItem(r.json, "claims");
    int n = cJSON_GetArraySize(claims);
    for (int i = 0; i < n && out; i++) {
        const cJSON *c = cJSON_GetArrayItem(claims, i);
        vt_claim x = {(int64_t)vt_num(c, "job_id"), (int64_t)vt_num(c, "item.id"),
                      (int)vt_num(c, "attempt"), ""};
        snprintf(x.token, sizeof(x.token), "%s", vt_str(c, "claim_token"));
        int k = i;
        for (; k > 0 && out[k - 1].job_id > x.job_id; k--)
            out[k] = out[k - 1];
        out[k] = x;
    }
    vt_resp_free(&r);
    return n;
}

static void finish(const vt_claim *c, int used_tokens)
{
    char members[160];
    snprintf(members, sizeof(members),
             "\"disposition\": \"complete\", \"usage\": {\"input_tokens\": %d,"
             " \"output_tokens\": 0}",
             used_tokens);
    vt_resp r = vt_dispose(&srv, c, members);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
}

static long in_flight(const char *key)
{
    return (long)vt_limit_num(&srv, key, "in_flight");
}

/* The first column an index scan's condition bounds: the text after "Index Cond": "(( */
static const char *cond_column(const char *node)
{
    const char *c = strstr(node, "\"Index Cond\": \"");
    if (!c)
        return "";
    c += strlen("\"Index Cond\": \"");
    while (*c == '(')
        c++;
    return c;
}

/* Every node of `plan` (EXPLAIN FORMAT JSON) that reads jobs, but the insert, reaches it by a
 * key: an index scan of jobs_pkey bounded by id, or of jobs_item by item_id (a condition on a
 * later column of an index walks all of it), or a bitmap scan of such; and some node does. */
static void assert_jobs_by_key(const char *what, const char *plan)
{
    int keyed = 0;
    /* each plan node's own fields come before its children ("Plans"), up to the next node */
    for (const char *n = strstr(plan, "\"Node Type\""); n;) {
        const char *next = strstr(n + 1, "\"Node Type\"");
        size_t len = next ? (size_t)(next - n) : strlen(n);
        char *node = strndup(n, len);
        assert_non_null(node);
        bool reads = strstr(node, "\"Relation Name\": \"jobs\"") &&
                     !strstr(node, "\"ModifyTable\"") && !strstr(node, "\"Bitmap Heap Scan\"");
        if (strstr(node, "\"Index Name\": \"jobs_pkey\"")) {
            if (strncmp(cond_column(node), "id = ", 5) != 0)
                fail_msg("%s walks jobs_pkey: %.400s", what, node);
            keyed++;
        } else if (strstr(node, "\"Index Name\": \"jobs_item\"")) {
            if (strncmp(cond_column(node), "item_id = ", 10) != 0)
                fail_msg("%s walks jobs_item: %.400s", what, node);
            keyed++;
        } else if (reads) {
            fail_msg("%s reads jobs without a key: %.400s", what, node);
        }
        free(node);
        n = next;
    }
    assert_true(keyed >= 1); /* an earlier attempt's checkpoint, at least */
}

/* The claims are planned by index (decision 0122). A connection makes a claim's generic plan
 * on its first claim, often while jobs is empty and never analyzed (this database's jobs is
 * both here, before any test claims): with sequential scans on, claim_many_take's plan then
 * scans all of jobs for a lane's holders, at every claim, as jobs grows (the first bench cell
 * ran at 512 limited items/s instead of 1,798). So the plan made then, with the settings the
 * claims are sent with, looks jobs up by key only; and verdictd sends every kind of claim
 * with them: a trigger records the settings each claim's job insert ran under, for the
 * coalesced limited claim (claim_many_take), the lone limited claim (claim_limited) and the
 * plain claim. A lane's holders are looked up by verdict_lane_alive, whose plan whichever
 * statement calls it first makes: it carries the setting itself. */
static void test_lanes_claims_planned_by_index(void **state)
{
    static const char rows[] = "[{\"ord\": 0, \"fs\": \"pi1\", \"worker\": \"w\", \"lease\": 60,"
                               " \"actor\": \"t\"}]";
    (void)state;
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs"), 0);
    assert_int_equal(
        vt_sql_long("SELECT (reltuples < 0)::int FROM pg_class WHERE relname = 'jobs'"), 1);
    vt_put_limit(&srv, "pi-a", "{\"concurrency\": 64, \"tokens_per_minute\": 100000}");
    vt_put_limit(&srv, "pi-b", "{\"concurrency\": 2}");
    char *plan =
        vt_sql("SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan;"
               " PREPARE pi (text, jsonb, jsonb, bigint) AS %s;"
               " EXPLAIN (FORMAT JSON) EXECUTE pi ('pi1', '%s', '[\"pi-a\", \"pi-b\"]', 50)",
               vd_sql_statements[VD_SQL_CLAIM_MANY_TAKE].text, rows);
    assert_non_null(plan);
    assert_jobs_by_key("claim_many_take", plan);
    assert_non_null(strstr(plan, "verdict_lane_alive("));
    free(plan);
    free(
        vt_sql("CREATE TABLE plan_seen (flow text, seqscan text, mode text);"
               " CREATE FUNCTION plan_seen() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
               " INSERT INTO plan_seen VALUES (NEW.flow_step_id, current_setting('enable_seqscan'),"
               " current_setting('plan_cache_mode')); RETURN NEW; END $$;"
               " CREATE TRIGGER plan_seen BEFORE INSERT ON jobs FOR EACH ROW"
               " EXECUTE FUNCTION plan_seen()"));
    vt_seed_flow("pi1", 4);
    vt_seed_flow("pi2", 2);
    assert_int_equal(claim("pi1", 1, "[\"pi-a\", \"pi-b\"]", 50, NULL), 1); /* claim_many_take */
    assert_int_equal(claim("pi1", 2, "[\"pi-a\"]", -1, NULL), 2);           /* claim_limited */
    vt_claim plain = vt_claim1(&srv, "pi2");
    assert_true(plain.job_id > 0);
    char *seen = vt_sql("SELECT string_agg(flow || ':' || seqscan, ',' ORDER BY flow, seqscan)"
                        " FROM plan_seen");
    free(vt_sql("DROP TRIGGER plan_seen ON jobs; DROP FUNCTION plan_seen(); DROP TABLE plan_seen"));
    assert_non_null(seen);
    assert_string_equal(seen, "pi1:off,pi1:off,pi1:off,pi2:off");
    free(seen);
    assert_int_equal(
        vt_sql_long("SELECT count(*) FROM pg_proc WHERE proname ="
                    " 'verdict_lane_alive' AND 'enable_seqscan=off' = ANY (proconfig)"),
        1);
}

/* Concurrency 3: three lanes of one slot; single claims walk past the full lanes until all
 * three are taken, the fourth gets nothing, and an end frees exactly one. */
static void test_lanes_small_concurrency(void **state)
{
    vt_claim c[4];
    (void)state;
    vt_put_limit(&srv, "model:ls3", "{\"concurrency\": 3}");
    assert_int_equal(vt_sql_long("SELECT lanes FROM limits WHERE key = 'model:ls3'"), 3);
    assert_int_equal(vt_sql_long("SELECT sum(slots) FROM limit_lanes WHERE key = 'model:ls3'"
                                 " AND slots = 1"),
                     3);
    vt_seed_flow("ls3", 10);
    for (int i = 0; i < 3; i++)
        assert_int_equal(claim("ls3", 1, "[\"model:ls3\"]", -1, &c[i]), 1);
    assert_int_equal(claim("ls3", 1, "[\"model:ls3\"]", -1, &c[3]), 0);
    assert_int_equal(in_flight("model:ls3"), 3);
    finish(&c[1], 0);
    assert_int_equal(claim("ls3", 5, "[\"model:ls3\"]", -1, &c[3]), 1);
    assert_int_equal(claim("ls3", 5, "[\"model:ls3\"]", -1, NULL), 0);
    assert_int_equal(in_flight("model:ls3"), 3);
    /* concurrency 1: one lane; 0: one lane of no slot */
    vt_put_limit(&srv, "model:ls1", "{\"concurrency\": 0}");
    assert_int_equal(vt_sql_long("SELECT count(*) FROM limit_lanes WHERE key = 'model:ls1'"), 1);
    vt_seed_flow("ls1", 3);
    assert_int_equal(claim("ls1", 3, "[\"model:ls1\"]", -1, NULL), 0);
    vt_put_limit(&srv, "model:ls1", "{\"concurrency\": 1}");
    assert_int_equal(claim("ls1", 3, "[\"model:ls1\"]", -1, NULL), 1);
    assert_int_equal(claim("ls1", 3, "[\"model:ls1\"]", -1, NULL), 0);
}

/* Concurrency 8 (eight lanes of one), six jobs hold slots, then PUT lowers it to 3: the six
 * are dealt two to a lane, so no claim passes; once the four oldest end, one lane is empty
 * and exactly one claim passes (3 in flight); raising it again opens the room at once. */
static void test_lanes_put_lowers_concurrency_while_held(void **state)
{
    vt_claim c[8], d[8];
    (void)state;
    vt_put_limit(&srv, "model:lpl", "{\"concurrency\": 8}");
    vt_seed_flow("lpl", 20);
    assert_int_equal(claim("lpl", 6, "[\"model:lpl\"]", -1, c), 6);
    vt_put_limit(&srv, "model:lpl", "{\"concurrency\": 3}");
    assert_int_equal(vt_sql_long("SELECT lanes FROM limits WHERE key = 'model:lpl'"), 3);
    assert_int_equal(in_flight("model:lpl"), 6);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM limit_lanes WHERE key = 'model:lpl'"
                                 " AND n < 3 AND cardinality(holders) = 2"),
                     3);
    assert_int_equal(claim("lpl", 5, "[\"model:lpl\"]", -1, NULL), 0);
    for (int i = 0; i < 4; i++)
        finish(&c[i], 0);
    assert_int_equal(in_flight("model:lpl"), 2);
    assert_int_equal(claim("lpl", 5, "[\"model:lpl\"]", -1, d), 1);
    assert_int_equal(in_flight("model:lpl"), 3);
    assert_int_equal(claim("lpl", 5, "[\"model:lpl\"]", -1, NULL), 0);
    vt_put_limit(&srv, "model:lpl", "{\"concurrency\": 5}");
    assert_int_equal(claim("lpl", 5, "[\"model:lpl\"]", -1, NULL), 2);
    assert_int_equal(in_flight("model:lpl"), 5);
}

/* Two keys that never bind (64 slots, a fast rate, a large token window: eight lanes each);
 * one claim of 5 items writes one lane row of each key, every job held on it: 2 row writes
 * (HOT), counted from the rows the claim's transaction wrote (their xmin) and by the table's
 * statistics of a claim's transaction. */
static void test_lanes_run_takes_one_lane(void **state)
{
    static const char never[] =
        "{\"concurrency\": 64, \"rate\": {\"per\": \"second\", \"count\": 1000000, \"burst\": 64},"
        " \"tokens_per_minute\": 1000000000000}";
    vt_claim c[5];
    (void)state;
    vt_put_limit(&srv, "model:lr1", never);
    vt_put_limit(&srv, "site:lr1", never);
    vt_seed_flow("lr1", 10);
    assert_int_equal(claim("lr1", 5, "[\"model:lr1\", \"site:lr1\"]", 100, c), 5);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM limit_lanes l WHERE l.key IN ('model:lr1',"
                                 " 'site:lr1') AND l.xmin::text = (SELECT j.xmin::text FROM jobs j"
                                 " WHERE j.id = %lld)",
                                 (long long)c[0].job_id),
                     2);
    for (int i = 0; i < 5; i++)
        assert_int_equal(vt_sql_long("SELECT count(*) FROM limit_lanes WHERE key IN ('model:lr1',"
                                     " 'site:lr1') AND %lld = ANY (holders)",
                                     (long long)c[i].job_id),
                         2);
    assert_int_equal(vt_sql_long("SELECT count(DISTINCT limit_cells) FROM jobs"
                                 " WHERE flow_step_id = 'lr1' AND cardinality(limit_cells) = 2"),
                     1);
    assert_true(vt_limit_num(&srv, "model:lr1", "tokens_reserved") == 500);
    /* the same claim's statement in a session of its own: the table's statistics of its
     * transaction (a new backend: nothing else pending) count 2 updates, both HOT */
    assert_int_equal(
        vt_sql_long("SELECT length(verdict_claim_limited('lr1', 'w', 5, 60, 'test', NULL,"
                    " ARRAY['model:lr1', 'site:lr1'], 100, NULL, NULL)) > 0;"
                    " SELECT n_tup_upd * 10 + n_tup_hot_upd FROM pg_stat_xact_user_tables"
                    " WHERE relname = 'limit_lanes'"),
        22);
}

/* The coalesced limited claims of one key set and estimate (claim_many_take) claim and take
 * their room in one statement: run in a session of its own that counts PL/pgSQL calls
 * (track_functions), three requests get three items, every job holds both keys with the
 * estimate reserved, and none of the PL/pgSQL claim functions ran (verdict_claim_pick,
 * verdict_limit_take, verdict_limit_take_many, verdict_claim_many_limited: the path that
 * claimed these before, about 0.55 M more instructions a claim). */
static void test_lanes_one_key_set_one_statement(void **state)
{
    static const char rows[] =
        "[{\"ord\": 0, \"fs\": \"lo1\", \"worker\": \"w\", \"lease\": 60,"
        " \"actor\": \"t\"}, {\"ord\": 1, \"fs\": \"lo1\", \"worker\": \"w\","
        " \"lease\": 60, \"actor\": \"t\"}, {\"ord\": 2, \"fs\": \"lo1\","
        " \"worker\": \"w\", \"lease\": 60, \"actor\": \"t\"}]";
    (void)state;
    vt_put_limit(&srv, "lo-a", "{\"concurrency\": 64, \"tokens_per_minute\": 100000}");
    vt_put_limit(&srv, "lo-b", "{\"concurrency\": 64}");
    vt_seed_flow("lo1", 5);
    char *got =
        vt_sql("SET track_functions = 'pl'; SET plan_cache_mode = force_generic_plan;"
               " PREPARE ot (text, jsonb, jsonb, bigint) AS %s;"
               " CREATE TEMP TABLE ot_out AS EXECUTE ot ('lo1', '%s', '[\"lo-b\", \"lo-a\"]', 50);"
               " SELECT (SELECT count(*) FROM ot_out WHERE answer LIKE '%%\"job_id\"%%') || ':'"
               "  || coalesce((SELECT string_agg(funcname, ',') FROM pg_stat_xact_user_functions"
               "   WHERE funcname IN ('verdict_claim_pick', 'verdict_limit_take',"
               "    'verdict_limit_take_many', 'verdict_claim_many_limited')), '')",
               vd_sql_statements[VD_SQL_CLAIM_MANY_TAKE].text, rows);
    assert_non_null(got);
    assert_string_equal(got, "3:");
    free(got);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'lo1'"
                                 " AND limit_keys = '{lo-a,lo-b}' AND estimated_tokens = 50"
                                 " AND cardinality(limit_cells) = 1"),
                     3);
    assert_int_equal(in_flight("lo-a"), 3);
    assert_int_equal(in_flight("lo-b"), 3);
    assert_true(vt_limit_num(&srv, "lo-a", "tokens_reserved") == 150);
}

/* A lane full of finished holders has room: concurrency 3 is three lanes of one slot; three
 * claims fill them and end; claim_many_take's claim then passes, its lane's live holders
 * counted by verdict_lane_alive (a call starts nothing until a lane is full, where a subquery
 * in the statement was started at every claim), and the lane it took holds only the new job:
 * the finished one was pruned. */
static void test_lanes_finished_holders_pruned(void **state)
{
    static const char rows[] = "[{\"ord\": 0, \"fs\": \"lf1\", \"worker\": \"w\", \"lease\": 60,"
                               " \"actor\": \"t\"}]";
    vt_claim c[3];
    (void)state;
    vt_put_limit(&srv, "lf-a", "{\"concurrency\": 3}");
    vt_seed_flow("lf1", 6);
    for (int i = 0; i < 3; i++)
        assert_int_equal(claim("lf1", 1, "[\"lf-a\"]", -1, &c[i]), 1);
    assert_int_equal(claim("lf1", 1, "[\"lf-a\"]", -1, NULL), 0); /* full */
    for (int i = 0; i < 3; i++)
        finish(&c[i], 0);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM limit_lanes WHERE key = 'lf-a'"
                                 " AND cardinality(holders) = 1"),
                     3); /* each lane names its finished job */
    char *got = vt_sql(
        "SET track_functions = 'pl'; SET plan_cache_mode = force_generic_plan;"
        " PREPARE lf (text, jsonb, jsonb, bigint) AS %s;"
        " CREATE TEMP TABLE lf_out AS EXECUTE lf ('lf1', '%s', '[\"lf-a\"]', NULL);"
        " SELECT (SELECT count(*) FROM lf_out WHERE answer LIKE '%%\"job_id\"%%') || ':'"
        "  || coalesce((SELECT string_agg(funcname, ',') FROM pg_stat_xact_user_functions"
        "   WHERE funcname LIKE 'verdict_lane%%' OR funcname LIKE 'verdict_limit%%'), '')"
        "  || ':' || (SELECT count(*) FROM limit_lanes l JOIN jobs j ON j.id = ANY (l.holders)"
        "   WHERE l.key = 'lf-a' AND j.status = 'processing' AND cardinality(l.holders) = 1)",
        vd_sql_statements[VD_SQL_CLAIM_MANY_TAKE].text, rows);
    assert_non_null(got);
    assert_string_equal(got, "1:verdict_lane_alive:1");
    free(got);
}

/* A run larger than any lane's room is split over lanes rather than refused (concurrency 8:
 * eight lanes of one slot, a claim of 5 takes five lanes). Then the coarse case: concurrency 2
 * and 2 tokens a minute (two lanes of one slot and one token). Jobs A and B (no estimate) hold
 * both slots; B ends having used 1 token, filling its lane's minute. The key has a free slot
 * (B's lane) and a free token (A's lane), but no lane has both: a claim reserving 1 token gets
 * nothing until A ends. */
static void test_lanes_room_split(void **state)
{
    vt_claim c[5], a, b;
    (void)state;
    vt_put_limit(&srv, "model:lsp", "{\"concurrency\": 8}");
    vt_seed_flow("lsp", 10);
    assert_int_equal(claim("lsp", 5, "[\"model:lsp\"]", -1, c), 5);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM limit_lanes WHERE key = 'model:lsp'"
                                 " AND cardinality(holders) = 1"),
                     5);
    assert_int_equal(claim("lsp", 5, "[\"model:lsp\"]", -1, NULL), 3);
    while (vt_sql_long("SELECT extract(second FROM now())::int") > 45)
        vt_sleep_ms(500);
    vt_put_limit(&srv, "model:lsx", "{\"concurrency\": 2, \"tokens_per_minute\": 2}");
    vt_seed_flow("lsx", 4);
    assert_int_equal(claim("lsx", 1, "[\"model:lsx\"]", 0, &a), 1);
    assert_int_equal(claim("lsx", 1, "[\"model:lsx\"]", 0, &b), 1);
    finish(&b, 1);
    assert_int_equal(in_flight("model:lsx"), 1);
    assert_true(vt_limit_num(&srv, "model:lsx", "tokens_reserved") == 1);
    assert_int_equal(claim("lsx", 1, "[\"model:lsx\"]", 1, NULL), 0); /* coarser than the key */
    finish(&a, 0);
    assert_int_equal(claim("lsx", 1, "[\"model:lsx\"]", 1, NULL), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lanes_claims_planned_by_index), /* first: jobs is empty */
        cmocka_unit_test(test_lanes_small_concurrency),
        cmocka_unit_test(test_lanes_put_lowers_concurrency_while_held),
        cmocka_unit_test(test_lanes_run_takes_one_lane),
        cmocka_unit_test(test_lanes_room_split),
        cmocka_unit_test(test_lanes_one_key_set_one_statement),
        cmocka_unit_test(test_lanes_finished_holders_pruned),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
