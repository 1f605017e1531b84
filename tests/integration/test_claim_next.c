/* test_claim_next.c - `claim_next` on POST /v1/jobs/{id}/disposition and
 * POST /v1/dispositions over HTTP against PostgreSQL: the answer's shape (claims exactly as
 * POST /v1/claims answers them, for the job's flow step and worker), the lease, replays of a
 * single call (the kept answer carries the same claims), refused and paused calls claiming
 * nothing, validation, and many concurrent workers living on claim_next alone: every item is
 * handed out once and finished once. */
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

#define CLIENTS 12
#define ITEMS 600

static vt_server srv;

static void seed(const char *flow, int n)
{
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('%s') ON CONFLICT DO NOTHING", flow);
    vt_seed_items(flow, "cn-", n, 5, 3);
}

static long jobs_of(const char *flow)
{
    return vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = '%s'", flow);
}

/* A claim of the answer's `claims` array into c. */
static void claim_of(const cJSON *e, vt_claim *c)
{
    c->job_id = (int64_t)vt_num(e, "job_id");
    c->item_id = (int64_t)vt_num(e, "item.id");
    c->attempt = (int)vt_num(e, "attempt");
    snprintf(c->token, sizeof(c->token), "%s", vt_str(e, "claim_token"));
}

/* Every member POST /v1/claims gives a claim, and nothing else. */
static void assert_claim_shape(const cJSON *e, const char *flow)
{
    static const char *const members[] = {
        "job_id", "claim_token",         "attempt", "lease_expires_at",
        "item",   "previous_checkpoint", "review"};
    int n = 0;
    for (const cJSON *m = e->child; m; m = m->next)
        n++;
    assert_int_equal(n, 7);
    for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++)
        assert_non_null(cJSON_GetObjectItemCaseSensitive(e, members[i]));
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(e, "review")));
    assert_string_equal(vt_str(e, "item.state"), "claimed");
    assert_string_equal(vt_str(e, "item.flow_step_id"), flow);
}

/* A single call with claim_next: finished, and the next two claimed for the same worker with
 * the lease asked for; transitions for the new claims; the answer keeps its members. */
static void test_claim_next_single_shape(void **state)
{
    (void)state;
    seed("cn_a", 5);
    vt_claim c = vt_claim1(&srv, "cn_a");
    vt_resp r = vt_dispose(&srv, &c,
                           "\"disposition\": \"complete\", \"claim_next\": 2,"
                           " \"lease_seconds\": 60");
    if (r.status != 200)
        fail_msg("%ld %s", r.status, r.body);
    assert_string_equal(vt_str(r.json, "disposition"), "complete");
    assert_string_equal(vt_str(r.json, "item.state"), "processed");
    assert_string_equal(vt_str(r.json, "job.status"), "completed");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "replayed")));
    const cJSON *claims = cJSON_GetObjectItem(r.json, "claims");
    assert_true(cJSON_IsArray(claims));
    assert_int_equal(cJSON_GetArraySize(claims), 2);
    const cJSON *e = NULL;
    cJSON_ArrayForEach(e, claims)
    {
        vt_claim n;
        assert_claim_shape(e, "cn_a");
        claim_of(e, &n);
        assert_true(n.item_id != c.item_id);
        assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE id = %lld AND"
                                     " worker_id = 'test' AND status = 'processing' AND"
                                     " lease_expires_at BETWEEN now() + interval '50 s'"
                                     " AND now() + interval '61 s'",
                                     (long long)n.job_id),
                         1);
        assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE job_id = %lld"
                                     " AND cause = 'claim' AND actor = 'bot'",
                                     (long long)n.job_id),
                         1);
        /* the claim works: finish it without claim_next (no claims member then) */
        vt_resp d = vt_dispose(&srv, &n, "\"disposition\": \"complete\"");
        assert_int_equal(d.status, 200);
        assert_null(cJSON_GetObjectItem(d.json, "claims"));
        vt_resp_free(&d);
    }
    vt_resp_free(&r);
    assert_int_equal(jobs_of("cn_a"), 3);
}

/* An identical repeat replays the kept answer with the same claims and claims nothing new;
 * another call on the finished job is refused and claims nothing. */
static void test_claim_next_replay(void **state)
{
    (void)state;
    seed("cn_b", 4);
    vt_claim c = vt_claim1(&srv, "cn_b");
    const char *body = "\"disposition\": \"complete\", \"claim_next\": 2";
    vt_resp r = vt_dispose(&srv, &c, body);
    assert_int_equal(r.status, 200);
    vt_resp again = vt_dispose(&srv, &c, body);
    assert_int_equal(again.status, 200);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(again.json, "replayed")));
    const cJSON *a = cJSON_GetObjectItem(r.json, "claims"),
                *b = cJSON_GetObjectItem(again.json, "claims");
    assert_int_equal(cJSON_GetArraySize(a), 2);
    assert_int_equal(cJSON_GetArraySize(b), 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal((int64_t)vt_num(cJSON_GetArrayItem(a, i), "job_id"),
                         (int64_t)vt_num(cJSON_GetArrayItem(b, i), "job_id"));
        assert_string_equal(vt_str(cJSON_GetArrayItem(a, i), "claim_token"),
                            vt_str(cJSON_GetArrayItem(b, i), "claim_token"));
    }
    assert_int_equal(jobs_of("cn_b"), 3);
    /* kept compactly: the claimed job ids, not the claims with their items */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE id = %lld AND"
                                 " answer_response IS NULL AND answer_tail LIKE"
                                 " '%%,\"claimed\":[%%,%%]' AND answer_tail NOT LIKE"
                                 " '%%claim_token%%'",
                                 (long long)c.job_id),
                     1);
    /* the same disposition without claim_next is another call: refused, nothing claimed */
    vt_resp other = vt_dispose(&srv, &c, "\"disposition\": \"complete\"");
    vt_assert_error(&other, 409, "job_finalized");
    assert_int_equal(jobs_of("cn_b"), 3);
    vt_resp_free(&r);
    vt_resp_free(&again);
    vt_resp_free(&other);
}

/* A refused disposition claims nothing; a paused flow step finishes the job, claims none. */
static void test_claim_next_refused_and_paused(void **state)
{
    (void)state;
    seed("cn_c", 4);
    vt_claim c = vt_claim1(&srv, "cn_c"), wrong = c;
    snprintf(wrong.token, sizeof(wrong.token), "00000000-0000-4000-8000-000000000000");
    vt_resp r = vt_dispose(&srv, &wrong, "\"disposition\": \"complete\", \"claim_next\": 3");
    vt_assert_error(&r, 409, "claim_lost");
    vt_resp_free(&r);
    assert_int_equal(jobs_of("cn_c"), 1);
    r = vt_dispose(&srv, &c, "\"disposition\": \"complete\", \"claim_next\": 101");
    vt_assert_error(&r, 400, "invalid_field");
    assert_string_equal(vt_str(r.json, "field"), "claim_next");
    vt_resp_free(&r);
    r = vt_dispose(&srv, &c,
                   "\"disposition\": \"complete\", \"claim_next\": 1,"
                   " \"lease_seconds\": 1");
    vt_assert_error(&r, 400, "invalid_field");
    assert_string_equal(vt_str(r.json, "field"), "lease_seconds");
    vt_resp_free(&r);
    assert_int_equal(jobs_of("cn_c"), 1);
    r = vt_http(&srv, "POST", "/v1/flow-steps/cn_c/pause", VT_ADMIN, "{}", NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    r = vt_dispose(&srv, &c, "\"disposition\": \"complete\", \"claim_next\": 3");
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "item.state"), "processed");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "claims")), 0);
    vt_resp_free(&r);
    assert_int_equal(jobs_of("cn_c"), 1);
}

/* A batch claims for the first finished entry's flow step and worker, after its results;
 * a batch that finishes nothing (all replays or refusals) claims nothing. */
static void test_claim_next_batch(void **state)
{
    (void)state;
    vt_claim c[3];
    char body[1200];
    seed("cn_d", 8);
    assert_int_equal(vt_claim_n(&srv, "cn_d", 3, 300, c), 3);
    snprintf(body, sizeof(body),
             "{\"claim_next\": 4, \"dispositions\": ["
             "{\"job_id\": %lld, \"claim_token\": \"%s\", \"disposition\": \"complete\"},"
             "{\"job_id\": %lld, \"claim_token\": \"00000000-0000-4000-8000-000000000000\","
             " \"disposition\": \"complete\"},"
             "{\"job_id\": %lld, \"claim_token\": \"%s\", \"disposition\": \"complete\"}]}",
             (long long)c[0].job_id, c[0].token, (long long)c[1].job_id, (long long)c[2].job_id,
             c[2].token);
    vt_resp r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    const cJSON *results = cJSON_GetObjectItem(r.json, "results");
    assert_int_equal(cJSON_GetArraySize(results), 3);
    assert_int_equal((int)vt_num(cJSON_GetArrayItem(results, 1), "status"), 409);
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(results, 0), "claims"));
    const cJSON *claims = cJSON_GetObjectItem(r.json, "claims"), *e = NULL;
    assert_int_equal(cJSON_GetArraySize(claims), 4);
    cJSON_ArrayForEach(e, claims)
    {
        assert_claim_shape(e, "cn_d");
    }
    vt_resp_free(&r);
    assert_int_equal(jobs_of("cn_d"), 7);
    /* the identical batch again: its entries replay or are refused; nothing new is claimed */
    r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(
        cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "results"), 0), "replayed")));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "claims")), 0);
    vt_resp_free(&r);
    assert_int_equal(jobs_of("cn_d"), 7);
    r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER,
                "{\"claim_next\": -1, \"dispositions\": []}", NULL);
    vt_assert_error(&r, 400, "invalid_field");
    assert_string_equal(vt_str(r.json, "field"), "claim_next");
    vt_resp_free(&r);
}

typedef struct run {
    atomic_int handed[ITEMS]; /* by item id - first id */
    atomic_int completes, errors;
    int64_t first_id;
} run;

static run R;

/* Count the claims of an answer and keep them in held[]; returns how many. */
static int take_claims(const cJSON *claims, vt_claim *held, int max)
{
    int n = 0;
    const cJSON *e = NULL;
    cJSON_ArrayForEach(e, claims)
    {
        if (n >= max)
            break;
        claim_of(e, &held[n]);
        int64_t k = held[n].item_id - R.first_id;
        if (k >= 0 && k < ITEMS)
            atomic_fetch_add(&R.handed[k], 1);
        n++;
    }
    return n;
}

/* One worker: claim once, then only single dispositions with claim_next (odd workers) or
 * batches with claim_next (even ones) until the stock is gone. */
static void *worker(void *arg)
{
    int index = (int)(intptr_t)arg, limit = index % 2 ? 1 : 4, n = 0;
    vt_claim held[4];
    char body[1200];
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"cn_load\", \"worker_id\": \"w%d\","
             " \"limit\": %d}",
             index, limit);
    vt_resp r = vt_http(&srv, "POST", "/v1/claims", VT_WORKER, body, NULL);
    if (r.status == 200)
        n = take_claims(cJSON_GetObjectItem(r.json, "claims"), held, limit);
    else
        atomic_fetch_add(&R.errors, 1);
    vt_resp_free(&r);
    while (n > 0) {
        if (limit == 1) {
            r = vt_dispose(&srv, &held[0], "\"disposition\": \"complete\", \"claim_next\": 1");
        } else {
            size_t len = (size_t)snprintf(body, sizeof(body),
                                          "{\"claim_next\": %d, "
                                          "\"dispositions\": [",
                                          limit);
            for (int i = 0; i < n; i++)
                len += (size_t)snprintf(body + len, sizeof(body) - len,
                                        "%s{\"job_id\": %lld, \"claim_token\": \"%s\","
                                        " \"disposition\": \"complete\"}",
                                        i ? "," : "", (long long)held[i].job_id, held[i].token);
            snprintf(body + len, sizeof(body) - len, "]}");
            r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
        }
        if (r.status != 200) {
            atomic_fetch_add(&R.errors, 1);
            vt_resp_free(&r);
            break;
        }
        atomic_fetch_add(&R.completes, n);
        n = take_claims(cJSON_GetObjectItem(r.json, "claims"), held, limit);
        vt_resp_free(&r);
    }
    vt_http_thread_cleanup();
    return NULL;
}

/* Many workers living on claim_next: no item handed out twice, every item finished once,
 * one claim transition and one finishing transition per item. */
static void test_claim_next_concurrency(void **state)
{
    (void)state;
    pthread_t t[CLIENTS];
    seed("cn_load", ITEMS);
    R.first_id = vt_sql_long("SELECT min(id) FROM items WHERE flow_step_id = 'cn_load'");
    for (int i = 0; i < CLIENTS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&R.errors), 0);
    assert_int_equal(atomic_load(&R.completes), ITEMS);
    for (int i = 0; i < ITEMS; i++) {
        if (atomic_load(&R.handed[i]) != 1)
            fail_msg("item %d was handed out %d times", i, atomic_load(&R.handed[i]));
    }
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'cn_load'"
                                 " AND state = 'processed'"),
                     ITEMS);
    assert_int_equal(jobs_of("cn_load"), ITEMS);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit t JOIN items i"
                                 " ON i.id = t.item_id WHERE i.flow_step_id = 'cn_load'"),
                     2 * ITEMS);
}

VT_SERVER_FIXTURE(srv, NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claim_next_single_shape),
        cmocka_unit_test(test_claim_next_replay),
        cmocka_unit_test(test_claim_next_refused_and_paused),
        cmocka_unit_test(test_claim_next_batch),
        cmocka_unit_test(test_claim_next_concurrency),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
