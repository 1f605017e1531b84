/* test_limits_coalesce.c - coalesced single-item claims with limits (claim_many_limited) under
 * many real concurrent clients on two verdictd replicas: a concurrency limit is never exceeded
 * (replayed from the audit), a rate limit holds within one burst, the token window hands out
 * exactly what fits, a throttled key answers every grouped request empty and spends nothing,
 * items carrying their own keys are claimed within them by plain claims, every item is handed
 * out once, and the statements did serve several limited claims at once
 * (verdict_coalesced_*_total). */
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

#define MAX_ITEMS 400
#define MAX_CLIENTS 32

static vt_server srv[2];

VT_FIXTURE(.srv = {&srv[0], &srv[1]}, .env = VT_ENV("VERDICT_LOG_LEVEL=warn"))

/* One run of clients claiming one item at a time with the same body. */
typedef struct lc_run {
    const char *body; /* the claim's body (limit 1) */
    int target;       /* items to finish (complete) */
    int rounds;       /* without complete: claims per client */
    int hold_ms;      /* the work: holds the keys that long */
    bool complete;    /* complete what it claims */
    int64_t first_id; /* the flow step's first item id */
    _Atomic int done; /* completed */
    _Atomic int got;  /* claims answered with an item */
    _Atomic int bad;  /* unexpected answers */
    _Atomic int seen[MAX_ITEMS];
} lc_run;

typedef struct lc_client {
    int index;
    lc_run *run;
} lc_client;

/* One claim: 1 with an item (counted and, with complete, finished), 0 without, -1 on error. */
static int claim_one(const vt_server *s, lc_run *run)
{
    vt_resp r = vt_http(s, "POST", "/v1/claims", VT_WORKER, run->body, NULL);
    const cJSON *claims = cJSON_GetObjectItem(r.json, "claims");
    int n = r.status == 200 ? cJSON_GetArraySize(claims) : -1;
    if (n == 1) {
        const cJSON *j = cJSON_GetArrayItem(claims, 0);
        vt_claim cl = {(int64_t)vt_num(j, "job_id"), (int64_t)vt_num(j, "item.id"), 1, ""};
        long idx = (long)(cl.item_id - run->first_id);
        snprintf(cl.token, sizeof(cl.token), "%s", vt_str(j, "claim_token"));
        if (idx >= 0 && idx < MAX_ITEMS)
            atomic_fetch_add(&run->seen[idx], 1);
        atomic_fetch_add(&run->got, 1);
        if (run->complete) {
            vt_sleep_ms(run->hold_ms);
            vt_resp d = vt_dispose(s, &cl, "\"disposition\": \"complete\"");
            if (d.status == 200)
                atomic_fetch_add(&run->done, 1);
            else
                atomic_fetch_add(&run->bad, 1);
            vt_resp_free(&d);
        }
    } else if (n != 0) {
        fprintf(stderr, "claim: %ld %.300s\n", r.status, r.body ? r.body : "");
        atomic_fetch_add(&run->bad, 1);
    }
    vt_resp_free(&r);
    return n;
}

static void *client_main(void *p)
{
    const lc_client *c = p;
    lc_run *run = c->run;
    const vt_server *s = &srv[c->index % 2];
    int idle = 0;
    for (int k = 0;
         run->complete ? atomic_load(&run->done) < run->target && idle < 3000 : k < run->rounds;
         k++) {
        if (claim_one(s, run) == 1)
            idle = 0;
        else if (run->complete) {
            idle++;
            vt_sleep_ms(2);
        }
    }
    vt_http_thread_cleanup();
    return NULL;
}

static void run_clients(lc_run *run, int clients)
{
    pthread_t t[MAX_CLIENTS];
    lc_client args[MAX_CLIENTS];
    for (int i = 0; i < clients; i++) {
        args[i] = (lc_client){i, run};
        assert_int_equal(pthread_create(&t[i], NULL, client_main, &args[i]), 0);
    }
    for (int i = 0; i < clients; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&run->bad), 0);
}

/* Every item handed out at most once (exactly once when all is set). */
static void each_once(lc_run *run, int items, bool all)
{
    for (int i = 0; i < items; i++) {
        int n = atomic_load(&run->seen[i]);
        if (n > 1 || (all && n != 1))
            fail_msg("item %d was handed out %d times", i, n);
    }
}

typedef struct coalesced {
    long requests, statements;
} coalesced;

static coalesced coalesced_now(void)
{
    const vt_server *both[] = {&srv[0], &srv[1]};
    return (coalesced){
        vt_metric_sum(both, 2, "verdict_coalesced_requests_total{kind=\"claim\"}"),
        vt_metric_sum(both, 2, "verdict_coalesced_statements_total{kind=\"claim\"}")};
}

/* Since before: the claims went through the coalescer, several in one statement. */
static void coalesced_since(coalesced before, long at_least)
{
    coalesced now = coalesced_now();
    long rq = now.requests - before.requests, st = now.statements - before.statements;
    print_message("coalesced: %ld claims in %ld statements\n", rq, st);
    assert_true(rq >= at_least);
    assert_true(st > 0 && rq > st);
}

static int64_t seed(const char *flow, int n)
{
    free(vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('%s')", flow));
    vt_seed_items(flow, flow, n, 5, 3);
    return vt_sql_long("SELECT min(id) FROM items WHERE flow_step_id = '%s'", flow);
}

/* 24 clients, two keys named in another order than sorted, concurrency 3 on one: the answer
 * names the keys sorted, the limit bound and was never exceeded, every item once. */
static void test_coalesced_concurrency_never_exceeded(void **state)
{
    static lc_run run = {.body = "{\"flow_step_id\": \"lcc\", \"worker_id\": \"w\","
                                 " \"limit_keys\": [\"provider:lcc\", \"model:lcc\","
                                 " \"provider:lcc\"]}",
                         .target = 240,
                         .hold_ms = 3,
                         .complete = true};
    (void)state;
    vt_put_limit(&srv[0], "model:lcc", "{\"concurrency\": 3}");
    run.first_id = seed("lcc", 240);
    coalesced before = coalesced_now();
    run_clients(&run, 24);
    coalesced_since(before, 240);
    each_once(&run, 240, true);
    long most = vt_max_in_flight("lcc", "model:lcc");
    print_message("most in flight: %ld\n", most);
    assert_true(most <= 3);
    assert_int_equal(most, 3);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'lcc'"
                                 " AND limit_keys = ARRAY['model:lcc', 'provider:lcc']"),
                     240);
    assert_int_equal(
        vt_sql_long(
            "SELECT count(*) FROM limit_lanes c CROSS JOIN unnest(c.holders) h"
            " JOIN jobs j ON j.id = h WHERE c.key = 'model:lcc' AND j.status = 'processing'"),
        0);
}

/* Rate 20 per second with a burst of 5, 16 clients: no window of claims outruns
 * burst + elapsed * rate (test_flow_control.c's check). */
static void test_coalesced_rate_within_burst(void **state)
{
    static lc_run run = {.body = "{\"flow_step_id\": \"lcr\", \"worker_id\": \"w\","
                                 " \"limit_keys\": [\"provider:lcr\"]}",
                         .target = 60,
                         .complete = true};
    (void)state;
    vt_put_limit(&srv[0], "provider:lcr",
                 "{\"rate\": {\"per\": \"second\", \"count\": 20, \"burst\": 5}}");
    run.first_id = seed("lcr", 60);
    coalesced before = coalesced_now();
    run_clients(&run, 16);
    coalesced_since(before, 60);
    each_once(&run, 60, true);
    char *excess = vt_sql("SELECT max(cnt - 5 - extract(epoch FROM b - a) * 20) FROM"
                          " (SELECT a.claimed_at AS a, b.claimed_at AS b, (SELECT count(*)"
                          "   FROM jobs x WHERE x.flow_step_id = 'lcr'"
                          "   AND x.claimed_at BETWEEN a.claimed_at AND b.claimed_at) AS cnt"
                          "  FROM jobs a JOIN jobs b ON b.claimed_at >= a.claimed_at"
                          "  WHERE a.flow_step_id = 'lcr' AND b.flow_step_id = 'lcr') w");
    double worst = strtod(excess, NULL);
    free(excess);
    print_message("rate: worst excess over burst %.2f\n", worst);
    /* a rate cell is taken at the grant's clock time; the job row records the claim when it is
     * inserted, later in the same statement: a slack of a quarter claim (12.5 ms at 20/s) */
    assert_true(worst <= 0.25);
    assert_true(vt_sql_long("SELECT extract(epoch FROM max(claimed_at) - min(claimed_at)) * 1000"
                            " FROM jobs WHERE flow_step_id = 'lcr'") >= 2500);
}

/* 8,000 tokens a minute (eight shards of 1,000), 1,000 estimated per item, 16 clients claiming
 * 3 times each without finishing: exactly 8 items are handed out, the minute reserves 8,000. */
static void test_coalesced_token_window(void **state)
{
    static lc_run run = {.body = "{\"flow_step_id\": \"lct\", \"worker_id\": \"w\","
                                 " \"limit_keys\": [\"model:lct\"], \"estimated_tokens\": 1000}",
                         .rounds = 3};
    (void)state;
    while (vt_sql_long("SELECT extract(second FROM now())::int") > 45)
        vt_sleep_ms(500); /* the claims within one minute */
    vt_put_limit(&srv[0], "model:lct", "{\"tokens_per_minute\": 8000}");
    run.first_id = seed("lct", 40);
    coalesced before = coalesced_now();
    run_clients(&run, 16);
    coalesced_since(before, 48);
    each_once(&run, 40, false);
    assert_int_equal(atomic_load(&run.got), 8);
    assert_true(vt_limit_num(&srv[1], "model:lct", "tokens_reserved") == 8000);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'lct'"
                                 " AND estimated_tokens = 1000 AND status = 'processing'"),
                     8);
}

/* The cells of key, as text: what a claim would spend. */
static char *cells_of(const char *key)
{
    return vt_sql("SELECT string_agg(concat_ws(':', id, holders, tat, reserved, used, minute),"
                  " ',' ORDER BY id) FROM limit_lanes WHERE key = '%s'",
                  key);
}

/* A key throttled by a backoff, with a concurrency, a rate and a token window set: 16 clients
 * claiming 3 times each get nothing, and no cell of the key changed. */
static void test_coalesced_throttled_spends_nothing(void **state)
{
    static lc_run run = {.body = "{\"flow_step_id\": \"lcx\", \"worker_id\": \"w\","
                                 " \"limit_keys\": [\"model:lcx\", \"site:lcx\"],"
                                 " \"estimated_tokens\": 10}",
                         .rounds = 3};
    (void)state;
    vt_put_limit(&srv[0], "model:lcx",
                 "{\"concurrency\": 5, \"rate\": {\"per\": \"second\", \"count\": 100},"
                 " \"tokens_per_minute\": 100000}");
    vt_put_limit(&srv[0], "site:lcx", "{\"concurrency\": 50}");
    run.first_id = seed("lcx", 20);
    vt_resp r = vt_http(&srv[0], "POST", "/v1/limits/model:lcx/backoff", VT_WORKER,
                        "{\"retry_after_seconds\": 60, \"reason\": \"429\"}", NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    char *model = cells_of("model:lcx"), *site = cells_of("site:lcx");
    coalesced before = coalesced_now();
    run_clients(&run, 16);
    coalesced_since(before, 48);
    assert_int_equal(atomic_load(&run.got), 0);
    char *model_after = cells_of("model:lcx"), *site_after = cells_of("site:lcx");
    assert_string_equal(model, model_after);
    assert_string_equal(site, site_after);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'lcx'"), 0);
    free(model);
    free(site);
    free(model_after);
    free(site_after);
}

/* Items carry their own keys (one site with concurrency 1, one without a limit); 16 clients
 * claim without keys of their own: the limited site never runs two at once, every item of
 * both sites is handed out once. */
static void test_coalesced_item_keys(void **state)
{
    static lc_run run = {.body = "{\"flow_step_id\": \"lci\", \"worker_id\": \"w\"}",
                         .target = 60,
                         .hold_ms = 3,
                         .complete = true};
    char ident[32];
    (void)state;
    vt_put_limit(&srv[0], "site:lci-one", "{\"concurrency\": 1}");
    for (int i = 0; i < 60; i++) {
        snprintf(ident, sizeof(ident), "lci%d", i);
        vt_register(&srv[i % 2], "lci", ident,
                    i % 2 ? "\"limit_keys\": [\"site:lci-one\"]"
                          : "\"limit_keys\": [\"site:lci-two\"]");
    }
    run.first_id = vt_sql_long("SELECT min(id) FROM items WHERE flow_step_id = 'lci'");
    coalesced before = coalesced_now();
    run_clients(&run, 16);
    coalesced_since(before, 60);
    each_once(&run, 60, true);
    assert_int_equal(vt_max_in_flight("lci", "site:lci-one"), 1);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'lci'"
                                 " AND state = 'processed'"),
                     60);
}

/* One claim of 30 items, 8,000 tokens a minute (eight shards of 1,000), 300 estimated per item:
 * the cells are taken in one statement for the run of items, three estimates share a shard,
 * so 24 are handed out and 7,200 reserved; a job's usage settles on its own shard. */
static void test_shared_token_shards(void **state)
{
    (void)state;
    while (vt_sql_long("SELECT extract(second FROM now())::int") > 45)
        vt_sleep_ms(500);
    vt_put_limit(&srv[0], "model:lcs", "{\"tokens_per_minute\": 8000, \"concurrency\": 100}");
    seed("lcs", 30);
    vt_resp r = vt_http(&srv[0], "POST", "/v1/claims", VT_WORKER,
                        "{\"flow_step_id\": \"lcs\", \"worker_id\": \"w\", \"limit\": 30,"
                        " \"limit_keys\": [\"model:lcs\"], \"estimated_tokens\": 300}",
                        NULL);
    assert_int_equal(r.status, 200);
    const cJSON *claims = cJSON_GetObjectItem(r.json, "claims");
    assert_int_equal(cJSON_GetArraySize(claims), 24);
    const cJSON *first = cJSON_GetArrayItem(claims, 0);
    vt_claim c = {(int64_t)vt_num(first, "job_id"), (int64_t)vt_num(first, "item.id"), 1, ""};
    snprintf(c.token, sizeof(c.token), "%s", vt_str(first, "claim_token"));
    vt_resp_free(&r);
    assert_true(vt_limit_num(&srv[1], "model:lcs", "tokens_reserved") == 7200);
    assert_int_equal(
        vt_sql_long("SELECT count(DISTINCT j.limit_cells[1]) FROM jobs j"
                    " WHERE j.flow_step_id = 'lcs' AND cardinality(j.limit_cells) = 1"),
        8);
    assert_int_equal(vt_sql_long("SELECT count(DISTINCT h) FROM limit_lanes c CROSS JOIN"
                                 " unnest(c.holders) h JOIN jobs j ON j.id = h"
                                 " WHERE c.key = 'model:lcs' AND j.status = 'processing'"),
                     24);
    r = vt_dispose(&srv[1], &c,
                   "\"disposition\": \"complete\", \"usage\": {\"input_tokens\": 60,"
                   " \"output_tokens\": 40}");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_true(vt_limit_num(&srv[1], "model:lcs", "tokens_reserved") == 7000);
    assert_true(vt_limit_num(&srv[1], "model:lcs", "tokens_used") == 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coalesced_concurrency_never_exceeded),
        cmocka_unit_test(test_coalesced_rate_within_burst),
        cmocka_unit_test(test_coalesced_token_window),
        cmocka_unit_test(test_coalesced_throttled_spends_nothing),
        cmocka_unit_test(test_coalesced_item_keys),
        cmocka_unit_test(test_shared_token_shards),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
