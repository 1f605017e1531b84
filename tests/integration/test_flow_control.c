/* test_flow_control.c - flow control over HTTP against PostgreSQL, with two verdictd replicas
 * and many real concurrent clients: the limits API and its validation; a concurrency limit
 * is never exceeded (checked from the transitions); a rate limit holds within one burst; an
 * item whose key is full is skipped without blocking the items behind it; a backoff stops
 * every claim needing its key and none needing others, and repeated backoffs grow the pause;
 * a rate_limited deferral spends no budget and waits for the key; a long-poll claim on a full
 * key is woken by the notification when the key frees; a tool failure naming the key
 * throttles it and steers the model; the token window settles against reported usage; a
 * cost budget parks an item; priorities order the claims of a keyed flow step; usage is
 * summed per flow step and key in stats and metrics. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/util.h"
#include "vt.h"
#include "vt_api.h"

static vt_server srv[2];

/* a periodic retry a minute away: only a notification wakes a parked claim early */
VT_FIXTURE(.srv = {&srv[0], &srv[1]}, .env = VT_ENV("VERDICT_WAIT_RETRY_MS=60000"))

/* n items of flow, identifiers prefix0.., each with the extra members given (or NULL). */
static void register_n(const char *flow, const char *prefix, int n, const char *extra)
{
    char ident[64];
    for (int i = 0; i < n; i++) {
        snprintf(ident, sizeof(ident), "%s%d", prefix, i);
        vt_register(&srv[i % 2], flow, ident, extra);
    }
}

/* A claim of up to limit items with the given keys (a JSON array text or NULL) on server s;
 * fills out and returns how many. */
static int claim_keys(const vt_server *s, const char *flow, int limit, const char *keys,
                      vt_claim *out)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"%s\", \"worker_id\": \"fc\", \"limit\": %d%s%s}", flow, limit,
             keys ? ", \"limit_keys\": " : "", keys ? keys : "");
    vt_resp r = vt_http(s, "POST", "/v1/claims", VT_WORKER, body, NULL);
    if (r.status != 200)
        fprintf(stderr, "claim: %ld %s\n", r.status, r.body);
    assert_int_equal(r.status, 200);
    const cJSON *claims = cJSON_GetObjectItem(r.json, "claims");
    int n = cJSON_GetArraySize(claims);
    for (int i = 0; i < n && out; i++) {
        const cJSON *c = cJSON_GetArrayItem(claims, i);
        out[i].job_id = (int64_t)vt_num(c, "job_id");
        out[i].item_id = (int64_t)vt_num(c, "item.id");
        out[i].attempt = (int)vt_num(c, "attempt");
        snprintf(out[i].token, sizeof(out[i].token), "%s", vt_str(c, "claim_token"));
    }
    vt_resp_free(&r);
    return n;
}

static void complete(const vt_server *s, const vt_claim *c)
{
    vt_resp r = vt_dispose(s, c, "\"disposition\": \"complete\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
}

static void test_flow_control_api(void **state)
{
    (void)state;
    vt_put_limit(
        &srv[0], "provider:openai",
        "{\"concurrency\": 4, \"rate\": {\"per\": \"minute\", \"count\": 600, \"burst\": 20},"
        " \"tokens_per_minute\": 90000}");
    vt_resp r = vt_http(&srv[1], "GET", "/v1/limits/provider:openai", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal((int)vt_num(r.json, "limit.concurrency"), 4);
    assert_string_equal(vt_str(r.json, "limit.rate.per"), "minute");
    assert_int_equal((int)vt_num(r.json, "limit.rate.burst"), 20);
    assert_int_equal((int)vt_num(r.json, "limit.rate_available"), 20);
    assert_int_equal((int)vt_num(r.json, "limit.tokens_per_minute"), 90000);
    assert_int_equal((int)vt_num(r.json, "limit.in_flight"), 0);
    assert_true(
        cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "limit"), "throttled")));
    vt_resp_free(&r);
    /* PUT replaces every setting: the rate and the tokens are gone */
    vt_put_limit(&srv[0], "provider:openai", "{\"concurrency\": 2}");
    r = vt_http(&srv[0], "GET", "/v1/limits", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_true(cJSON_IsNull(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "limits"), 0), "rate")));
    vt_resp_free(&r);
    static const struct {
        const char *method, *path, *token, *body;
        long status;
        const char *code;
    } bad[] = {
        {"PUT", "/v1/limits/k1", VT_WORKER, "{\"concurrency\": 1}", 403, "forbidden"},
        {"PUT", "/v1/limits/k1", VT_ADMIN, "{\"concurency\": 1}", 400, "invalid_field"},
        {"PUT", "/v1/limits/k1", VT_ADMIN, "{\"concurrency\": -1}", 400, "invalid_field"},
        {"PUT", "/v1/limits/k1", VT_ADMIN, "{\"rate\": {\"per\": \"day\", \"count\": 1}}", 400,
         "invalid_field"},
        {"PUT", "/v1/limits/k1", VT_ADMIN, "{\"rate\": {\"per\": \"second\"}}", 400,
         "missing_field"},
        {"PUT", "/v1/limits/k1", VT_ADMIN,
         "{\"rate\": {\"per\": \"second\", \"count\": 1, "
         "\"x\": 1}}",
         400, "invalid_field"},
        {"PUT", "/v1/limits/bad%20key", VT_ADMIN, "{}", 400, "invalid_field"},
        {"GET", "/v1/limits/nope", VT_READER, NULL, 404, "not_found"},
        {"DELETE", "/v1/limits/nope", VT_ADMIN, NULL, 404, "not_found"},
        {"DELETE", "/v1/limits/provider:openai", VT_WORKER, NULL, 403, "forbidden"},
        {"POST", "/v1/limits/k1/backoff", VT_READER, "{}", 403, "forbidden"},
        {"POST", "/v1/limits/k1/backoff", VT_WORKER, "{\"retry_after_seconds\": 0}", 400,
         "invalid_field"},
        {"POST", "/v1/claims", VT_WORKER,
         "{\"flow_step_id\": \"f\", \"worker_id\": \"w\", \"limit_keys\": [\"a b\"]}", 400,
         "invalid_field"},
        {"POST", "/v1/claims", VT_WORKER,
         "{\"flow_step_id\": \"f\", \"worker_id\": \"w\", \"limit_keys\": []}", 400,
         "invalid_field"},
        {"POST", "/v1/claims", VT_WORKER,
         "{\"flow_step_id\": \"f\", \"worker_id\": \"w\", \"estimated_tokens\": -5}", 400,
         "invalid_field"},
        {"POST", "/v1/items", VT_WORKER,
         "{\"items\": [{\"flow_step_id\": \"f\", \"source_type\": \"rss\", \"item_identifier\": "
         "\"x\", \"limit_keys\": \"site:a\"}]}",
         400, "invalid_field"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = vt_http(&srv[0], bad[i].method, bad[i].path, bad[i].token, bad[i].body, NULL);
        if (r.status != bad[i].status)
            fprintf(stderr, "case %zu: %ld %s\n", i, r.status, r.body);
        vt_assert_error(&r, bad[i].status, bad[i].code);
        vt_resp_free(&r);
    }
    r = vt_http(&srv[0], "DELETE", "/v1/limits/provider:openai", VT_ADMIN, NULL, NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    r = vt_http(&srv[0], "GET", "/v1/limits/provider:openai", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 404);
    vt_resp_free(&r);
}

/* Many clients on both replicas claim with a key of concurrency 3 and complete what they get. */
#define CC_ITEMS 120
#define CC_CLIENTS 12
#define CC_LIMIT 3

typedef struct cc_arg {
    int index;
    const char *flow, *keys;
    _Atomic int *done;
    int target;
} cc_arg;

static void *cc_client(void *arg)
{
    cc_arg *a = arg;
    vt_claim c[2];
    const vt_server *s = &srv[a->index % 2];
    int idle = 0;
    while (atomic_load(a->done) < a->target && idle < 2000) {
        int n = claim_keys(s, a->flow, 2, a->keys, c);
        if (n == 0) {
            idle++;
            vt_sleep_ms(2);
            continue;
        }
        for (int i = 0; i < n; i++) {
            vt_sleep_ms(3); /* the work: holds the key a little */
            complete(s, &c[i]);
            atomic_fetch_add(a->done, 1);
        }
    }
    vt_http_thread_cleanup();
    return NULL;
}

static void run_clients(const char *flow, const char *keys, int clients, int target)
{
    pthread_t t[32];
    cc_arg a[32];
    _Atomic int done = 0;
    for (int i = 0; i < clients; i++) {
        a[i] = (cc_arg){i, flow, keys, &done, target};
        pthread_create(&t[i], NULL, cc_client, &a[i]);
    }
    for (int i = 0; i < clients; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&done), target);
}

static void test_flow_control_concurrency_never_exceeded(void **state)
{
    (void)state;
    vt_put_limit(&srv[0], "model:cc", "{\"concurrency\": 3}");
    vt_seed_flow("cc", CC_ITEMS);
    run_clients("cc", "[\"model:cc\", \"provider:cc\"]", CC_CLIENTS, CC_ITEMS);
    long most = vt_max_in_flight("cc", "model:cc");
    assert_true(most <= CC_LIMIT);
    assert_int_equal(most, CC_LIMIT); /* the limit bound: it was reached */
    assert_int_equal(
        vt_sql_long(
            "SELECT count(*) FROM limit_lanes c CROSS JOIN unnest(c.holders) h"
            " JOIN jobs j ON j.id = h WHERE c.key = 'model:cc' AND j.status = 'processing'"),
        0);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'cc'"
                                 " AND state = 'processed'"),
                     CC_ITEMS);
}

/* Items carry the key (their site): a full site is skipped, the items behind it are claimed,
 * and a plain claim (no keys of its own) honours the items' keys too. */
static void test_flow_control_item_keys_skip(void **state)
{
    (void)state;
    vt_claim c[8], d[8];
    vt_put_limit(&srv[0], "site:big", "{\"concurrency\": 1}");
    register_n("sk", "big", 6, "\"limit_keys\": [\"site:big\"]");
    register_n("sk", "small", 2, "\"limit_keys\": [\"site:small\"]");
    assert_int_equal(claim_keys(&srv[0], "sk", 1, NULL, c), 1); /* a site:big item */
    assert_int_equal(
        vt_sql_long(
            "SELECT count(*) FROM limit_lanes c CROSS JOIN unnest(c.holders) h"
            " JOIN jobs j ON j.id = h WHERE c.key = 'site:big' AND j.status = 'processing'"),
        1);
    int n = claim_keys(&srv[1], "sk", 8, NULL, d);
    assert_int_equal(n, 2); /* both site:small items, nothing more of site:big */
    for (int i = 0; i < n; i++)
        assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE id = %lld"
                                     " AND limit_keys = ARRAY['site:small']",
                                     (long long)d[i].item_id),
                         1);
    complete(&srv[1], &c[0]);
    assert_int_equal(claim_keys(&srv[0], "sk", 8, NULL, c), 1); /* the next site:big item */
}

/* Rate 20 per second with a burst of 5: over the whole run, the claims never outrun
 * burst + elapsed * rate (every window, checked from the jobs' claim times). */
static void test_flow_control_rate_within_burst(void **state)
{
    (void)state;
    vt_put_limit(&srv[0], "provider:rate",
                 "{\"rate\": {\"per\": \"second\", \"count\": 20, \"burst\": 5}}");
    vt_seed_flow("rt", 60);
    run_clients("rt", "[\"provider:rate\"]", 8, 60);
    /* the largest excess of any window [a, b] of claims over burst + (b - a) * rate */
    char *excess = vt_sql("SELECT max(cnt - 5 - extract(epoch FROM b - a) * 20) FROM"
                          " (SELECT a.claimed_at AS a, b.claimed_at AS b, (SELECT count(*)"
                          "   FROM jobs x WHERE x.flow_step_id = 'rt'"
                          "   AND x.claimed_at BETWEEN a.claimed_at AND b.claimed_at) AS cnt"
                          "  FROM jobs a JOIN jobs b ON b.claimed_at >= a.claimed_at"
                          "  WHERE a.flow_step_id = 'rt' AND b.flow_step_id = 'rt') w");
    double worst = strtod(excess, NULL);
    free(excess);
    fprintf(stderr, "rate: worst excess over burst %.2f\n", worst);
    /* a rate cell is taken at the grant's clock time; the job row records the claim when it is
     * inserted, later in the same statement: a slack of a quarter claim (12.5 ms at 20/s) */
    assert_true(worst <= 0.25);
    /* and it was the bound: 60 claims at 20/s after a burst of 5 take over 2.5 s */
    assert_true(vt_sql_long("SELECT extract(epoch FROM max(claimed_at) - min(claimed_at)) * 1000"
                            " FROM jobs WHERE flow_step_id = 'rt'") >= 2500);
}

/* Clients that claim with keys until stop is set, counting what they got. */
typedef struct bo_arg {
    int index;
    const char *flow, *keys;
    _Atomic int *stop;
    _Atomic int got;
} bo_arg;

static void *bo_client(void *arg)
{
    bo_arg *a = arg;
    vt_claim c[2];
    while (!atomic_load(a->stop)) {
        int n = claim_keys(&srv[a->index % 2], a->flow, 2, a->keys, c);
        for (int i = 0; i < n; i++)
            complete(&srv[a->index % 2], &c[i]);
        atomic_fetch_add(&a->got, n);
        if (n == 0)
            vt_sleep_ms(5);
    }
    vt_http_thread_cleanup();
    return NULL;
}

static vt_resp backoff(const char *key, int after)
{
    char path[256], body[128];
    snprintf(path, sizeof(path), "/v1/limits/%s/backoff", key);
    snprintf(body, sizeof(body), "{\"retry_after_seconds\": %d, \"reason\": \"429 from it\"}",
             after);
    return vt_http(&srv[0], "POST", path, VT_WORKER, body, NULL);
}

/* A 429 backoff on provider:a: eight clients needing it (on both replicas) get nothing while
 * eight needing provider:b go on claiming; a second backoff while throttled does not grow the
 * pause, one soon after the pause ended doubles it. */
static void test_flow_control_backoff(void **state)
{
    (void)state;
    pthread_t t[16];
    bo_arg a[16];
    _Atomic int stop = 0;
    vt_seed_flow("bo", 400);
    vt_resp r = backoff("provider:a", 30);
    assert_int_equal(r.status, 200);
    assert_true(
        cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "limit"), "throttled")));
    assert_int_equal((int)vt_num(r.json, "limit.backoff_streak"), 1);
    vt_resp_free(&r);
    for (int i = 0; i < 16; i++) {
        a[i] = (bo_arg){i, "bo", i % 2 ? "[\"provider:a\", \"model:x\"]" : "[\"provider:b\"]",
                        &stop, 0};
        pthread_create(&t[i], NULL, bo_client, &a[i]);
    }
    vt_sleep_ms(1500);
    atomic_store(&stop, 1);
    int got_a = 0, got_b = 0;
    for (int i = 0; i < 16; i++) {
        pthread_join(t[i], NULL);
        if (i % 2)
            got_a += atomic_load(&a[i].got);
        else
            got_b += atomic_load(&a[i].got);
    }
    fprintf(stderr, "backoff: provider:a %d claims, provider:b %d\n", got_a, got_b);
    assert_int_equal(got_a, 0);
    assert_true(got_b >= 20);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'bo'"
                                 " AND limit_keys @> ARRAY['provider:a']"),
                     0);
    /* a second 429 while throttled: the streak stays, the pause is not doubled */
    r = backoff("provider:a", 10);
    assert_int_equal((int)vt_num(r.json, "limit.backoff_streak"), 1);
    vt_resp_free(&r);
    /* the pause ended a minute ago: the next backoff doubles it */
    free(vt_sql("UPDATE limits SET throttled_until = now() - interval '1 minute'"
                " WHERE key = 'provider:a'"));
    r = backoff("provider:a", 30);
    assert_int_equal((int)vt_num(r.json, "limit.backoff_streak"), 2);
    vt_resp_free(&r);
    long pause = vt_sql_long("SELECT round(extract(epoch FROM throttled_until - now()))"
                             " FROM limits WHERE key = 'provider:a'");
    assert_true(pause >= 58 && pause <= 60);
    /* long after: the streak starts again */
    free(vt_sql("UPDATE limits SET throttled_until = now() - interval '1 hour'"
                " WHERE key = 'provider:a'"));
    r = backoff("provider:a", 5);
    assert_int_equal((int)vt_num(r.json, "limit.backoff_streak"), 1);
    vt_resp_free(&r);
    assert_true(vt_limit_num(&srv[1], "provider:a", "backoffs_total") == 4);
}

/* defer_item with reason_code rate_limited: the item is deferred until the job's throttled
 * key reopens, spends no defer budget even past max_defers, and is claimable again after. */
static void test_flow_control_rate_limited_deferral(void **state)
{
    (void)state;
    vt_claim c;
    int64_t item = vt_register(&srv[0], "rl", "rl0", "\"max_defers\": 1");
    for (int round = 0; round < 3; round++) {
        free(vt_sql("UPDATE limits SET throttled_until = NULL WHERE key = 'provider:rl'"));
        free(vt_sql("UPDATE items SET available_at = now() WHERE id = %lld", (long long)item));
        assert_int_equal(claim_keys(&srv[round % 2], "rl", 1, "[\"provider:rl\"]", &c), 1);
        vt_resp r = backoff("provider:rl", 40);
        assert_int_equal(r.status, 200);
        vt_resp_free(&r);
        r = vt_dispose(&srv[round % 2], &c,
                       "\"disposition\": \"defer_item\", \"reason_code\": \"rate_limited\","
                       " \"reason\": \"the provider answered 429\"");
        if (r.status != 200)
            fprintf(stderr, "defer: %ld %s\n", r.status, r.body);
        assert_int_equal(r.status, 200);
        vt_resp_free(&r);
        assert_string_equal(vt_item_state(&srv[0], item), "deferred");
        assert_int_equal(
            vt_sql_long("SELECT defers + failures FROM items WHERE id = %lld", (long long)item), 0);
        /* claimable when the key reopens: available_at is the end of the throttle */
        assert_int_equal(vt_sql_long("SELECT abs(extract(epoch FROM i.available_at"
                                     " - l.throttled_until))::int FROM items i, limits l"
                                     " WHERE i.id = %lld AND l.key = 'provider:rl'",
                                     (long long)item),
                         0);
    }
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld"
                                 " AND reason_code = 'rate_limited' AND to_state = 'deferred'",
                                 (long long)item),
                     3);
}

typedef struct lp_arg {
    const char *keys;
    long status;
    int claims;
    double started, answered;
} lp_arg;

static void *lp_client(void *arg)
{
    lp_arg *a = arg;
    char body[256];
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"lp\", \"worker_id\": \"lp\", \"wait_seconds\": 15,"
             " \"limit_keys\": %s}",
             a->keys);
    a->started = vd_monotonic();
    vt_resp r = vt_http(&srv[1], "POST", "/v1/claims", VT_WORKER, body, NULL);
    a->answered = vd_monotonic();
    a->status = r.status;
    a->claims = cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "claims"));
    vt_resp_free(&r);
    vt_http_thread_cleanup();
    return NULL;
}

/* A long-poll claim on a full key (concurrency 1, held by another worker) waits; when the
 * holder completes on the other replica, the freed key is announced and the parked claim
 * answers with the next item at once (the periodic retry is a minute away). */
static void test_flow_control_longpoll_woken_by_free(void **state)
{
    (void)state;
    vt_claim c;
    pthread_t t;
    lp_arg a = {"[\"model:lp\"]", 0, 0, 0, 0};
    vt_put_limit(&srv[0], "model:lp", "{\"concurrency\": 1}");
    register_n("lp", "lp", 3, NULL);
    assert_int_equal(claim_keys(&srv[0], "lp", 1, "[\"model:lp\"]", &c), 1);
    pthread_create(&t, NULL, lp_client, &a);
    vt_sleep_ms(1000); /* the claim parks: the key is full */
    complete(&srv[0], &c);
    pthread_join(t, NULL);
    fprintf(stderr, "long-poll answered after %.2f s\n", a.answered - a.started);
    assert_int_equal(a.status, 200);
    assert_int_equal(a.claims, 1);
    assert_true(a.answered - a.started >= 0.9);
    assert_true(a.answered - a.started < 5.0);
}

/* A tool failure naming the provider's limit key throttles it and tells the model, in one
 * hint of at most 280 bytes, to defer with reason_code rate_limited. */
static void test_flow_control_tool_failure_backoff(void **state)
{
    (void)state;
    vt_claim c;
    char path[64], body[512];
    vt_register(&srv[0], "tf", "tf0", NULL);
    assert_int_equal(claim_keys(&srv[1], "tf", 1, "[\"provider:tf\"]", &c), 1);
    snprintf(path, sizeof(path), "/v1/jobs/%lld/tool-failures", (long long)c.job_id);
    snprintf(body, sizeof(body),
             "{\"claim_token\": \"%s\", \"tool\": \"llm__generate\", \"args\": {},"
             " \"error\": \"HTTP 429 Too Many Requests\", \"limit_key\": \"provider:tf\","
             " \"retry_after_seconds\": 20}",
             c.token);
    vt_resp r = vt_http(&srv[1], "POST", path, VT_WORKER, body, NULL);
    if (r.status != 200)
        fprintf(stderr, "tool failure: %ld %s\n", r.status, r.body);
    assert_int_equal(r.status, 200);
    const char *hint = vt_str(r.json, "hint");
    assert_non_null(strstr(hint, "defer_item"));
    assert_non_null(strstr(hint, "rate_limited"));
    assert_null(strstr(hint, "reject_source"));
    assert_true(strlen(hint) <= 280);
    assert_non_null(strstr(vt_str(r.json, "tool_result.text"), "rate_limited"));
    assert_true(
        cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "limit"), "throttled")));
    vt_resp_free(&r);
    assert_int_equal(claim_keys(&srv[0], "tf", 1, "[\"provider:tf\"]", NULL), 0);
    r = vt_http(&srv[0], "GET", "/metrics", VT_READER, NULL, NULL);
    assert_non_null(strstr(r.body, "verdict_limit_throttled{key=\"provider:tf\"} 1"));
    assert_non_null(strstr(r.body, "# TYPE verdict_limit_in_flight gauge"));
    assert_non_null(strstr(r.body, "# TYPE verdict_limit_tokens_used_total counter"));
    vt_resp_free(&r);
    snprintf(body, sizeof(body),
             "{\"claim_token\": \"%s\", \"tool\": \"x\", \"error\": \"e\", \"limit_key\": \"a b\"}",
             c.token);
    r = vt_http(&srv[1], "POST", path, VT_WORKER, body, NULL);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
}

/* Tokens per minute: claims reserve their estimate on the key's minute; a disposition's usage
 * replaces the estimate (the window settles against what was used). Started early in a
 * minute so that the window does not roll under the test. */
static void test_flow_control_token_window_settles(void **state)
{
    (void)state;
    vt_claim c[16];
    while (vt_sql_long("SELECT extract(second FROM now())::int") > 40)
        vt_sleep_ms(500);
    vt_put_limit(&srv[0], "model:tok", "{\"tokens_per_minute\": 8000}");
    register_n("tw", "tw", 12, NULL);
    const char *body = "{\"flow_step_id\": \"tw\", \"worker_id\": \"t\", \"limit\": 12,"
                       " \"limit_keys\": [\"model:tok\"], \"estimated_tokens\": 1000}";
    vt_resp r = vt_http(&srv[0], "POST", "/v1/claims", VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    int n = cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "claims"));
    for (int i = 0; i < n; i++) {
        const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "claims"), i);
        c[i].job_id = (int64_t)vt_num(e, "job_id");
        snprintf(c[i].token, sizeof(c[i].token), "%s", vt_str(e, "claim_token"));
    }
    vt_resp_free(&r);
    assert_int_equal(n, 8); /* 8 x 1000 = the minute's 8000 */
    assert_true(vt_limit_num(&srv[1], "model:tok", "tokens_reserved") == 8000);
    r = vt_http(&srv[1], "POST", "/v1/claims", VT_WORKER, body, NULL);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "claims")), 0);
    vt_resp_free(&r);
    /* one job used 200 of its 1000: the window settles to 7200, room for an 800 */
    r = vt_dispose(&srv[1], &c[0],
                   "\"disposition\": \"complete\", \"usage\": {\"input_tokens\": 150,"
                   " \"output_tokens\": 50, \"cost_usd\": 0.002, \"model\": \"gpt-4o\"}");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_true(vt_limit_num(&srv[1], "model:tok", "tokens_reserved") == 7200);
    assert_true(vt_limit_num(&srv[1], "model:tok", "tokens_used") == 200);
    assert_true(vt_limit_num(&srv[1], "model:tok", "tokens_used_total") == 200);
    assert_int_equal(vt_sql_long("SELECT usage_input_tokens + usage_output_tokens FROM jobs"
                                 " WHERE id = %lld AND usage_model = 'gpt-4o'",
                                 (long long)c[0].job_id),
                     200);
    r = vt_http(&srv[0], "POST", "/v1/claims", VT_WORKER, body, NULL); /* 1000 still not */
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "claims")), 0);
    vt_resp_free(&r);
    body = "{\"flow_step_id\": \"tw\", \"worker_id\": \"t\", \"limit\": 5,"
           " \"limit_keys\": [\"model:tok\"], \"estimated_tokens\": 800}";
    r = vt_http(&srv[0], "POST", "/v1/claims", VT_WORKER, body, NULL);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "claims")), 1);
    vt_resp_free(&r);
}

/* A flow step's token budget: usage summed over an item's attempts past it parks the item in
 * manual_review (cost_budget) instead of deferring it again; a completion is kept. */
static void test_flow_control_cost_budget_parks(void **state)
{
    (void)state;
    vt_resp r = vt_http(&srv[0], "PATCH", "/v1/flow-steps/cb", VT_ADMIN,
                        "{\"max_item_tokens\": 1000, \"max_item_cost_usd\": 5}", NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal((int)vt_num(r.json, "flow_step.max_item_tokens"), 1000);
    vt_resp_free(&r);
    r = vt_http(&srv[0], "PATCH", "/v1/flow-steps/cb", VT_ADMIN, "{\"max_item_tokens\": -1}", NULL);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
    int64_t item = vt_register(&srv[0], "cb", "cb0", NULL);
    int64_t done = vt_register(&srv[0], "cb", "cb1", "\"priority\": -1");
    vt_claim c = vt_claim1(&srv[1], "cb");
    assert_int_equal(c.item_id, item);
    r = vt_dispose(&srv[1], &c,
                   "\"disposition\": \"defer_item\", \"reason_code\": \"low_confidence\","
                   " \"retry_after_seconds\": 0, \"usage\": {\"input_tokens\": 500,"
                   " \"output_tokens\": 100}");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv[0], item), "deferred");
    c = vt_claim1(&srv[0], "cb");
    assert_int_equal(c.item_id, item);
    r = vt_dispose(&srv[0], &c,
                   "\"disposition\": \"fail\", \"error\": \"timeout\", \"usage\":"
                   " {\"input_tokens\": 300, \"output_tokens\": 200, \"cost_usd\": 0.5}");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv[0], item), "manual_review");
    assert_int_equal(vt_sql_long("SELECT usage_tokens FROM items WHERE id = %lld"
                                 " AND last_reason_code = 'cost_budget'",
                                 (long long)item),
                     1100);
    c = vt_claim1(&srv[0], "cb");
    assert_int_equal(c.item_id, done);
    r = vt_dispose(&srv[0], &c,
                   "\"disposition\": \"complete\", \"usage\": {\"input_tokens\": 5000,"
                   " \"output_tokens\": 1}");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv[0], done), "processed");
    r = vt_dispose(&srv[0], &c, "\"disposition\": \"complete\", \"usage\": {\"input_tokens\": 1}");
    vt_assert_error(&r, 400, "missing_field");
    vt_resp_free(&r);
}

/* GET /v1/stats of a usage entry: per flow step and per key, in stats and /metrics. */
static void expect_usage(const cJSON *u, long in, long out, double cost, long jobs)
{
    assert_non_null(u);
    assert_int_equal((long)vt_num(u, "input_tokens"), in);
    assert_int_equal((long)vt_num(u, "output_tokens"), out);
    assert_true(vt_num(u, "cost_usd") > cost - 1e-9 && vt_num(u, "cost_usd") < cost + 1e-9);
    assert_int_equal((long)vt_num(u, "jobs"), jobs);
}

/* The usage dispositions report is summed per flow step and per limit key of the job (the
 * claim's and the item's) in GET /v1/stats, the same before and after the sweeper folds it,
 * and counted in /metrics (verdict_item_usage_tokens_total, the limit families). */
static void test_flow_control_usage_in_stats(void **state)
{
    (void)state;
    vt_claim c[4];
    vt_put_limit(&srv[0], "model:us", "{\"concurrency\": 5, \"tokens_per_minute\": 1000000}");
    register_n("us", "us", 3, "\"limit_keys\": [\"site:us\"]");
    assert_int_equal(claim_keys(&srv[0], "us", 3, "[\"model:us\"]", c), 3);
    vt_resp r = vt_dispose(&srv[1], &c[0],
                           "\"disposition\": \"complete\", \"usage\": {\"input_tokens\": 100,"
                           " \"output_tokens\": 20, \"cost_usd\": 0.5, \"model\": \"m\"}");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    r = vt_dispose(&srv[0], &c[1],
                   "\"disposition\": \"complete\", \"usage\": {\"input_tokens\": 10,"
                   " \"output_tokens\": 5}");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    for (int pass = 0; pass < 2; pass++) { /* before and after the fold */
        r = vt_http(&srv[pass], "GET", "/v1/stats?flow_step_id=us", VT_READER, NULL, NULL);
        assert_int_equal(r.status, 200);
        const cJSON *fs = cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "flow_steps"), 0);
        expect_usage(cJSON_GetObjectItem(fs, "usage"), 110, 25, 0.5, 2);
        expect_usage(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "totals"), "usage"), 110, 25,
                     0.5, 2);
        const cJSON *keys = cJSON_GetObjectItem(r.json, "usage_by_key");
        assert_int_equal(cJSON_GetArraySize(keys), 2);
        assert_string_equal(vt_str(cJSON_GetArrayItem(keys, 0), "key"), "model:us");
        expect_usage(cJSON_GetArrayItem(keys, 0), 110, 25, 0.5, 2);
        assert_string_equal(vt_str(cJSON_GetArrayItem(keys, 1), "key"), "site:us");
        expect_usage(cJSON_GetArrayItem(keys, 1), 110, 25, 0.5, 2);
        vt_resp_free(&r);
        free(vt_sql("SELECT verdict_fold_usage()"));
    }
    assert_int_equal(vt_sql_long("SELECT count(*) FROM usage_deltas"), 0);
    r = vt_http(&srv[0], "GET", "/metrics", VT_READER, NULL, NULL);
    assert_non_null(strstr(r.body, "verdict_item_usage_tokens_total{flow_step_id=\"us\"} 135\n"));
    assert_non_null(strstr(r.body, "verdict_limit_in_flight{key=\"model:us\"} 1\n"));
    assert_non_null(strstr(r.body, "verdict_limit_throttled{key=\"model:us\"} 0\n"));
    assert_non_null(strstr(r.body, "verdict_limit_tokens_used_total{key=\"model:us\"} 135\n"));
    vt_resp_free(&r);
}

/* In a keyed flow step (claimed with limits) claims still go by priority, highest first. */
static void test_flow_control_priorities_order_claims(void **state)
{
    (void)state;
    static const int prio[] = {0, 5, -1, 10, 3};
    static const int want[] = {10, 5, 3, 0, -1};
    char extra[96], ident[16];
    for (int i = 0; i < 5; i++) {
        snprintf(extra, sizeof(extra), "\"priority\": %d, \"limit_keys\": [\"site:p%d\"]", prio[i],
                 i % 2);
        snprintf(ident, sizeof(ident), "pr%d", i);
        vt_register(&srv[i % 2], "pr", ident, extra);
    }
    vt_resp r = vt_http(&srv[0], "POST", "/v1/claims", VT_WORKER,
                        "{\"flow_step_id\": \"pr\", \"worker_id\": \"w\", \"limit\": 5,"
                        " \"limit_keys\": [\"provider:pr\"]}",
                        NULL);
    assert_int_equal(r.status, 200);
    const cJSON *claims = cJSON_GetObjectItem(r.json, "claims");
    assert_int_equal(cJSON_GetArraySize(claims), 5);
    for (int i = 0; i < 5; i++) {
        const cJSON *c = cJSON_GetArrayItem(claims, i);
        assert_int_equal((int)vt_num(c, "item.priority"), want[i]);
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(c, "limit_keys")), 2);
    }
    vt_resp_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flow_control_api),
        cmocka_unit_test(test_flow_control_concurrency_never_exceeded),
        cmocka_unit_test(test_flow_control_item_keys_skip),
        cmocka_unit_test(test_flow_control_rate_within_burst),
        cmocka_unit_test(test_flow_control_backoff),
        cmocka_unit_test(test_flow_control_rate_limited_deferral),
        cmocka_unit_test(test_flow_control_longpoll_woken_by_free),
        cmocka_unit_test(test_flow_control_tool_failure_backoff),
        cmocka_unit_test(test_flow_control_token_window_settles),
        cmocka_unit_test(test_flow_control_cost_budget_parks),
        cmocka_unit_test(test_flow_control_priorities_order_claims),
        cmocka_unit_test(test_flow_control_usage_in_stats),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
