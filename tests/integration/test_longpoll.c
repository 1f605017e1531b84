/* test_longpoll.c - long-poll claims (POST /v1/claims with wait_seconds) over HTTP
 * against PostgreSQL: a registration wakes a parked claim through LISTEN/NOTIFY (on a server
 * whose periodic retry is a minute away, so only the notification can), an item inserted
 * without a notification and a deferred item coming due are found by the periodic retry, an
 * empty wait answers at its deadline, 40 parked claims on 2 worker threads hold no thread,
 * 20 waiters share 10 items fairly, Idempotency-Key keeps the final answer, validation, a
 * client that hangs up while parked, and a stop that answers every parked claim. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "verdict/util.h"
#include "vt.h"
#include "vt_api.h"

#define MANY 40

static vt_server srv;

/* One long-poll claim, run on its own thread; the main thread asserts on what it recorded. */
typedef struct waiter {
    const vt_server *s;
    char flow[64];
    int wait;
    const char *key; /* Idempotency-Key or NULL */
    pthread_t thread;
    long status;
    int claims;
    int64_t item_id, job_id;
    char token[64];
    bool replayed;
    double started, answered;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    char body[256], hdr[128];
    const char *headers[] = {hdr, NULL};
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"%s\", \"worker_id\": \"lp\", \"wait_seconds\": %d}", w->flow,
             w->wait);
    snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s", w->key ? w->key : "");
    w->started = vd_monotonic();
    vt_resp r = vt_http(w->s, "POST", "/v1/claims", VT_WORKER, body, w->key ? headers : NULL);
    w->answered = vd_monotonic();
    w->status = r.status;
    w->replayed = r.replayed;
    const cJSON *claims = r.json ? cJSON_GetObjectItem(r.json, "claims") : NULL;
    w->claims = cJSON_IsArray(claims) ? cJSON_GetArraySize(claims) : -1;
    if (w->claims > 0) {
        w->item_id = (int64_t)vt_num(r.json, "claims.0.item.id");
        w->job_id = (int64_t)vt_num(r.json, "claims.0.job_id");
        snprintf(w->token, sizeof(w->token), "%s", vt_str(r.json, "claims.0.claim_token"));
    }
    vt_resp_free(&r);
    vt_http_thread_cleanup();
    return NULL;
}

static void waiter_start(waiter *w, const vt_server *s, const char *flow, int wait)
{
    memset(w, 0, sizeof(*w));
    w->s = s;
    snprintf(w->flow, sizeof(w->flow), "%s", flow);
    w->wait = wait;
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_main, w), 0);
}

static void waiter_join(waiter *w)
{
    pthread_join(w->thread, NULL);
    if (w->status != 200)
        fail_msg("claim of %s answered %ld", w->flow, w->status);
}

/* verdict_claim_waiters from /metrics. */
static long parked(const vt_server *s)
{
    vt_resp r = vt_http(s, "GET", "/metrics", VT_ADMIN, NULL, NULL);
    const char *p = r.body ? strstr(r.body, "\nverdict_claim_waiters ") : NULL;
    long n = p ? strtol(p + strlen("\nverdict_claim_waiters "), NULL, 10) : -1;
    vt_resp_free(&r);
    return n;
}

/* Wait (at most 10 s) until n claims are parked; fails otherwise. */
static void await_parked(const vt_server *s, long n)
{
    long seen = -1;
    for (int i = 0; i < 400; i++) {
        seen = parked(s);
        if (seen == n)
            return;
        vt_sleep_ms(25);
    }
    fail_msg("expected %ld parked claims, saw %ld", n, seen);
}

/* A registration 300 ms after the claim parked wakes it through the notification: on a
 * server whose periodic retry is 60 s away, only NOTIFY can answer it before its deadline. */
static void test_notify_wakes_waiter(void **state)
{
    static const char *env[] = {"VERDICT_WAIT_RETRY_MS=60000", NULL};
    vt_server slow;
    waiter w;
    (void)state;
    vt_server_start(&slow, env);
    waiter_start(&w, &slow, "lp_notify", 5);
    await_parked(&slow, 1);
    vt_sleep_ms(300);
    double reg = vd_monotonic();
    int64_t id = vt_register(&srv, "lp_notify", "n1", NULL); /* through the other server */
    waiter_join(&w);
    assert_int_equal(w.claims, 1);
    assert_int_equal(w.item_id, id);
    if (w.answered - reg > 1.0 || w.answered - w.started > 2.0)
        fail_msg("woken %.3f s after the registration (%.3f s in all)", w.answered - reg,
                 w.answered - w.started);
    assert_int_equal(parked(&slow), 0);
    vt_server_stop(&slow);
}

/* Start a waiter on s, wait until it is parked, run `what` (an HTTP call of the main server,
 * or SQL), and assert the waiter got item `id` within `bound` seconds of it. */
typedef void (*action_fn)(int64_t arg);

static waiter *woken_by(vt_server *s, const char *flow, action_fn what, int64_t arg, int64_t id,
                        double bound)
{
    static waiter w;
    waiter_start(&w, s, flow, 15);
    await_parked(s, 1);
    double t0 = vd_monotonic();
    what(arg);
    waiter_join(&w);
    assert_int_equal(w.claims, 1);
    assert_int_equal(w.item_id, id);
    if (w.answered - t0 > bound)
        fail_msg("woken %.3f s after the change (bound %.1f s)", w.answered - t0, bound);
    return &w;
}

static char held_token[64];

static void post_ok(const char *path, const char *body)
{
    vt_resp r = vt_http(&srv, "POST", path, VT_ADMIN, body, NULL);
    if (r.status != 200)
        fail_msg("%s: %ld %s", path, r.status, r.body);
    vt_resp_free(&r);
}

static void holder_release(int64_t job)
{
    char path[64], body[128];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/release", (long long)job);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\"}", held_token);
    post_ok(path, body);
}

static void admin_release(int64_t item)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/items/%lld/release", (long long)item);
    post_ok(path, "{\"reason\": \"test\"}");
}

static void requeue_one(int64_t item)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/items/%lld/requeue", (long long)item);
    post_ok(path, "{\"reason\": \"test\"}");
}

static void resume_step(int64_t unused)
{
    (void)unused;
    post_ok("/v1/flow-steps/lp_ann/resume", NULL);
}

static void expire_lease(int64_t item)
{
    vt_sql("UPDATE items SET lease_expires_at = now() - interval '1 second' WHERE id = %lld",
           (long long)item);
}

/* Every change that makes an item claimable now announces it: a holder's release, an admin's
 * release, a requeue, a resume of the flow step, the sweeper's expiry of a lease. On a server
 * whose periodic retry is a minute away, each wakes a parked claim within a second or two. */
static void test_every_change_announces(void **state)
{
    static const char *env[] = {"VERDICT_WAIT_RETRY_MS=60000", "VERDICT_SWEEP_INTERVAL_SECONDS=1",
                                NULL};
    vt_server slow;
    (void)state;
    vt_server_start(&slow, env);
    int64_t id = vt_register(&srv, "lp_ann", "a1", NULL);
    vt_claim c = vt_claim1(&srv, "lp_ann");
    snprintf(held_token, sizeof(held_token), "%s", c.token);
    waiter *w = woken_by(&slow, "lp_ann", holder_release, c.job_id, id, 1.5);
    w = woken_by(&slow, "lp_ann", admin_release, id, id, 1.5);
    vt_claim done = {w->job_id, id, 1, ""};
    snprintf(done.token, sizeof(done.token), "%s", w->token);
    vt_resp r = vt_dispose(&srv, &done, "\"disposition\": \"complete\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    w = woken_by(&slow, "lp_ann", requeue_one, id, id, 1.5);
    post_ok("/v1/flow-steps/lp_ann/pause", NULL);
    int64_t id2 = vt_register(&srv, "lp_ann", "a2", NULL); /* paused: not claimable yet */
    woken_by(&slow, "lp_ann", resume_step, 0, id2, 1.5);
    woken_by(&slow, "lp_ann", expire_lease, id2, id2, 3.0); /* a sweep every second */
    vt_server_stop(&slow);
}

static long listeners(void)
{
    return vt_sql_long(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE application_name = 'verdictd-listen' AND datname = current_database()");
}

/* The LISTEN connection comes back after it is cut (the database restarted): on a server
 * whose periodic retry is a minute away, a registration afterwards still wakes a waiter. */
static void test_listen_reconnects(void **state)
{
    static const char *env[] = {"VERDICT_WAIT_RETRY_MS=60000", NULL};
    vt_server slow;
    waiter w;
    (void)state;
    vt_server_start(&slow, env);
    for (int i = 0; i < 200 && listeners() < 2; i++)
        vt_sleep_ms(25);
    assert_int_equal(listeners(), 2); /* srv's and slow's */
    vt_sql_long("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name = 'verdictd-listen' AND datname = current_database()");
    for (int i = 0; i < 50 && listeners() > 0; i++)
        vt_sleep_ms(20);
    for (int i = 0; i < 400 && listeners() < 2; i++)
        vt_sleep_ms(25);
    assert_int_equal(listeners(), 2);
    waiter_start(&w, &slow, "lp_relisten", 10);
    await_parked(&slow, 1);
    double reg = vd_monotonic();
    int64_t id = vt_register(&srv, "lp_relisten", "r1", NULL);
    waiter_join(&w);
    assert_int_equal(w.item_id, id);
    if (w.answered - reg > 1.5)
        fail_msg("woken %.3f s after the registration", w.answered - reg);
    vt_server_stop(&slow);
}

/* An item inserted by SQL (no notification) is found by the periodic retry (1 s), long
 * before the 8 s deadline. */
static void test_retry_finds_unannounced_item(void **state)
{
    waiter w;
    (void)state;
    waiter_start(&w, &srv, "lp_tick", 8);
    await_parked(&srv, 1);
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('lp_tick')");
    vt_seed_items("lp_tick", "t", 1, 3, 3);
    double ins = vd_monotonic();
    waiter_join(&w);
    assert_int_equal(w.claims, 1);
    if (w.answered - ins > 3.0)
        fail_msg("found %.3f s after the insert", w.answered - ins);
}

/* A deferred item coming due by time (delay_seconds: no notification) wakes a waiter. */
static void test_deferred_item_wakes_waiter(void **state)
{
    waiter w;
    (void)state;
    int64_t id = vt_register(&srv, "lp_due", "d1", "\"delay_seconds\": 2");
    double reg = vd_monotonic();
    waiter_start(&w, &srv, "lp_due", 10);
    waiter_join(&w);
    assert_int_equal(w.claims, 1);
    assert_int_equal(w.item_id, id);
    if (w.answered - reg < 1.9 || w.answered - reg > 5.0)
        fail_msg("claimed %.3f s after the registration (due at 2 s)", w.answered - reg);
}

/* Nothing comes: {"claims": []} at the deadline, not before. */
static void test_empty_wait_answers_at_deadline(void **state)
{
    waiter w;
    (void)state;
    waiter_start(&w, &srv, "lp_empty", 1);
    waiter_join(&w);
    assert_int_equal(w.claims, 0);
    double took = w.answered - w.started;
    if (took < 1.0 || took > 3.0)
        fail_msg("answered after %.3f s", took);
    assert_int_equal(parked(&srv), 0);
}

/* 40 parked claims on a server of 2 worker threads: a registration still answers at once
 * (a thread held per waiter would leave none), and then every waiter gets one of its 40
 * items, each exactly once. */
static void test_many_waiters_hold_no_thread(void **state)
{
    static waiter ws[MANY];
    char body[8192];
    size_t n = 0;
    (void)state;
    for (int i = 0; i < MANY; i++)
        waiter_start(&ws[i], &srv, "lp_many", 15);
    await_parked(&srv, MANY);
    n += (size_t)snprintf(body + n, sizeof(body) - n, "{\"items\": [");
    for (int i = 0; i < MANY; i++)
        n += (size_t)snprintf(body + n, sizeof(body) - n,
                              "%s{\"flow_step_id\": \"lp_many\", \"source_type\": \"rss\","
                              " \"item_identifier\": \"m%d\"}",
                              i ? "," : "", i);
    snprintf(body + n, sizeof(body) - n, "]}");
    double t0 = vd_monotonic();
    vt_resp r = vt_http(&srv, "POST", "/v1/items", VT_WORKER, body, NULL);
    double took = vd_monotonic() - t0;
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    if (took > 0.5)
        fail_msg("a registration took %.3f s with %d claims parked", took, MANY);
    for (int i = 0; i < MANY; i++) {
        waiter_join(&ws[i]);
        assert_int_equal(ws[i].claims, 1);
        if (ws[i].answered - t0 > 5.0)
            fail_msg("waiter %d answered %.3f s after the registration", i, ws[i].answered - t0);
    }
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'lp_many'"), MANY);
    assert_int_equal(
        vt_sql_long("SELECT count(DISTINCT item_id) FROM jobs WHERE flow_step_id = 'lp_many'"),
        MANY);
}

/* 20 waiters, 10 items in one registration: 10 waiters get one each (every item once), the
 * other 10 answer empty at their deadline. */
static void test_fair_share(void **state)
{
    static waiter ws[20];
    char body[4096];
    size_t n = 0;
    int got = 0, empty = 0;
    (void)state;
    for (int i = 0; i < 20; i++)
        waiter_start(&ws[i], &srv, "lp_fair", 3);
    await_parked(&srv, 20);
    n += (size_t)snprintf(body + n, sizeof(body) - n, "{\"items\": [");
    for (int i = 0; i < 10; i++)
        n += (size_t)snprintf(body + n, sizeof(body) - n,
                              "%s{\"flow_step_id\": \"lp_fair\", \"source_type\": \"rss\","
                              " \"item_identifier\": \"f%d\"}",
                              i ? "," : "", i);
    snprintf(body + n, sizeof(body) - n, "]}");
    vt_resp r = vt_http(&srv, "POST", "/v1/items", VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    for (int i = 0; i < 20; i++) {
        waiter_join(&ws[i]);
        assert_in_range(ws[i].claims, 0, 1);
        if (ws[i].claims == 1) {
            got++;
        } else {
            empty++;
            if (ws[i].answered - ws[i].started < 2.9)
                fail_msg("an empty waiter answered after %.3f s, before its deadline",
                         ws[i].answered - ws[i].started);
        }
    }
    assert_int_equal(got, 10);
    assert_int_equal(empty, 10);
    assert_int_equal(
        vt_sql_long("SELECT count(DISTINCT item_id) FROM jobs WHERE flow_step_id = 'lp_fair'"), 10);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'lp_fair'"), 10);
}

/* Idempotency-Key: the kept answer is the final one. An empty wait keeps the empty answer
 * (a repeat replays it even once an item is there); a wait woken by an item keeps the claim. */
static void test_idempotency_keeps_final_answer(void **state)
{
    waiter w, again;
    (void)state;
    memset(&w, 0, sizeof(w));
    w.s = &srv;
    snprintf(w.flow, sizeof(w.flow), "lp_idem");
    w.wait = 1;
    w.key = "lp-idem-empty";
    waiter_main(&w);
    assert_int_equal(w.status, 200);
    assert_int_equal(w.claims, 0);
    assert_false(w.replayed);
    vt_register(&srv, "lp_idem", "i1", NULL);
    again = w;
    waiter_main(&again);
    assert_int_equal(again.claims, 0);
    assert_true(again.replayed);
    /* keyed, woken by an item: the claim is kept and replayed */
    memset(&w, 0, sizeof(w));
    w.s = &srv;
    snprintf(w.flow, sizeof(w.flow), "lp_idem2");
    w.wait = 5;
    w.key = "lp-idem-item";
    assert_int_equal(pthread_create(&w.thread, NULL, waiter_main, &w), 0);
    await_parked(&srv, 1);
    int64_t id = vt_register(&srv, "lp_idem2", "i2", NULL);
    waiter_join(&w);
    assert_int_equal(w.claims, 1);
    assert_int_equal(w.item_id, id);
    again = w;
    waiter_main(&again);
    assert_true(again.replayed);
    assert_int_equal(again.job_id, w.job_id);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'lp_idem2'"), 1);
}

static void test_wait_seconds_validation(void **state)
{
    static const char *const bad[] = {"-1", "21", "\"x\"", "1.5", "true"};
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char body[256];
        snprintf(body, sizeof(body),
                 "{\"flow_step_id\": \"lp_v\", \"worker_id\": \"w\", \"wait_seconds\": %s}",
                 bad[i]);
        vt_resp r = vt_http(&srv, "POST", "/v1/claims", VT_WORKER, body, NULL);
        vt_assert_error(&r, 400, "invalid_field");
        assert_string_equal(vt_str(r.json, "field"), "wait_seconds");
        vt_resp_free(&r);
    }
    /* 0 is today's claim: answered at once */
    double t0 = vd_monotonic();
    vt_resp r =
        vt_http(&srv, "POST", "/v1/claims", VT_WORKER,
                "{\"flow_step_id\": \"lp_v\", \"worker_id\": \"w\", \"wait_seconds\": 0}", NULL);
    assert_int_equal(r.status, 200);
    assert_true(vd_monotonic() - t0 < 0.5);
    vt_resp_free(&r);
}

/* A client that hangs up while parked is dropped from the registry (well before its 15 s
 * deadline) and claims nothing; the server goes on (the ASan build checks for leaks). */
static void test_client_hangup(void **state)
{
    char req[512];
    const char *body =
        "{\"flow_step_id\": \"lp_gone\", \"worker_id\": \"w\", \"wait_seconds\": 15}";
    struct sockaddr_in a;
    (void)state;
    for (int k = 0; k < 3; k++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(fd >= 0);
        memset(&a, 0, sizeof(a));
        a.sin_family = AF_INET;
        a.sin_port = htons((uint16_t)srv.port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
        int n = snprintf(req, sizeof(req),
                         "POST /v1/claims HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                         "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                         VT_WORKER, strlen(body), body);
        assert_int_equal(write(fd, req, (size_t)n), n);
        await_parked(&srv, 1);
        close(fd);
        await_parked(&srv, 0); /* within 10 s, of a 15 s wait */
    }
    vt_register(&srv, "lp_gone", "g1", NULL);
    vt_sleep_ms(300);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'lp_gone'"), 0);
    vt_resp r = vt_http(&srv, "GET", "/healthz", NULL, NULL, NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
}

/* A stop answers every parked claim (empty) before the daemon exits (status 0). */
static void test_stop_answers_waiters(void **state)
{
    static const char *env[] = {"VERDICT_THREADS=2", NULL};
    vt_server other;
    waiter ws[5];
    (void)state;
    vt_server_start(&other, env);
    for (int i = 0; i < 5; i++)
        waiter_start(&ws[i], &other, "lp_stop", 20);
    await_parked(&other, 5);
    double t0 = vd_monotonic();
    vt_server_stop(&other);
    for (int i = 0; i < 5; i++) {
        waiter_join(&ws[i]);
        assert_int_equal(ws[i].claims, 0);
        assert_true(ws[i].answered - t0 < 5.0);
    }
}

VT_SERVER_FIXTURE(srv, "VERDICT_THREADS=2", NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_seconds_validation),
        cmocka_unit_test(test_empty_wait_answers_at_deadline),
        cmocka_unit_test(test_notify_wakes_waiter),
        cmocka_unit_test(test_every_change_announces),
        cmocka_unit_test(test_listen_reconnects),
        cmocka_unit_test(test_retry_finds_unannounced_item),
        cmocka_unit_test(test_deferred_item_wakes_waiter),
        cmocka_unit_test(test_many_waiters_hold_no_thread),
        cmocka_unit_test(test_fair_share),
        cmocka_unit_test(test_idempotency_keeps_final_answer),
        cmocka_unit_test(test_client_hangup),
        cmocka_unit_test(test_stop_answers_waiters),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
