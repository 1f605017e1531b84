/* test_fairness.c - priority with aging and fair rotation between the values of an item key,
 * over HTTP against PostgreSQL with two verdictd replicas: the new fields are validated; with
 * fair_key "site" a 1,000 : 10 backlog gives the small site its items within the first 20
 * claims, on both replicas and with many real concurrent clients; priorities order claims,
 * and aging lets an item that waited long enough pass newer items of higher priority (plain
 * and limited claim); a batch claim shares itself between the values and goes by priority
 * within each; claim_next rotates too and takes the worker's limit_keys. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/buf.h"
#include "verdict/util.h"
#include "vt.h"
#include "vt_api.h"

static vt_server srv[2];

VT_FIXTURE(.srv = {&srv[0], &srv[1]})

static void fair_key(const char *flow, const char *key)
{
    char path[128], body[128];
    snprintf(path, sizeof(path), "/v1/flow-steps/%s", flow);
    snprintf(body, sizeof(body), "{\"fair_key\": \"%s\"}", key);
    vt_resp r = vt_http(&srv[1], "PATCH", path, VT_ADMIN, body, NULL);
    if (r.status != 200)
        fprintf(stderr, "PATCH %s: %ld %s\n", flow, r.status, r.body);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "flow_step.fair_key"), key);
    vt_resp_free(&r);
}

/* n items of flow with limit key site:<site>, identifiers <site>-0.., in requests of up to
 * 500 (alternating replicas); extra members for each (or ""). */
static void register_site(const char *flow, const char *site, int n, const char *extra)
{
    for (int at = 0; at < n; at += 500) {
        vd_buf b = {0};
        vd_buf_printf(&b, "{\"items\": [");
        for (int i = at; i < n && i < at + 500; i++)
            vd_buf_printf(&b,
                          "%s{\"flow_step_id\": \"%s\", \"source_type\": \"rss\","
                          " \"item_identifier\": \"https://%s.example/%d\","
                          " \"limit_keys\": [\"site:%s\", \"lang:en\"]%s}",
                          i > at ? "," : "", flow, site, i, site, extra);
        vd_buf_printf(&b, "]}");
        assert_false(b.failed);
        vt_resp r = vt_http(&srv[(at / 500) % 2], "POST", "/v1/items", VT_WORKER, b.data, NULL);
        if (r.status != 200)
            fprintf(stderr, "register: %ld %s\n", r.status, r.body);
        assert_int_equal(r.status, 200);
        vt_resp_free(&r);
        vd_buf_cleanup(&b);
    }
}

/* A claim body's answer: up to max claims into out (job, item, token), the site of each
 * (its item_identifier's host's first label) into site; returns how many. */
static int claim(const vt_server *s, const char *body, vt_claim *out, char (*site)[16], int max)
{
    vt_resp r = vt_http(s, "POST", "/v1/claims", VT_WORKER, body, NULL);
    if (r.status != 200)
        fprintf(stderr, "claim: %ld %s\n", r.status, r.body);
    assert_int_equal(r.status, 200);
    const cJSON *claims = cJSON_GetObjectItem(r.json, "claims");
    int n = cJSON_GetArraySize(claims);
    assert_true(n <= max);
    for (int i = 0; i < n; i++) {
        const cJSON *c = cJSON_GetArrayItem(claims, i);
        const char *ident = vt_str(c, "item.item_identifier");
        out[i].job_id = (int64_t)vt_num(c, "job_id");
        out[i].item_id = (int64_t)vt_num(c, "item.id");
        snprintf(out[i].token, sizeof(out[i].token), "%s", vt_str(c, "claim_token"));
        if (site) /* https://<site>.example/<n>, else the identifier itself */
            snprintf(site[i], sizeof(site[i]), "%.*s",
                     strncmp(ident, "https://", 8) ? 15 : (int)strcspn(ident + 8, "."),
                     strncmp(ident, "https://", 8) ? ident : ident + 8);
    }
    vt_resp_free(&r);
    return n;
}

static void test_fairness_validation(void **state)
{
    (void)state;
    static const struct {
        const char *method, *path, *body, *field;
    } bad[] = {
        {"POST", "/v1/items",
         "{\"items\": [{\"flow_step_id\": \"v\", \"source_type\": \"rss\","
         " \"item_identifier\": \"x\", \"priority\": 1001}]}",
         "items[0].priority"},
        {"POST", "/v1/items",
         "{\"items\": [{\"flow_step_id\": \"v\", \"source_type\": \"rss\","
         " \"item_identifier\": \"x\", \"priority\": -1001}]}",
         "items[0].priority"},
        {"PATCH", "/v1/flow-steps/v", "{\"fair_key\": \"site:a\"}", "fair_key"},
        {"PATCH", "/v1/flow-steps/v", "{\"fair_key\": 5}", "fair_key"},
        {"PATCH", "/v1/flow-steps/v", "{\"fair_key\": \"sïte\"}", "fair_key"},
        {"POST", "/v1/jobs/1/disposition",
         "{\"claim_token\": \"00000000-0000-0000-0000-000000000000\", \"disposition\":"
         " \"complete\", \"claim_next\": 1, \"limit_keys\": [\"a b\"]}",
         "limit_keys[0]"},
        {"POST", "/v1/dispositions",
         "{\"dispositions\": [{\"job_id\": 1}], \"claim_next\": 1, \"estimated_tokens\": -1}",
         "estimated_tokens"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        vt_resp r = vt_http(&srv[i % 2], bad[i].method, bad[i].path, VT_ADMIN, bad[i].body, NULL);
        vt_assert_error(&r, 400, "invalid_field");
        assert_string_equal(vt_str(r.json, "field"), bad[i].field);
        vt_resp_free(&r);
    }
    int64_t id = vt_register(&srv[0], "v", "edge", "\"priority\": 1000");
    assert_true(id > 0);
    fair_key("v", "site");
    vt_resp r =
        vt_http(&srv[0], "PATCH", "/v1/flow-steps/v", VT_ADMIN, "{\"fair_key\": \"\"}", NULL);
    assert_int_equal(r.status, 200);
    assert_true(
        cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "flow_step"), "fair_key")));
    vt_resp_free(&r);
}

/* 1,000 items of site big, then 10 of site small: the first 20 claims (one at a time, on
 * alternating replicas) give small all 10 of its items. */
static void test_fairness_small_site_first_20(void **state)
{
    (void)state;
    vt_claim c[1];
    char site[1][16];
    int small = 0;
    fair_key("f20", "site");
    register_site("f20", "big", 1000, "");
    register_site("f20", "small", 10, "");
    for (int i = 0; i < 20; i++) {
        assert_int_equal(
            claim(&srv[i % 2], "{\"flow_step_id\": \"f20\", \"worker_id\": \"w\"}", c, site, 1), 1);
        small += strcmp(site[0], "small") == 0;
    }
    assert_int_equal(small, 10);
}

typedef struct cc_arg {
    const vt_server *s;
    int claims; /* how many single claims to make */
} cc_arg;

static void *cc_client(void *arg)
{
    cc_arg *a = arg;
    vt_claim c[1];
    for (int i = 0; i < a->claims; i++) {
        assert_int_equal(claim(a->s,
                               "{\"flow_step_id\": \"fcc\", \"worker_id\": \"w\", \"limit_keys\":"
                               " [\"provider:fcc\"]}",
                               c, NULL, 1),
                         1);
        vt_resp r = vt_dispose(a->s, &c[0], "\"disposition\": \"complete\"");
        assert_int_equal(r.status, 200);
        vt_resp_free(&r);
    }
    vt_http_thread_cleanup();
    return NULL;
}

/* Eight concurrent clients on both replicas claim and complete one item at a time from a
 * 1,000 : 10 backlog: no item is claimed twice, and the small site's 10 items are all among
 * the first 40 claims (by job id). */
static void test_fairness_concurrent_replicas(void **state)
{
    (void)state;
    pthread_t t[8];
    cc_arg a[8];
    fair_key("fcc", "site");
    register_site("fcc", "big", 1000, "");
    register_site("fcc", "small", 10, "");
    for (int i = 0; i < 8; i++) {
        a[i] = (cc_arg){&srv[i % 2], 8};
        pthread_create(&t[i], NULL, cc_client, &a[i]);
    }
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'fcc'"), 64);
    assert_int_equal(vt_sql_long("SELECT count(DISTINCT item_id) FROM jobs"
                                 " WHERE flow_step_id = 'fcc'"),
                     64);
    long small = vt_sql_long(
        "SELECT count(*) FROM (SELECT j.item_id FROM jobs j WHERE j.flow_step_id = 'fcc'"
        " ORDER BY j.id LIMIT 40) f JOIN items i ON i.id = f.item_id"
        " WHERE i.fair_value = 'site:small'");
    assert_int_equal(small, 10);
}

/* Claim order of flow: the items' identifiers' last letters into got (claims of limit). */
static void claim_order(const char *flow, int limit, const char *keys, char *got, int n)
{
    char body[256];
    vt_claim c[8];
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"%s\", \"worker_id\": \"w\", \"limit\": %d%s}", flow, limit,
             keys);
    for (int at = 0; at < n; at += limit) {
        int k = claim(&srv[(at / limit) % 2], body, c, NULL, limit);
        assert_int_equal(k, limit);
        for (int i = 0; i < k; i++) {
            char *id = vt_sql("SELECT item_identifier FROM item_sources WHERE id = %lld",
                              (long long)c[i].item_id);
            got[at + i] = id[strlen(id) - 1];
            free(id);
        }
    }
    got[n] = '\0';
}

/* Priorities order claims, and aging lets an item that waited 20 minutes at priority -5
 * pass newer items of priority 10 (rank -15 minutes before -10): in the plain claim and in
 * the claim with limits, one at a time and in a batch. */
static void test_fairness_priority_aging(void **state)
{
    (void)state;
    static const char *flows[] = {"pa1", "pa2", "pa3"};
    char got[8];
    for (int f = 0; f < 3; f++) {
        const char *keyed = f == 2 ? ", \"limit_keys\": [\"site:x\"]" : "";
        char extra[96];
        snprintf(extra, sizeof(extra), "\"priority\": -5%s", keyed);
        int64_t old = vt_register(&srv[0], flows[f], "item-o", extra);
        free(vt_sql("UPDATE items SET available_at = now() - interval '20 minutes'"
                    " WHERE id = %lld",
                    (long long)old));
        snprintf(extra, sizeof(extra), "\"priority\": 10%s", keyed);
        vt_register(&srv[1], flows[f], "item-h", extra);
        snprintf(extra, sizeof(extra), "\"priority\": 5%s", keyed);
        vt_register(&srv[0], flows[f], "item-m", extra);
        snprintf(extra, sizeof(extra), "\"priority\": 0%s", keyed);
        vt_register(&srv[1], flows[f], "item-l", extra);
    }
    claim_order("pa1", 1, "", got, 4); /* plain, one at a time */
    assert_string_equal(got, "ohml");
    claim_order("pa2", 4, ", \"limit_keys\": [\"provider:pa\"]", got, 4); /* limited, batch */
    assert_string_equal(got, "ohml");
    claim_order("pa3", 2, "", got, 4); /* keyed flow step (items with keys), batches of 2 */
    assert_string_equal(got, "ohml");
}

/* A batch claim of 10 from a 1,000 : 10 backlog takes 5 of each site, each site's by
 * priority (small's priorities 0..9: 9, 8, 7, 6, 5). */
static void test_fairness_batch(void **state)
{
    (void)state;
    vt_claim c[10];
    char site[10][16];
    int small = 0;
    fair_key("fb", "site");
    register_site("fb", "big", 1000, "");
    for (int i = 0; i < 10; i++) {
        char extra[96], ident[32];
        snprintf(extra, sizeof(extra), "\"priority\": %d, \"limit_keys\": [\"site:small\"]", i);
        snprintf(ident, sizeof(ident), "small-%d", i);
        vt_register(&srv[i % 2], "fb", ident, extra);
    }
    int n = claim(&srv[1], "{\"flow_step_id\": \"fb\", \"worker_id\": \"w\", \"limit\": 10}", c,
                  site, 10);
    assert_int_equal(n, 10);
    for (int i = 0; i < n; i++) {
        if (vt_sql_long("SELECT count(*) FROM items WHERE id = %lld AND fair_value = 'site:small'",
                        (long long)c[i].item_id) == 0)
            continue;
        assert_int_equal(
            vt_sql_long("SELECT priority FROM items WHERE id = %lld", (long long)c[i].item_id),
            9 - small);
        small++;
    }
    assert_int_equal(small, 5);
}

/* claim_next rotates between the sites as a claim does, and takes the worker's limit_keys:
 * with provider:cn at concurrency 1 held by another job it claims nothing; with room, its
 * claims carry the key. */
static void test_fairness_claim_next(void **state)
{
    (void)state;
    vt_claim c[1], held[1];
    char site[1][16];
    char body[256];
    fair_key("cn", "site");
    register_site("cn", "big", 50, "");
    register_site("cn", "small", 5, "");
    vt_resp r =
        vt_http(&srv[0], "PUT", "/v1/limits/provider:cn", VT_ADMIN, "{\"concurrency\": 1}", NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_int_equal(claim(&srv[0], "{\"flow_step_id\": \"cn\", \"worker_id\": \"w\"}", c, site, 1),
                     1);
    assert_int_equal(claim(&srv[1],
                           "{\"flow_step_id\": \"cn\", \"worker_id\": \"w\","
                           " \"limit_keys\": [\"provider:cn\"]}",
                           held, NULL, 1),
                     1);
    /* the provider is full: claim_next with its key gets nothing */
    snprintf(body, sizeof(body),
             "\"disposition\": \"complete\", \"claim_next\": 1, \"limit_keys\": [\"provider:cn\"],"
             " \"estimated_tokens\": 10");
    r = vt_dispose(&srv[1], &c[0], body);
    assert_int_equal(r.status, 200);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "claims")), 0);
    vt_resp_free(&r);
    r = vt_dispose(&srv[0], &held[0], "\"disposition\": \"complete\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    /* a claim_next claims before its own job gives its slot back: room for two */
    r = vt_http(&srv[0], "PUT", "/v1/limits/provider:cn", VT_ADMIN, "{\"concurrency\": 2}", NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    /* four single claim_next in a row alternate between the sites */
    assert_int_equal(claim(&srv[0], "{\"flow_step_id\": \"cn\", \"worker_id\": \"w\"}", c, site, 1),
                     1);
    char prev[16];
    snprintf(prev, sizeof(prev), "%s", site[0]);
    for (int i = 0; i < 4; i++) {
        r = vt_dispose(&srv[i % 2], &c[0], body);
        assert_int_equal(r.status, 200);
        const cJSON *cl = cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "claims"), 0);
        assert_non_null(cl);
        const char *ident = vt_str(cl, "item.item_identifier");
        assert_true(strstr(ident, prev) == NULL); /* the other site */
        snprintf(prev, sizeof(prev), "%.*s", (int)strcspn(ident + 8, "."), ident + 8);
        assert_string_equal(vt_str(cl, "limit_keys.1"),
                            "provider:cn"); /* lang:en, provider:cn, site:x */
        c[0].job_id = (int64_t)vt_num(cl, "job_id");
        snprintf(c[0].token, sizeof(c[0].token), "%s", vt_str(cl, "claim_token"));
        vt_resp_free(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fairness_validation),
        cmocka_unit_test(test_fairness_small_site_first_20),
        cmocka_unit_test(test_fairness_concurrent_replicas),
        cmocka_unit_test(test_fairness_priority_aging),
        cmocka_unit_test(test_fairness_batch),
        cmocka_unit_test(test_fairness_claim_next),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
