/* test_concurrency.c - exclusivity under load, proven with many real concurrent HTTP
 * clients: 32 clients claim-and-complete 5,000 items through one verdictd, then through two
 * verdictd processes sharing the database. Every item must be handed to exactly one live
 * claim, finished exactly once, and no answer may be a 5xx. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vt.h"
#include "vt_api.h"

#define CLIENTS 32
#define ITEMS 5000

static vt_server srv[2];

typedef struct run {
    const char *flow;
    int nservers;
    _Atomic int claimed[ITEMS + 1];  /* by item index: how many times handed out */
    _Atomic long errors5xx, other_errors, completes;
    int64_t first_id;
} run;

typedef struct worker_arg {
    run *run;
    int index;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *w = p;
    run *r = w->run;
    const vt_server *s = &srv[w->index % r->nservers];
    char body[256];
    int limit = 1 + w->index % 4; /* single and small batches */
    int idle = 0;
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"%s\", \"worker_id\": \"w%d\", \"limit\": %d,"
             " \"lease_seconds\": 600}",
             r->flow, w->index, limit);
    while (idle < 3) {
        vt_resp resp = vt_http(s, "POST", "/v1/claims", VT_WORKER, body, NULL);
        if (resp.status >= 500 || resp.status == 0)
            atomic_fetch_add(&r->errors5xx, 1);
        const cJSON *claims = cJSON_GetObjectItem(resp.json, "claims");
        int n = cJSON_GetArraySize(claims);
        idle = n == 0 ? idle + 1 : 0;
        for (int i = 0; i < n; i++) {
            const cJSON *c = cJSON_GetArrayItem(claims, i);
            vt_claim cl = {(int64_t)vt_num(c, "job_id"), (int64_t)vt_num(c, "item.id"), 1, ""};
            snprintf(cl.token, sizeof(cl.token), "%s", vt_str(c, "claim_token"));
            long idx = (long)(cl.item_id - r->first_id);
            if (idx >= 0 && idx < ITEMS)
                atomic_fetch_add(&r->claimed[idx], 1);
            vt_resp d = vt_dispose(s, &cl, "\"disposition\": \"complete\"");
            if (d.status >= 500 || d.status == 0)
                atomic_fetch_add(&r->errors5xx, 1);
            else if (d.status != 200)
                atomic_fetch_add(&r->other_errors, 1);
            else
                atomic_fetch_add(&r->completes, 1);
            vt_resp_free(&d);
        }
        vt_resp_free(&resp);
    }
    vt_http_thread_cleanup();
    return NULL;
}

static void seed(const char *flow)
{
    /* one INSERT is quicker than 5,000 requests; registration itself is tested elsewhere */
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('%s')", flow);
    vt_sql("INSERT INTO items (flow_step_id, source_type, item_identifier, max_attempts,"
           " max_defers) SELECT '%s', 'rss', 'item-' || g, 5, 3 FROM generate_series(1, %d) g",
           flow, ITEMS);
}

static void run_load(const char *flow, int nservers)
{
    static run r;
    pthread_t t[CLIENTS];
    worker_arg args[CLIENTS];
    memset(&r, 0, sizeof(r));
    r.flow = flow;
    r.nservers = nservers;
    seed(flow);
    r.first_id = vt_sql_long("SELECT min(id) FROM items WHERE flow_step_id = '%s'", flow);
    for (int i = 0; i < CLIENTS; i++) {
        args[i] = (worker_arg){&r, i};
        assert_int_equal(pthread_create(&t[i], NULL, worker, &args[i]), 0);
    }
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&r.errors5xx), 0);
    assert_int_equal(atomic_load(&r.other_errors), 0);
    assert_int_equal(atomic_load(&r.completes), ITEMS);
    for (int i = 0; i < ITEMS; i++) {
        if (atomic_load(&r.claimed[i]) != 1)
            fail_msg("item %d was handed out %d times", i, atomic_load(&r.claimed[i]));
    }
    /* the database agrees: one job per item, every one completed, every item processed */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = '%s'"
                                 " AND state = 'processed'", flow),
                     ITEMS);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = '%s'"
                                 " AND status = 'completed'", flow),
                     ITEMS);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = '%s'", flow),
                     ITEMS);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM (SELECT item_id FROM transitions t"
                                 " JOIN items i ON i.id = t.item_id WHERE i.flow_step_id = '%s'"
                                 " AND t.cause = 'complete' GROUP BY item_id"
                                 " HAVING count(*) <> 1) x", flow),
                     0);
}

static void test_concurrency_one_server(void **state)
{
    (void)state;
    run_load("load1", 1);
}

static void test_concurrency_two_servers(void **state)
{
    (void)state;
    static const char *env[] = {"VERDICT_SWEEP_INTERVAL_SECONDS=1", NULL};
    vt_server_start(&srv[1], env);
    run_load("load2", 2);
    vt_server_stop(&srv[1]);
}

static int setup(void **state)
{
    (void)state;
    static const char *env[] = {"VERDICT_SWEEP_INTERVAL_SECONDS=1", "VERDICT_LOG_LEVEL=warn",
                                NULL};
    vt_db_setup();
    vt_server_start(&srv[0], env);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    vt_server_stop(&srv[0]);
    vt_db_teardown();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrency_one_server),
        cmocka_unit_test(test_concurrency_two_servers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
