/* test_lockorder.c - the lock order: heartbeats, dispositions (single and batch, with
 * claim_next), tool failures, session outcomes and the sweeper fired together at 32
 * clients against a cluster of the test's own (deadlock_timeout 50 ms, log_lock_waits on), then
 * PostgreSQL's log is read: zero "deadlock detected", and no client got a 503 or any other 5xx. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "verdict/util.h"
#include "vt.h"
#include "vt_api.h"
#include "vt_pg.h"

#define CLIENTS 32
#define RING 96
#define SECONDS 8.0

static vt_pg pg;
static vt_server srv;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static vt_claim ring[RING];
static int ring_n, ring_next;
static long answers[600], calls;

#define OK_SESSION                                                                                 \
    "{\"returncode\": 0, \"stdout\": \"{\\\"type\\\": \\\"result\\\", \\\"subtype\\\":"            \
    " \\\"success\\\", \\\"is_error\\\": false, \\\"result\\\": \\\"all done\\\"}\"}"

static void count(const vt_resp *r)
{
    pthread_mutex_lock(&mu);
    if (r->status >= 0 && r->status < 600)
        answers[r->status]++;
    calls++;
    pthread_mutex_unlock(&mu);
    if (r->status >= 500)
        fprintf(stderr, "%ld: %s\n", r->status, r->body ? r->body : "");
}

static bool pick(vt_claim *out, unsigned *seed)
{
    pthread_mutex_lock(&mu);
    bool ok = ring_n > 0;
    if (ok)
        *out = ring[rand_r(seed) % (unsigned)ring_n];
    pthread_mutex_unlock(&mu);
    return ok;
}

static void claim_some(void)
{
    vt_resp r = vt_http(&srv, "POST", "/v1/claims", VT_WORKER,
                        "{\"flow_step_id\": \"lo\", \"worker_id\": \"w\", \"limit\": 3,"
                        " \"lease_seconds\": 5}",
                        NULL);
    count(&r);
    cJSON *claims = r.json ? cJSON_GetObjectItem(r.json, "claims") : NULL;
    cJSON *c = NULL;
    cJSON_ArrayForEach(c, claims)
    {
        vt_claim k = {0};
        k.job_id = (int64_t)vt_num(c, "job_id");
        snprintf(k.token, sizeof(k.token), "%s", vt_str(c, "claim_token"));
        pthread_mutex_lock(&mu);
        ring[ring_next] = k;
        ring_next = (ring_next + 1) % RING;
        if (ring_n < RING)
            ring_n++;
        pthread_mutex_unlock(&mu);
    }
    vt_resp_free(&r);
}

static void job_call(const vt_claim *k, const char *what, const char *members)
{
    char path[96], body[1024];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/%s", (long long)k->job_id, what);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\"%s%s}", k->token, *members ? ", " : "",
             members);
    vt_resp r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    count(&r);
    vt_resp_free(&r);
}

static void batch(unsigned *seed)
{
    vt_claim a, b;
    char body[600];
    if (!pick(&a, seed) || !pick(&b, seed) || a.job_id == b.job_id)
        return;
    snprintf(body, sizeof(body),
             "{\"claim_next\": 2, \"lease_seconds\": 5, \"dispositions\": [{\"job_id\": %lld, "
             "\"claim_token\": \"%s\", \"disposition\":"
             " \"defer\", \"reason\": \"later\"}, {\"job_id\": %lld, \"claim_token\": \"%s\","
             " \"disposition\": \"complete\"}]}",
             (long long)a.job_id, a.token, (long long)b.job_id, b.token);
    vt_resp r = vt_http(&srv, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
    count(&r);
    vt_resp_free(&r);
}

static void *client(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
    double end = vd_monotonic() + SECONDS;
    vt_claim k;
    while (vd_monotonic() < end) {
        int op = rand_r(&seed) % 10;
        if (op == 0 || !pick(&k, &seed))
            claim_some();
        else if (op <= 3)
            job_call(&k, "heartbeat", "\"lease_seconds\": 5");
        else if (op == 4)
            job_call(&k, "tool-failures",
                     "\"tool\": \"search\", \"args\": {\"q\": \"x\"}, \"error\": \"timeout\"");
        else if (op == 5)
            job_call(&k, "disposition", /* claim_next: the claim runs under the job's locks */
                     "\"disposition\": \"complete\", \"claim_next\": 2, \"lease_seconds\": 5");
        else if (op == 6)
            job_call(&k, "disposition", "\"disposition\": \"defer\", \"reason\": \"later\"");
        else if (op == 7)
            job_call(&k, "session-outcome", "\"session\": " OK_SESSION);
        else
            batch(&seed);
    }
    vt_http_thread_cleanup();
    return NULL;
}

static void register_items(int n)
{
    static char body[200000];
    for (int base = 0; base < n; base += 500) {
        size_t len = (size_t)snprintf(body, sizeof(body), "{\"items\": [");
        for (int i = base; i < base + 500 && i < n; i++)
            len += (size_t)snprintf(body + len, sizeof(body) - len,
                                    "%s{\"flow_step_id\": \"lo\", \"source_type\": \"t\","
                                    " \"item_identifier\": \"i%d\", \"max_attempts\": 50,"
                                    " \"max_defers\": 50}",
                                    i > base ? ", " : "", i);
        snprintf(body + len, sizeof(body) - len, "]}");
        vt_resp r = vt_http(&srv, "POST", "/v1/items", VT_ADMIN, body, NULL);
        assert_int_equal(r.status, 200);
        vt_resp_free(&r);
    }
}

static void test_lockorder_no_deadlocks(void **state)
{
    (void)state;
    pthread_t t[CLIENTS];
    register_items(6000);
    for (int i = 0; i < CLIENTS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, client, (void *)(uintptr_t)(i + 1)), 0);
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(t[i], NULL);
    long errors = 0;
    for (int s = 500; s < 600; s++)
        errors += answers[s];
    int deadlocks = vt_pg_log_count(&pg, "deadlock detected");
    int waits = vt_pg_log_count(&pg, "still waiting for");
    fprintf(stderr,
            "lockorder: %ld calls, %ld 200, %ld 409, %ld 5xx (%ld 503); PostgreSQL log: "
            "%d deadlocks, %d lock waits over 50 ms\n",
            calls, answers[200], answers[409], errors, answers[503], deadlocks, waits);
    /* enough real contention to mean something */
    assert_true(calls > 500);
    assert_int_equal(deadlocks, 0);
    assert_int_equal(errors, 0);
}

/* A cluster of its own, to read its log of lock waits and deadlocks. */
VT_FIXTURE(.srv = {&srv}, .pg = &pg,
           .pg_conf = "log_lock_waits = on\ndeadlock_timeout = 50ms\nfsync = off\n"
                      "synchronous_commit = off\nfull_page_writes = off",
           .env = VT_ENV("VERDICT_THREADS=8", "VERDICT_DB_POOL_SIZE=24",
                         "VERDICT_SWEEP_INTERVAL_SECONDS=1", "VERDICT_LOG_LEVEL=warn"))

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_lockorder_no_deadlocks)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
