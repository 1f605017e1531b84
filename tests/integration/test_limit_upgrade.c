/* test_limit_upgrade.c - an upgrade across sql/migrations/0044_limit_lanes.sql with limits in
 * use: a database is brought to schema 0043 (migrations 0001..0043 only, the limit cells of
 * sql/migrations/0032 and 0038), live limit state is written straight into its tables, and a
 * real verdictd migrates it. The lanes must carry what the cells held: the slots held by
 * processing jobs (not the slot of a job that ended), the tokens reserved and used in the
 * current minute and the job's shard (now its lane) its usage settles on, the rate tokens in
 * use, and a throttle with its backoff streak. Then claims go on from that state: the key with
 * 2 of 3 slots held takes one claim more and no other, an end of a carried-over job frees its
 * slot, and the throttled key refuses claims until its throttle ends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/embedded.h"
#include "verdict/store.h"
#include <libpq-fe.h>

#include "vt.h"
#include "vt_api.h"

static vt_server up;
static long throttle_end; /* up:c's throttled_until as written at 0043 (epoch seconds) */

/* The state at 0043. Flow step "up" with items i1..i10. Key up:a, concurrency 3: slot cells 0
 * and 1 held by the processing jobs of i1 and i2, cell 2 naming the job of i3, which ended (a
 * slot is freed by its job's end without a write: sql/migrations/0038). Key up:d, 60 per hour
 * with burst 4: two of its four rate tokens in use for 30 minutes more. Key up:b, 8000 tokens
 * a minute: shards 2 and 5 hold reservations of this minute (shard 2 also usage), shard 6 an
 * older minute's; the job of i4 reserved 300 on shard 2. Key up:c, no settings, throttled for
 * an hour with a backoff streak of 3. The rate cells come before the token cells, so that a
 * token cell's id is not its lane's id (a job's shard not moved to its lane would show). Jobs
 * are written finished or not as they are: the 0043 release trigger is not the one the
 * function files later replace it with. */
static const char seed_sql[] =
    "INSERT INTO flow_steps (flow_step_id) VALUES ('up');"
    "INSERT INTO item_sources (flow_step_id, source_type, item_identifier)"
    " SELECT 'up', 'rss', 'i' || g FROM generate_series(1, 10) g;"
    "INSERT INTO items (id, flow_step_id, max_attempts, max_defers)"
    " SELECT id, flow_step_id, 5, 3 FROM item_sources;"
    "INSERT INTO limits (key, concurrency) VALUES ('up:a', 3);"
    "INSERT INTO limits (key, tokens_per_minute) VALUES ('up:b', 8000);"
    "INSERT INTO limits (key, throttled_until, throttle_reason, backoff_streak, backoffs_total)"
    " VALUES ('up:c', date_trunc('second', now()) + interval '1 hour', 'provider 429', 3, 7);"
    "INSERT INTO limits (key, rate_per_seconds, rate_count, rate_burst)"
    " VALUES ('up:d', 3600, 60, 4);"
    "INSERT INTO limit_cells (key, kind, n) SELECT 'up:a', 'c', g FROM generate_series(0, 2) g;"
    "INSERT INTO limit_cells (key, kind, n, free_at)"
    " SELECT 'up:d', 'r', g, CASE WHEN g < 2 THEN now() + interval '30 minutes'"
    "  ELSE '-infinity' END FROM generate_series(0, 3) g;"
    "INSERT INTO limit_cells (key, kind, n, minute, reserved, used, used_total)"
    " SELECT 'up:b', 't', g, date_trunc('minute', now())"
    "  - CASE WHEN g = 6 THEN interval '1 minute' ELSE interval '0' END,"
    "  CASE g WHEN 2 THEN 300 WHEN 5 THEN 200 WHEN 6 THEN 900 ELSE 0 END,"
    "  CASE g WHEN 2 THEN 120 WHEN 6 THEN 400 ELSE 0 END,"
    "  CASE g WHEN 2 THEN 500 WHEN 6 THEN 4000 ELSE 0 END FROM generate_series(0, 7) g;"
    "INSERT INTO jobs (item_id, flow_step_id, worker_id, attempt, status, finished_at,"
    "  disposition, claim_token, lease_expires_at, limit_keys, limit_cells, estimated_tokens)"
    " SELECT s.id, 'up', 'w', 1, CASE WHEN d THEN 'completed' ELSE 'processing' END,"
    "  CASE WHEN d THEN now() END, CASE WHEN d THEN 'complete' END,"
    "  ('00000000-0000-4000-8000-00000000000' || right(s.item_identifier, 1))::uuid,"
    "  now() + interval '1 hour', ARRAY[CASE WHEN b THEN 'up:b' ELSE 'up:a' END],"
    "  CASE WHEN b THEN ARRAY(SELECT id FROM limit_cells WHERE key = 'up:b' AND kind = 't'"
    "   AND n = 2) ELSE '{}' END, CASE WHEN b THEN 300 END"
    " FROM item_sources s CROSS JOIN LATERAL (SELECT s.item_identifier = 'i3' AS d,"
    "  s.item_identifier = 'i4' AS b) x"
    " WHERE s.item_identifier IN ('i1', 'i2', 'i3', 'i4') ORDER BY s.id;"
    "UPDATE items i SET attempts = 1,"
    "  state = CASE WHEN j.status = 'processing' THEN 'claimed' ELSE 'processed' END,"
    "  current_job_id = CASE WHEN j.status = 'processing' THEN j.id END,"
    "  claim_token = CASE WHEN j.status = 'processing' THEN j.claim_token END,"
    "  lease_expires_at = CASE WHEN j.status = 'processing' THEN j.lease_expires_at END"
    " FROM jobs j WHERE j.item_id = i.id;"
    "UPDATE limit_cells c SET job_id = j.id FROM jobs j JOIN item_sources s ON s.id = j.item_id"
    " WHERE c.key = 'up:a' AND c.kind = 'c' AND s.item_identifier IN ('i1', 'i2', 'i3')"
    "  AND c.n = right(s.item_identifier, 1)::integer - 1;";

/* The id of the job of item identifier ident. */
static long job_of(const char *ident)
{
    return vt_sql_long("SELECT j.id FROM jobs j JOIN item_sources s ON s.id = j.item_id"
                       " WHERE s.item_identifier = '%s' ORDER BY j.id LIMIT 1",
                       ident);
}

/* The carried-over job of item i<n> as its worker holds it (its token from the seed). */
static vt_claim held_job(int n)
{
    char ident[8];
    snprintf(ident, sizeof(ident), "i%d", n);
    vt_claim c = {job_of(ident), 0, 1, ""};
    c.item_id = vt_sql_long("SELECT id FROM item_sources WHERE item_identifier = '%s'", ident);
    snprintf(c.token, sizeof(c.token), "00000000-0000-4000-8000-00000000000%d", n);
    return c;
}

/* The token counters must read one minute from the seed to the checks: start early in one. */
static void wait_for_early_minute(void)
{
    long second = vt_sql_long("SELECT extract(second FROM clock_timestamp())::integer");
    if (second >= 35)
        vt_sleep_ms((61 - second) * 1000L);
}

/* Schema 0043 as a database that ran the migrations up to it, then the seed. */
static void upgrade_from_0043(void)
{
    char sql[160];
    PGconn *pg = PQconnectdb(vt_db_setup_url());
    assert_int_equal(PQstatus(pg), CONNECTION_OK);
    PQclear(vt_pq_ok(pg, "SET client_min_messages = warning"));
    PQclear(vt_pq_ok(
        pg, "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"));
    for (size_t i = 0; i < vd_migration_count && strncmp(vd_migrations[i].name, "0044", 4) < 0;
         i++) {
        PQclear(vt_pq_ok(pg, "BEGIN"));
        PQclear(vt_pq_ok(pg, vd_migrations[i].data));
        snprintf(sql, sizeof(sql), "INSERT INTO schema_migrations VALUES (%d, '%s')",
                 (int)strtol(vd_migrations[i].name, NULL, 10), vd_migrations[i].name);
        PQclear(vt_pq_ok(pg, sql));
        PQclear(vt_pq_ok(pg, "COMMIT"));
    }
    assert_int_equal(vt_sql_long("SELECT max(version) FROM schema_migrations"), 43);
    wait_for_early_minute();
    PQclear(vt_pq_ok(pg, seed_sql));
    PQfinish(pg);
    throttle_end = vt_sql_long("SELECT extract(epoch FROM throttled_until)::bigint FROM limits"
                               " WHERE key = 'up:c'");
    vt_server_start(&up, NULL); /* applies 0044 and later, then the function files */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM information_schema.tables"
                                 " WHERE table_name = 'limit_cells'"),
                     0);
}

VT_FIXTURE(.ready = upgrade_from_0043)

static int teardown_all(void **state)
{
    vt_server_stop(&up);
    return teardown(state);
}

/* A claim of up to limit items of "up" with the one limit key given; fills out (may be NULL)
 * with the first and returns how many. */
static int claim(const char *key, int limit, vt_claim *out)
{
    char body[256];
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"up\", \"worker_id\": \"lu\", \"limit\": %d,"
             " \"limit_keys\": [\"%s\"]}",
             limit, key);
    vt_resp r = vt_http(&up, "POST", "/v1/claims", VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    const cJSON *claims = cJSON_GetObjectItem(r.json, "claims");
    int n = cJSON_GetArraySize(claims);
    if (n > 0 && out) {
        const cJSON *c = cJSON_GetArrayItem(claims, 0);
        out->job_id = (int64_t)vt_num(c, "job_id");
        out->item_id = (int64_t)vt_num(c, "item.id");
        out->attempt = (int)vt_num(c, "attempt");
        snprintf(out->token, sizeof(out->token), "%s", vt_str(c, "claim_token"));
    }
    vt_resp_free(&r);
    return n;
}

static void finish(const vt_claim *c, const char *members)
{
    vt_resp r = vt_dispose(&up, c, members);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
}

/* The lanes as 0044 computes them from the settings, and the holders: exactly the two live
 * jobs of up:a, one on each of lanes 0 and 1 (dealt by job id), none for the ended job. */
static void test_upgrade_lanes_and_holders(void **state)
{
    char want[64], *got;
    (void)state;
    assert_int_equal(vt_sql_long("SELECT max(version) FROM schema_migrations"),
                     vd_store_latest_version());
    got = vt_sql("SELECT string_agg(key || '=' || lanes || '/' || (SELECT count(*)"
                 " FROM limit_lanes x WHERE x.key = l.key), ' ' ORDER BY key) FROM limits l");
    assert_string_equal(got, "up:a=3/3 up:b=8/8 up:c=0/0 up:d=4/4");
    free(got);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM limit_lanes WHERE key = 'up:a'"
                                 " AND slots = 1 AND burst IS NULL AND tokens IS NULL"),
                     3);
    snprintf(want, sizeof(want), "{%ld,%ld}", job_of("i1"), job_of("i2"));
    got = vt_sql("SELECT array_agg(h ORDER BY h) FROM limit_lanes, unnest(holders) h"
                 " WHERE key = 'up:a'");
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    assert_int_equal(vt_sql_long("SELECT holders[1] FROM limit_lanes WHERE key = 'up:a'"
                                 " AND n = 0"),
                     job_of("i1"));
    assert_int_equal(vt_sql_long("SELECT holders[1] FROM limit_lanes WHERE key = 'up:a'"
                                 " AND n = 1"),
                     job_of("i2"));
    assert_int_equal(vt_sql_long("SELECT count(*) FROM limit_lanes WHERE key <> 'up:a'"
                                 " AND holders <> '{}'"),
                     0);
}

/* Shard n of up:b is lane n: its minute and counters as they were (the older minute's too),
 * each lane a share of 1000 tokens; the job of i4 names lane 2, where its usage settles. The
 * rate of up:d: four lanes of one token, pace 4 minutes, the two tokens in use owed by every
 * lane (due 2 minutes from the upgrade). */
static void test_upgrade_tokens_and_rate(void **state)
{
    char *got;
    (void)state;
    got = vt_sql("SELECT string_agg(n || ':' || tokens || ',' || reserved || ',' || used || ','"
                 " || used_total || ',' || (minute = date_trunc('minute', now())), ' '"
                 " ORDER BY n) FROM limit_lanes WHERE key = 'up:b' AND n IN (0, 2, 5, 6)");
    assert_string_equal(got, "0:1000,0,0,0,true 2:1000,300,120,500,true 5:1000,200,0,0,true"
                             " 6:1000,900,400,4000,false");
    free(got);
    assert_int_equal(vt_sql_long("SELECT sum(reserved) + sum(used) + sum(used_total)"
                                 " FROM limit_lanes WHERE key = 'up:b'"),
                     300 + 200 + 900 + 120 + 400 + 500 + 4000);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE limit_cells = ARRAY["
                                 "(SELECT id FROM limit_lanes WHERE key = 'up:b' AND n = 2)]"),
                     1);
    assert_int_equal(vt_sql_long("SELECT limit_cells[1] FROM jobs WHERE id = %ld", job_of("i4")),
                     vt_sql_long("SELECT id FROM limit_lanes WHERE key = 'up:b' AND n = 2"));
    assert_int_equal(vt_sql_long("SELECT count(*) FROM limit_lanes WHERE key = 'up:d'"
                                 " AND burst = 1 AND pace = interval '4 minutes'"
                                 " AND tat > now() + interval '60 seconds'"
                                 " AND tat <= now() + interval '120 seconds'"),
                     4);
}

/* What GET /v1/limits/{key} shows of the carried state. */
static void test_upgrade_api_shows_the_state(void **state)
{
    (void)state;
    assert_int_equal(vt_limit_num(&up, "up:a", "in_flight"), 2);
    assert_int_equal(vt_limit_num(&up, "up:b", "tokens_reserved"), 500);
    assert_int_equal(vt_limit_num(&up, "up:b", "tokens_used"), 120);
    assert_int_equal(vt_limit_num(&up, "up:b", "tokens_used_total"), 4500);
    /* the two rate tokens in use are not handed back by the upgrade */
    assert_true(vt_limit_num(&up, "up:d", "rate_available") <= 2);
    vt_resp r = vt_http(&up, "GET", "/v1/limits/up:c", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    const cJSON *l = cJSON_GetObjectItem(r.json, "limit");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(l, "throttled")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(l, "open")));
    assert_string_equal(vt_str(l, "throttle_reason"), "provider 429");
    assert_int_equal(vt_num(l, "backoff_streak"), 3);
    assert_int_equal(vt_num(l, "backoffs_total"), 7);
    assert_int_equal(vt_sql_long("SELECT extract(epoch FROM '%s'::timestamptz)::bigint",
                                 vt_str(l, "throttled_until")),
                     throttle_end);
    vt_resp_free(&r);
}

/* up:a holds 2 of 3: one claim passes, the next gets nothing; the end of a carried-over job
 * frees its slot for one claim more. */
static void test_upgrade_slots_go_on(void **state)
{
    vt_claim c;
    vt_claim j1 = held_job(1);
    (void)state;
    assert_int_equal(claim("up:a", 1, &c), 1);
    assert_int_equal(claim("up:a", 1, NULL), 0);
    assert_int_equal(claim("up:a", 5, NULL), 0);
    assert_int_equal(vt_limit_num(&up, "up:a", "in_flight"), 3);
    finish(&j1, "\"disposition\": \"complete\"");
    assert_int_equal(vt_limit_num(&up, "up:a", "in_flight"), 2);
    assert_int_equal(claim("up:a", 5, NULL), 1);
    assert_int_equal(claim("up:a", 5, NULL), 0);
    assert_int_equal(vt_limit_num(&up, "up:a", "in_flight"), 3);
    finish(&c, "\"disposition\": \"complete\"");
    assert_int_equal(vt_limit_num(&up, "up:a", "in_flight"), 2);
}

/* The job of i4 reports 250 tokens: its estimate of 300 on lane 2 becomes 250, its usage adds
 * to the minute's and to the total. */
static void test_upgrade_usage_settles_on_the_lane(void **state)
{
    vt_claim j4 = held_job(4);
    (void)state;
    finish(&j4, "\"disposition\": \"complete\", \"usage\": {\"input_tokens\": 250,"
                " \"output_tokens\": 0}");
    assert_int_equal(vt_sql_long("SELECT reserved FROM limit_lanes WHERE key = 'up:b'"
                                 " AND n = 2"),
                     250);
    assert_int_equal(vt_limit_num(&up, "up:b", "tokens_reserved"), 450);
    assert_int_equal(vt_limit_num(&up, "up:b", "tokens_used"), 370);
    assert_int_equal(vt_limit_num(&up, "up:b", "tokens_used_total"), 4750);
}

/* up:c refuses claims while throttled; when the pause ends (brought to 2 seconds from now) a
 * claim passes, and a backoff soon after grows the carried streak: 4, a pause of 10 * 2^3. */
static void test_upgrade_throttle_goes_on(void **state)
{
    vt_claim c;
    (void)state;
    assert_int_equal(claim("up:c", 1, NULL), 0);
    free(vt_sql("UPDATE limits SET throttled_until = clock_timestamp() + interval '2 seconds'"
                " WHERE key = 'up:c'"));
    assert_int_equal(claim("up:c", 1, NULL), 0);
    vt_sleep_ms(2300);
    assert_int_equal(claim("up:c", 1, &c), 1);
    vt_resp r = vt_http(&up, "POST", "/v1/limits/up:c/backoff", VT_WORKER,
                        "{\"retry_after_seconds\": 10}", NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal(vt_num(cJSON_GetObjectItem(r.json, "limit"), "backoff_streak"), 4);
    assert_int_equal(vt_num(cJSON_GetObjectItem(r.json, "limit"), "backoffs_total"), 8);
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT round(extract(epoch FROM throttled_until - now()))"
                                 " FROM limits WHERE key = 'up:c'"),
                     80);
    assert_int_equal(claim("up:c", 1, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upgrade_lanes_and_holders),
        cmocka_unit_test(test_upgrade_tokens_and_rate),
        cmocka_unit_test(test_upgrade_api_shows_the_state),
        cmocka_unit_test(test_upgrade_slots_go_on),
        cmocka_unit_test(test_upgrade_usage_settles_on_the_lane),
        cmocka_unit_test(test_upgrade_throttle_goes_on),
    };
    return cmocka_run_group_tests(tests, setup, teardown_all);
}
