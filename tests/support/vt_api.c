/* vt_api.c - integration-test shortcuts over verdict's API (see vt_api.h). */
#include "vt_api.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

int64_t vt_register(const vt_server *s, const char *flow, const char *ident, const char *extra)
{
    char body[4096];
    snprintf(body, sizeof(body),
             "{\"items\": [{\"flow_step_id\": \"%s\", \"source_type\": \"rss\","
             " \"item_identifier\": \"%s\"%s%s}]}",
             flow, ident, extra ? ", " : "", extra ? extra : "");
    vt_resp r = vt_http(s, "POST", "/v1/items", VT_WORKER, body, NULL);
    if (r.status != 200)
        fprintf(stderr, "register: %ld %s\n", r.status, r.body);
    assert_int_equal(r.status, 200);
    int64_t id = (int64_t)vt_num(r.json, "items.0.id");
    vt_resp_free(&r);
    return id;
}

int vt_claim_n(const vt_server *s, const char *flow, int limit, int lease, vt_claim *out)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"%s\", \"worker_id\": \"test\", \"limit\": %d,"
             " \"lease_seconds\": %d}",
             flow, limit, lease);
    vt_resp r = vt_http(s, "POST", "/v1/claims", VT_WORKER, body, NULL);
    if (r.status != 200)
        fprintf(stderr, "claim: %ld %s\n", r.status, r.body);
    assert_int_equal(r.status, 200);
    const cJSON *claims = cJSON_GetObjectItem(r.json, "claims");
    int n = cJSON_GetArraySize(claims);
    for (int i = 0; i < n; i++) {
        const cJSON *c = cJSON_GetArrayItem(claims, i);
        out[i].job_id = (int64_t)vt_num(c, "job_id");
        out[i].item_id = (int64_t)vt_num(c, "item.id");
        out[i].attempt = (int)vt_num(c, "attempt");
        snprintf(out[i].token, sizeof(out[i].token), "%s", vt_str(c, "claim_token"));
    }
    vt_resp_free(&r);
    return n;
}

vt_claim vt_claim1(const vt_server *s, const char *flow)
{
    vt_claim c;
    memset(&c, 0, sizeof(c));
    assert_int_equal(vt_claim_n(s, flow, 1, 300, &c), 1);
    return c;
}

vt_resp vt_dispose(const vt_server *s, const vt_claim *c, const char *members)
{
    char path[64], body[8192];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/disposition", (long long)c->job_id);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\", %s}", c->token, members);
    return vt_http(s, "POST", path, VT_WORKER, body, NULL);
}

const char *vt_item_state(const vt_server *s, int64_t item_id)
{
    static _Thread_local char state[32];
    char path[64];
    snprintf(path, sizeof(path), "/v1/items/%lld", (long long)item_id);
    vt_resp r = vt_http(s, "GET", path, VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    snprintf(state, sizeof(state), "%s", vt_str(r.json, "item.state"));
    vt_resp_free(&r);
    return state;
}

long vt_metric_sum(const vt_server *const *s, int n, const char *sample)
{
    char prefix[256];
    long sum = 0;
    snprintf(prefix, sizeof(prefix), "%s ", sample);
    for (int i = 0; i < n; i++) {
        vt_resp r = vt_http(s[i], "GET", "/metrics", VT_READER, NULL, NULL);
        assert_int_equal(r.status, 200);
        const char *at = r.body ? strstr(r.body, prefix) : NULL;
        if (at)
            sum += strtol(at + strlen(prefix), NULL, 10);
        vt_resp_free(&r);
    }
    return sum;
}

void vt_put_limit(const vt_server *s, const char *key, const char *body)
{
    char path[256];
    snprintf(path, sizeof(path), "/v1/limits/%s", key);
    vt_resp r = vt_http(s, "PUT", path, VT_ADMIN, body, NULL);
    if (r.status != 200)
        fprintf(stderr, "put %s: %ld %s\n", key, r.status, r.body);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
}

double vt_limit_num(const vt_server *s, const char *key, const char *field)
{
    char path[256];
    snprintf(path, sizeof(path), "/v1/limits/%s", key);
    vt_resp r = vt_http(s, "GET", path, VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    double v = vt_num(cJSON_GetObjectItem(r.json, "limit"), field);
    vt_resp_free(&r);
    return v;
}

long vt_max_in_flight(const char *flow, const char *key)
{
    return vt_sql_long("SELECT max(n) FROM (SELECT sum(d) OVER (ORDER BY t.logged_at, d, t.id)"
                       " AS n FROM (SELECT t.*, CASE WHEN t.cause = 'claim' THEN 1 ELSE -1 END"
                       " AS d FROM audit t JOIN jobs j ON j.id = t.job_id"
                       " WHERE j.flow_step_id = '%s' AND j.limit_keys @> ARRAY['%s']"
                       " AND (t.cause = 'claim' OR t.from_state = 'claimed')) t) x",
                       flow, key);
}
