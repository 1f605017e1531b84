/* test_audit_replay.c - every kind of move an item can make (claim, each disposition, defer,
 * fail, worker and admin release, requeue one and in bulk, resolve one and in bulk, a lease
 * expired by the sweeper, a review asked and answered, a batch, claim_next, a session
 * outcome), then the audit as a reader sees it: each item's history (GET /v1/items/{id}),
 * the change feed (GET /v1/transitions), the review list, /v1/stats and the transition
 * counters of /metrics, normalised (ids by first appearance, no timestamps) and compared
 * with tests/integration/audit_replay.expected. The file is the audit's contract: a change
 * to how moves are stored must leave it byte for byte the same. VT_REPLAY_WRITE=1 rewrites
 * it instead (review the diff). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "vt.h"
#include "vt_api.h"

static vt_server srv;

/* no backoff: a retried item is claimable again at once */
VT_SERVER_FIXTURE(srv, "VERDICT_SWEEP_INTERVAL_SECONDS=1", "VERDICT_BACKOFF_BASE_SECONDS=0",
                  "VERDICT_BACKOFF_CAP_SECONDS=0", NULL)

#define OK_SESSION                                                                                 \
    "{\"returncode\": 0, \"stdout\": \"{\\\"type\\\": \\\"result\\\", \\\"subtype\\\":"            \
    " \\\"success\\\", \\\"is_error\\\": false, \\\"result\\\": \\\"all done\\\"}\"}"

enum { MAX_IDS = 64 };

/* Ids in order of first appearance: a job or item id prints as its ordinal. */
typedef struct id_map {
    int64_t ids[MAX_IDS];
    int n;
} id_map;

static id_map jobs_seen, items_seen;

static int ordinal(id_map *m, int64_t id)
{
    for (int i = 0; i < m->n; i++)
        if (m->ids[i] == id)
            return i + 1;
    assert_true(m->n < MAX_IDS);
    m->ids[m->n++] = id;
    return m->n;
}

static char out[1 << 16];
static size_t out_len;

static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + out_len, sizeof(out) - out_len, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof(out) - out_len);
    out_len += (size_t)n;
}

static void emit_member(const cJSON *t, const char *name)
{
    const cJSON *v = cJSON_GetObjectItem(t, name);
    if (!v)
        return;
    char *s = cJSON_PrintUnformatted(v);
    emit(" %s=%s", name, s);
    cJSON_free(s);
}

/* One transition, its members in a fixed order, ids as ordinals, no id and no time. */
static void emit_transition(const cJSON *t)
{
    static const char *const names[] = {
        "from_state",   "to_state",    "job_status",      "cause",    "reason_code",
        "reason",       "forced",      "lint_overridden", "evidence", "actor",
        "flow_step_id", "source_type", "item_identifier"};
    const cJSON *job = cJSON_GetObjectItem(t, "job_id");
    emit("  item=%d", ordinal(&items_seen, (int64_t)vt_num(t, "item_id")));
    if (cJSON_IsNumber(job))
        emit(" job=%d", ordinal(&jobs_seen, (int64_t)job->valuedouble));
    else
        emit(" job=null");
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        emit_member(t, names[i]);
    emit("\n");
}

static vt_resp post(const char *path, const char *token, const char *body, long status)
{
    vt_resp r = vt_http(&srv, "POST", path, token, body, NULL);
    if (r.status != status)
        fail_msg("POST %s %s: %ld %s", path, body, r.status, r.body);
    return r;
}

static void post_ok(const char *path, const char *token, const char *body)
{
    vt_resp r = post(path, token, body, 200);
    vt_resp_free(&r);
}

static vt_claim claim(const char *flow, int lease)
{
    vt_claim c;
    assert_int_equal(vt_claim_n(&srv, flow, 1, lease, &c), 1);
    return c;
}

static void dispose(const vt_claim *c, const char *members)
{
    vt_resp r = vt_dispose(&srv, c, members);
    if (r.status != 200)
        fail_msg("disposition %s: %ld %s", members, r.status, r.body);
    vt_resp_free(&r);
}

static void job_call(const vt_claim *c, const char *what, const char *members)
{
    char path[96], body[700];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/%s", (long long)c->job_id, what);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\"%s}", c->token, members);
    post_ok(path, VT_WORKER, body);
}

static void item_call(int64_t item, const char *what, const char *body)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/items/%lld/%s", (long long)item, what);
    post_ok(path, VT_ADMIN, body);
}

/* The claim, each disposition, and the worker's own moves, one flow step each (so that each
 * claim takes a known item). */
static void moves_by_workers(int64_t *ids)
{
    ids[0] = vt_register(&srv, "rp_complete", "a", NULL);
    dispose((vt_claim[]){claim("rp_complete", 60)}, "\"disposition\": \"complete\"");
    ids[1] = vt_register(&srv, "rp_reject", "b", NULL);
    dispose((vt_claim[]){claim("rp_reject", 60)},
            "\"disposition\": \"reject_source\", \"reason_code\": \"spam\", \"reason\": \"ad\"");
    ids[2] = vt_register(&srv, "rp_defer", "c", "\"max_defers\": 2");
    dispose((vt_claim[]){claim("rp_defer", 60)},
            "\"disposition\": \"defer_item\", \"reason_code\": \"other\","
            " \"retry_after_seconds\": 0");
    dispose((vt_claim[]){claim("rp_defer", 60)},
            "\"disposition\": \"defer_item\", \"reason_code\": \"other\"");
    ids[3] = vt_register(&srv, "rp_fail", "d", "\"max_attempts\": 2");
    dispose((vt_claim[]){claim("rp_fail", 60)},
            "\"disposition\": \"fail\", \"error\": \"boom\", \"retryable\": true");
    dispose((vt_claim[]){claim("rp_fail", 60)},
            "\"disposition\": \"fail\", \"error\": \"schema\", \"retryable\": false");
    ids[4] = vt_register(&srv, "rp_skip", "e", NULL);
    dispose((vt_claim[]){claim("rp_skip", 60)},
            "\"disposition\": \"skip_item\", \"reason\": \"tool-error\"");
    ids[5] = vt_register(&srv, "rp_session", "f", NULL);
    job_call((vt_claim[]){claim("rp_session", 60)}, "session-outcome",
             ", \"session\": " OK_SESSION);
    ids[6] = vt_register(&srv, "rp_release", "g", NULL);
    job_call((vt_claim[]){claim("rp_release", 60)}, "release", ", \"reason\": \"time is near\"");
    dispose((vt_claim[]){claim("rp_release", 60)},
            "\"disposition\": \"request_review\", \"question\": \"Is the source fair?\"");
    item_call(ids[6], "review", "{\"decision\": \"retry\", \"answer\": \"Yes, cite it.\"}");
    dispose((vt_claim[]){claim("rp_release", 60)}, "\"disposition\": \"complete\"");
}

/* A lease the sweeper expires: the next claim waits for it. */
static void lease_expiry(int64_t *ids)
{
    vt_claim again;
    ids[7] = vt_register(&srv, "rp_lease", "h", NULL);
    (void)claim("rp_lease", 5);
    int n = 0;
    for (int i = 0; i < 80 && n == 0; i++) {
        vt_sleep_ms(500);
        n = vt_claim_n(&srv, "rp_lease", 1, 60, &again);
    }
    assert_int_equal(n, 1);
    dispose(&again, "\"disposition\": \"complete\"");
}

/* Admin moves: release of a live claim, requeue, resolve, each one and in bulk; a review
 * answered processed; a batch of dispositions; claim_next. */
static void moves_by_admins(int64_t *ids)
{
    char body[900];
    ids[8] = vt_register(&srv, "rp_admin", "i", NULL);
    (void)claim("rp_admin", 60);
    item_call(ids[8], "release", "{\"reason\": \"worker is gone\"}");
    dispose((vt_claim[]){claim("rp_admin", 60)},
            "\"disposition\": \"defer_item\", \"reason_code\": \"tool_error\","
            " \"manual_review\": true");
    item_call(ids[8], "resolve", "{\"outcome\": \"rejected\", \"reason\": \"junk\"}");
    item_call(ids[8], "requeue", "{\"reason\": \"second look\", \"reset_budgets\": true}");
    dispose((vt_claim[]){claim("rp_admin", 60)},
            "\"disposition\": \"request_review\", \"question\": \"Publish?\"");
    item_call(ids[8], "review", "{\"decision\": \"processed\", \"answer\": \"yes\"}");
    ids[9] = vt_register(&srv, "rp_bulk", "j", "\"max_attempts\": 1");
    ids[10] = vt_register(&srv, "rp_bulk", "k", "\"max_attempts\": 1");
    vt_claim c[2];
    assert_int_equal(vt_claim_n(&srv, "rp_bulk", 2, 60, c), 2);
    snprintf(body, sizeof(body),
             "{\"dispositions\": [{\"job_id\": %lld, \"claim_token\": \"%s\", \"disposition\":"
             " \"fail\", \"error\": \"x\", \"retryable\": false}, {\"job_id\": %lld,"
             " \"claim_token\": \"%s\", \"disposition\": \"fail\", \"error\": \"y\"}]}",
             (long long)c[0].job_id, c[0].token, (long long)c[1].job_id, c[1].token);
    post_ok("/v1/dispositions", VT_WORKER, body);
    post_ok("/v1/items/requeue", VT_ADMIN,
            "{\"flow_step_id\": \"rp_bulk\", \"states\": [\"failed\"], \"reason\": \"redrive\"}");
    assert_int_equal(vt_claim_n(&srv, "rp_bulk", 2, 60, c), 2);
    dispose(&c[0], "\"disposition\": \"fail\", \"error\": \"z\", \"retryable\": false");
    /* claim_next: the finish and the next claim in one call */
    dispose(&c[1], "\"disposition\": \"fail\", \"error\": \"z\", \"retryable\": false");
    post_ok("/v1/items/resolve", VT_ADMIN,
            "{\"flow_step_id\": \"rp_bulk\", \"state\": \"failed\", \"outcome\": \"rejected\","
            " \"reason\": \"gave up\"}");
    ids[11] = vt_register(&srv, "rp_next", "l", NULL);
    ids[12] = vt_register(&srv, "rp_next", "m", NULL);
    vt_claim first = claim("rp_next", 60);
    snprintf(body, sizeof(body),
             "{\"claim_token\": \"%s\", \"disposition\": \"complete\", \"claim_next\": 1}",
             first.token);
    char path[80];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/disposition", (long long)first.job_id);
    vt_resp r = post(path, VT_WORKER, body, 200);
    vt_claim next = {.job_id = (int64_t)vt_num(r.json, "claims.0.job_id")};
    snprintf(next.token, sizeof(next.token), "%s", vt_str(r.json, "claims.0.claim_token"));
    vt_resp_free(&r);
    assert_true(next.job_id > 0);
    dispose(&next, "\"disposition\": \"complete\"");
}

static cJSON *get_json(const char *path)
{
    vt_resp r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    if (r.status != 200)
        fail_msg("GET %s: %ld %s", path, r.status, r.body);
    cJSON *j = r.json;
    r.json = NULL;
    vt_resp_free(&r);
    return j;
}

/* The change feed from the start, page by page, until it has caught up with every row. */
static void emit_feed(void)
{
    long after = 0, last = -1;
    emit("feed\n");
    for (int round = 0; round < 200 && after != last; round++) {
        char path[80];
        snprintf(path, sizeof(path), "/v1/transitions?after=%ld&limit=7", after);
        cJSON *j = get_json(path);
        const cJSON *t;
        cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "transitions")) emit_transition(t);
        after = (long)vt_num(j, "next_after");
        last = (long)vt_num(j, "last_id");
        cJSON_Delete(j);
        if (after != last)
            vt_sleep_ms(50); /* a page held back by an open writer: ask again */
    }
    assert_int_equal(after, last);
}

static void emit_items(const int64_t *ids, int n)
{
    for (int i = 0; i < n; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/v1/items/%lld", (long long)ids[i]);
        cJSON *j = get_json(path);
        emit("item %d %s %s\n", ordinal(&items_seen, ids[i]), vt_str(j, "item.item_identifier"),
             vt_str(j, "item.state"));
        const cJSON *t;
        cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "transitions")) emit_transition(t);
        cJSON_Delete(j);
    }
}

/* The counts read from the audit: /v1/stats' items and jobs, the transition counters. */
static void emit_counts(void)
{
    cJSON *j = get_json("/v1/stats");
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(j, "flow_steps"))
    {
        char *items = cJSON_PrintUnformatted(cJSON_GetObjectItem(f, "items"));
        char *jobs = cJSON_PrintUnformatted(cJSON_GetObjectItem(f, "jobs_last_day"));
        emit("stats %s items=%s jobs=%s\n", vt_str(f, "flow_step_id"), items, jobs);
        cJSON_free(items);
        cJSON_free(jobs);
    }
    cJSON_Delete(j);
    vt_resp r = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    for (const char *p = r.body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        size_t len = strcspn(p, "\n");
        if (strncmp(p, "verdict_transitions_total{", 26) == 0)
            emit("%.*s\n", (int)len, p);
    }
    vt_resp_free(&r);
    j = get_json("/v1/reviews");
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(j, "reviews"))
    {
        emit("review item=%d question=%s\n", ordinal(&items_seen, (int64_t)vt_num(v, "item_id")),
             vt_str(v, "question") ? vt_str(v, "question") : "null");
    }
    cJSON_Delete(j);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void test_audit_replay(void **state)
{
    (void)state;
    int64_t ids[13];
    moves_by_workers(ids);
    lease_expiry(ids);
    moves_by_admins(ids);
    for (int i = 0; i < 13; i++)
        (void)ordinal(&items_seen, ids[i]);
    emit_feed();
    emit_items(ids, 13);
    emit_counts();
    const char *path = VERDICT_TEST_DATA_DIR "/integration/audit_replay.expected";
    const char *w = getenv("VT_REPLAY_WRITE");
    if (w && strcmp(w, "1") == 0) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(out, 1, out_len, f), out_len);
        assert_int_equal(fclose(f), 0);
        return;
    }
    const char *want = read_text(path);
    assert_non_null(want);
    if (strcmp(want, out) != 0) {
        fprintf(stderr, "--- got\n%s--- want (%s)\n%s", out, path, want);
        fail_msg("the audit differs from %s", path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_audit_replay),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
