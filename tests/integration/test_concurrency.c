/* test_concurrency.c - exclusivity under load, proven with many real concurrent HTTP
 * clients: 32 clients claim-and-complete 5,000 items through one verdictd, then through two
 * verdictd processes sharing the database (a quarter of the clients finish their claims
 * through batch dispositions). Every item must be handed to exactly one live claim, finished
 * exactly once, and no answer may be a 5xx. Then 16 clients race identical calls (batches,
 * then single calls) over the same jobs in random orders: no deadlock, every job applied
 * exactly once, every other call replays. */
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
    _Atomic int claimed[ITEMS + 1]; /* by item index: how many times handed out */
    _Atomic long errors5xx, other_errors, completes;
    int64_t first_id;
} run;

typedef struct worker_arg {
    run *run;
    int index;
} worker_arg;

/* Count a disposition answer (single, or a batch of n entries). */
static void count_answer(run *r, const vt_resp *d, int n)
{
    const cJSON *results = cJSON_GetObjectItem(d->json, "results"), *e = NULL;
    if (d->status >= 500 || d->status == 0) {
        atomic_fetch_add(&r->errors5xx, 1);
    } else if (d->status != 200) {
        atomic_fetch_add(&r->other_errors, 1);
    } else if (!results) {
        atomic_fetch_add(&r->completes, 1);
    } else {
        if (cJSON_GetArraySize(results) != n)
            atomic_fetch_add(&r->other_errors, 1);
        cJSON_ArrayForEach(e, results)
        {
            if (vt_num(e, "status") == 200)
                atomic_fetch_add(&r->completes, 1);
            else
                atomic_fetch_add(&r->other_errors, 1);
        }
    }
}

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
        char entries[2048] = "";
        for (int i = 0; i < n; i++) {
            const cJSON *c = cJSON_GetArrayItem(claims, i);
            vt_claim cl = {(int64_t)vt_num(c, "job_id"), (int64_t)vt_num(c, "item.id"), 1, ""};
            snprintf(cl.token, sizeof(cl.token), "%s", vt_str(c, "claim_token"));
            long idx = (long)(cl.item_id - r->first_id);
            if (idx >= 0 && idx < ITEMS)
                atomic_fetch_add(&r->claimed[idx], 1);
            if (limit > 2) { /* these workers finish their claims in one batch call */
                size_t len = strlen(entries);
                snprintf(entries + len, sizeof(entries) - len,
                         "%s{\"job_id\": %lld, \"claim_token\": \"%s\", \"disposition\":"
                         " \"complete\"}",
                         i ? ", " : "", (long long)cl.job_id, cl.token);
                continue;
            }
            vt_resp d = vt_dispose(s, &cl, "\"disposition\": \"complete\"");
            count_answer(r, &d, 1);
            vt_resp_free(&d);
        }
        if (entries[0]) {
            char batch_body[2100];
            snprintf(batch_body, sizeof(batch_body), "{\"dispositions\": [%s]}", entries);
            vt_resp d = vt_http(s, "POST", "/v1/dispositions", VT_WORKER, batch_body, NULL);
            count_answer(r, &d, n);
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
    vt_seed_items(flow, "item-", ITEMS, 5, 3);
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
                                 " AND state = 'processed'",
                                 flow),
                     ITEMS);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = '%s'"
                                 " AND status = 'completed'",
                                 flow),
                     ITEMS);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = '%s'", flow),
                     ITEMS);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM (SELECT item_id FROM audit t"
                                 " JOIN items i ON i.id = t.item_id WHERE i.flow_step_id = '%s'"
                                 " AND t.cause = 'complete' GROUP BY item_id"
                                 " HAVING count(*) <> 1) x",
                                 flow),
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
    vt_replica_start(&srv[1]);
    run_load("load2", 2);
    vt_server_stop(&srv[1]);
}

#define OVERLAP_JOBS 40
#define OVERLAP_CLIENTS 16

typedef struct overlap {
    bool single; /* single calls instead of batches */
    vt_claim c[OVERLAP_JOBS];
    _Atomic long applied[OVERLAP_JOBS], replayed, other, errors5xx;
    _Atomic int noted;
    char first_error[300];
} overlap;

typedef struct overlap_arg {
    overlap *o;
    unsigned seed;
} overlap_arg;

static void count_overlap(overlap *o, const cJSON *e, int job)
{
    if (!e || vt_num(e, "status") != 200 || vt_num(e, "job_id") != (double)o->c[job].job_id)
        atomic_fetch_add(&o->other, 1);
    else if (cJSON_IsTrue(cJSON_GetObjectItem(e, "replayed")))
        atomic_fetch_add(&o->replayed, 1);
    else
        atomic_fetch_add(&o->applied[job], 1);
}

static void shuffle(int *order, unsigned *seed)
{
    for (int i = 0; i < OVERLAP_JOBS; i++)
        order[i] = i;
    for (int i = OVERLAP_JOBS - 1; i > 0; i--) {
        int j = (int)(rand_r(seed) % (unsigned)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* Every job once, by single calls in a random order. */
static void overlap_singles(overlap *o, unsigned *seed)
{
    int order[OVERLAP_JOBS];
    shuffle(order, seed);
    for (int i = 0; i < OVERLAP_JOBS; i++) {
        vt_resp r = vt_dispose(&srv[0], &o->c[order[i]], "\"disposition\": \"complete\"");
        if (r.status >= 500 || r.status == 0)
            atomic_fetch_add(&o->errors5xx, 1);
        if (r.status != 200 && atomic_fetch_add(&o->noted, 1) == 0)
            snprintf(o->first_error, sizeof(o->first_error), "%ld %.250s", r.status,
                     r.body ? r.body : "");
        if (r.status == 200) {
            cJSON_AddNumberToObject(r.json, "status", 200);
            cJSON_AddNumberToObject(r.json, "job_id", (double)vt_num(r.json, "job.id"));
            count_overlap(o, r.json, order[i]);
        }
        vt_resp_free(&r);
    }
}

static void *overlap_worker(void *p)
{
    overlap_arg *a = p;
    overlap *o = a->o;
    if (o->single) {
        overlap_singles(o, &a->seed);
        vt_http_thread_cleanup();
        return NULL;
    }
    for (int round = 0; round < 5; round++) {
        int order[OVERLAP_JOBS], n = round == 4 ? OVERLAP_JOBS : 20;
        char body[8192];
        size_t len = (size_t)snprintf(body, sizeof(body), "{\"dispositions\": [");
        shuffle(order, &a->seed);
        for (int i = 0; i < n; i++) {
            const vt_claim *c = &o->c[order[i]];
            len += (size_t)snprintf(body + len, sizeof(body) - len,
                                    "%s{\"job_id\": %lld, \"claim_token\": \"%s\","
                                    " \"disposition\": \"complete\"}",
                                    i ? ", " : "", (long long)c->job_id, c->token);
        }
        snprintf(body + len, sizeof(body) - len, "]}");
        vt_resp r = vt_http(&srv[0], "POST", "/v1/dispositions", VT_WORKER, body, NULL);
        if (r.status >= 500 || r.status == 0)
            atomic_fetch_add(&o->errors5xx, 1);
        if (r.status != 200 && atomic_fetch_add(&o->noted, 1) == 0)
            snprintf(o->first_error, sizeof(o->first_error), "%ld %.250s", r.status,
                     r.body ? r.body : "");
        for (int i = 0; i < n && r.status == 200; i++)
            count_overlap(o, cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "results"), i),
                          order[i]);
        vt_resp_free(&r);
    }
    vt_http_thread_cleanup();
    return NULL;
}

/* OVERLAP_CLIENTS clients finish the same OVERLAP_JOBS jobs with identical calls at once:
 * each job is applied once and every other call replays its answer (none is refused), no
 * deadlock, no 5xx. */
static void race_identical(const char *flow, bool single)
{
    static overlap o;
    pthread_t t[OVERLAP_CLIENTS];
    overlap_arg args[OVERLAP_CLIENTS];
    int calls = single ? OVERLAP_JOBS : 4 * 20 + OVERLAP_JOBS; /* per client */
    memset(&o, 0, sizeof(o));
    o.single = single;
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('%s')", flow);
    vt_seed_items(flow, "item-", OVERLAP_JOBS, 5, 3);
    assert_int_equal(vt_claim_n(&srv[0], flow, OVERLAP_JOBS, 600, o.c), OVERLAP_JOBS);
    long deadlocks = vt_sql_long("SELECT deadlocks FROM pg_stat_database"
                                 " WHERE datname = current_database()");
    for (int i = 0; i < OVERLAP_CLIENTS; i++) {
        args[i] = (overlap_arg){&o, 7919u * (unsigned)(i + 1)};
        assert_int_equal(pthread_create(&t[i], NULL, overlap_worker, &args[i]), 0);
    }
    for (int i = 0; i < OVERLAP_CLIENTS; i++)
        pthread_join(t[i], NULL);
    if (atomic_load(&o.noted))
        fail_msg("%d batches failed, the first: %s", atomic_load(&o.noted), o.first_error);
    assert_int_equal(atomic_load(&o.other), 0);
    for (int i = 0; i < OVERLAP_JOBS; i++)
        assert_int_equal(atomic_load(&o.applied[i]), 1);
    assert_int_equal(atomic_load(&o.replayed), OVERLAP_CLIENTS * calls - OVERLAP_JOBS);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit t JOIN items i"
                                 " ON i.id = t.item_id WHERE i.flow_step_id = '%s'"
                                 " AND t.cause = 'complete'",
                                 flow),
                     OVERLAP_JOBS);
    assert_int_equal(vt_sql_long("SELECT deadlocks FROM pg_stat_database"
                                 " WHERE datname = current_database()"),
                     deadlocks);
}

/* Batches lock their jobs in job id order, so racing batches over the same jobs in other
 * orders wait for each other and never deadlock. */
static void test_concurrency_overlapping_batches(void **state)
{
    (void)state;
    race_identical("overlap_batch", false);
}

/* A call that waited for the lock held by an identical call replays that call's answer. */
static void test_concurrency_identical_singles(void **state)
{
    (void)state;
    race_identical("overlap_single", true);
}

VT_SERVER_FIXTURE(srv[0], "VERDICT_SWEEP_INTERVAL_SECONDS=1", "VERDICT_LOG_LEVEL=warn", NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrency_one_server),
        cmocka_unit_test(test_concurrency_two_servers),
        cmocka_unit_test(test_concurrency_overlapping_batches),
        cmocka_unit_test(test_concurrency_identical_singles),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
