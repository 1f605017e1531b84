/* test_checkpoints.c - progress checkpoints over HTTP against PostgreSQL: a heartbeat's checkpoint
 * is merged into the job and handed to the next claim of the item as previous_checkpoint, so
 * a retried attempt updates what the earlier one created (the "post 42" story, with a fake
 * CMS counting the posts created); a passed lease keeps it; secrets are stored redacted; too
 * large, malformed or fenced-off heartbeats write nothing; worker_version is checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "vt.h"
#include "vt_api.h"

static vt_server srv;

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* POST /v1/claims for one item of flow (extra: more members or ""); *c is filled when an item
 * was claimed. The caller frees the answer (previous_checkpoint is claims.0). */
static vt_resp claim(const char *flow, const char *extra, int lease, vt_claim *c)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"%s\", \"worker_id\": \"w1\", \"lease_seconds\": %d%s}", flow,
             lease, extra);
    vt_resp r = vt_http(&srv, "POST", "/v1/claims", VT_WORKER, body, NULL);
    memset(c, 0, sizeof(*c));
    if (r.status == 200 && cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "claims")) == 1) {
        c->job_id = (int64_t)vt_num(r.json, "claims.0.job_id");
        c->item_id = (int64_t)vt_num(r.json, "claims.0.item.id");
        c->attempt = (int)vt_num(r.json, "claims.0.attempt");
        snprintf(c->token, sizeof(c->token), "%s", vt_str(r.json, "claims.0.claim_token"));
    }
    return r;
}

/* The previous_checkpoint of a one-claim answer (borrowed from r). */
static const cJSON *previous(const vt_resp *r)
{
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(r->json, "claims"), 0);
    const cJSON *p = cJSON_GetObjectItem(c, "previous_checkpoint");
    if (!p)
        fprintf(stderr, "claim answer: %s\n", r->body);
    assert_non_null(p); /* always present: null when there is none */
    return p;
}

/* POST /v1/jobs/{id}/heartbeat with the claim's token and `members` (may be ""). */
static vt_resp heartbeat(const vt_claim *c, const char *members)
{
    char path[80];
    size_t n = strlen(members) + 200;
    char *body = malloc(n);
    assert_non_null(body);
    snprintf(path, sizeof(path), "/v1/jobs/%lld/heartbeat", (long long)c->job_id);
    snprintf(body, n, "{\"claim_token\": \"%s\"%s%s}", c->token, *members ? ", " : "", members);
    vt_resp r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    free(body);
    return r;
}

static void heartbeat_ok(const vt_claim *c, const char *members)
{
    vt_resp r = heartbeat(c, members);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
}

/* The job's stored checkpoint as text (malloc'd; NULL when none). */
static char *stored(int64_t job_id)
{
    return vt_sql("SELECT checkpoint::text FROM jobs WHERE id = %lld", (long long)job_id);
}

/* The plugin's CMS: posts by id, how many were ever created and how often each was written. */
typedef struct fake_cms {
    int created;
    long next_id;
    int writes[64];
} fake_cms;

static long cms_create(fake_cms *cms)
{
    long id = cms->next_id++;
    cms->created++;
    cms->writes[id % 64]++;
    return id;
}

/* One attempt of the plugin: the post of the previous attempt (previous_checkpoint.post_id)
 * is updated, else a post is created and checkpointed before the upsert of its wiki page;
 * upsert_fails: that upsert fails deterministically and the attempt defers. Returns the
 * post's id. */
static long plugin_attempt(fake_cms *cms, const vt_claim *c, const cJSON *prev, bool upsert_fails)
{
    char members[160], path[80], body[400];
    const cJSON *post = cJSON_GetObjectItem(prev, "post_id");
    long id = cJSON_IsNumber(post) ? (long)post->valuedouble : -1;
    if (id >= 0) {
        cms->writes[id % 64]++; /* update post <id> */
    } else {
        id = cms_create(cms);
        snprintf(members, sizeof(members), "\"checkpoint\": {\"post_id\": %ld}", id);
        heartbeat_ok(c, members);
    }
    if (!upsert_fails) {
        vt_resp r = vt_dispose(&srv, c, "\"disposition\": \"complete\"");
        assert_int_equal(r.status, 200);
        vt_resp_free(&r);
        return id;
    }
    snprintf(path, sizeof(path), "/v1/jobs/%lld/tool-failures", (long long)c->job_id);
    snprintf(body, sizeof(body),
             "{\"claim_token\": \"%s\", \"tool\": \"wiki_upsert\", \"args\": {\"post\": %ld},"
             " \"error\": \"target_path must stay inside root\", \"kind\": \"deterministic\"}",
             c->token, id);
    vt_resp r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    r = vt_dispose(&srv, c,
                   "\"disposition\": \"defer_item\", \"reason_code\": \"tool_error\","
                   " \"retry_after_seconds\": 0");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    return id;
}

/* The story: attempt 1 creates post 42, checkpoints it, its upsert fails and it
 * defers; attempt 2's claim carries {"post_id": 42}, so post 42 is updated, not duplicated. */
static void test_checkpoints_post_42_story(void **state)
{
    (void)state;
    fake_cms cms = {.next_id = 42};
    vt_claim c;
    char path[64];
    vt_register(&srv, "story", "https://ex.org/feed/1", NULL);
    vt_resp r = claim("story", ", \"worker_version\": \"1.4.1\"", 60, &c);
    assert_int_equal(c.attempt, 1);
    assert_true(cJSON_IsNull(previous(&r))); /* never claimed before */
    assert_int_equal(plugin_attempt(&cms, &c, previous(&r), true), 42);
    vt_resp_free(&r);
    int64_t first = c.job_id;

    r = claim("story", ", \"worker_version\": \"1.4.2\"", 60, &c);
    assert_int_equal(c.attempt, 2);
    assert_int_equal((long)vt_num(previous(&r), "post_id"), 42);
    assert_int_equal(plugin_attempt(&cms, &c, previous(&r), false), 42);
    vt_resp_free(&r);

    assert_int_equal(cms.created, 1); /* exactly one post */
    assert_int_equal(cms.writes[42 % 64], 2);
    assert_string_equal(vt_item_state(&srv, c.item_id), "processed");
    /* the first job shows its checkpoint and version; the failure carries the version */
    snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)first);
    r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal((long)vt_num(r.json, "job.checkpoint.post_id"), 42);
    assert_string_equal(vt_str(r.json, "job.worker_version"), "1.4.1");
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM tool_failures WHERE job_id = %lld AND"
                                 " worker_version = '1.4.1' AND tool = 'wiki_upsert'",
                                 (long long)first),
                     1);
    /* lists stay small: no checkpoint there, the version is */
    r = vt_http(&srv, "GET", "/v1/jobs?flow_step_id=story", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "jobs"), 0),
                                    "checkpoint"));
    assert_string_equal(vt_str(r.json, "jobs.0.worker_version"), "1.4.1");
    vt_resp_free(&r);
}

/* The holder defers its item, to be claimable again at once. */
static void defer_now(const vt_claim *c)
{
    vt_resp r = vt_dispose(&srv, c,
                           "\"disposition\": \"defer_item\", \"reason_code\": \"tool_error\","
                           " \"retry_after_seconds\": 0");
    if (r.status != 200)
        fprintf(stderr, "defer: %s\n", r.body);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
}

/* Heartbeats merge (jsonb ||: later members win); a heartbeat without one keeps it; the last
 * earlier job that has a checkpoint is the one handed on. */
static void test_checkpoints_merge_and_latest(void **state)
{
    (void)state;
    vt_claim c;
    vt_register(&srv, "merge", "a", "\"max_defers\": 10");
    vt_resp r = claim("merge", "", 60, &c);
    vt_resp_free(&r);
    heartbeat_ok(&c, "\"checkpoint\": {\"a\": 1, \"b\": {\"x\": 1}}");
    heartbeat_ok(&c, "\"checkpoint\": {\"b\": {\"y\": 2}, \"c\": [1, 2]}");
    heartbeat_ok(&c, "");
    char *cp = stored(c.job_id);
    assert_string_equal(cp, "{\"a\": 1, \"b\": {\"y\": 2}, \"c\": [1, 2]}");
    free(cp);
    defer_now(&c);
    /* attempt 2 writes no checkpoint: attempt 3 still gets attempt 1's */
    r = claim("merge", "", 60, &c);
    assert_int_equal((long)vt_num(previous(&r), "a"), 1);
    vt_resp_free(&r);
    defer_now(&c);
    r = claim("merge", "", 60, &c);
    assert_int_equal(c.attempt, 3);
    assert_int_equal((long)vt_num(previous(&r), "a"), 1);
    vt_resp_free(&r);
    heartbeat_ok(&c, "\"checkpoint\": {\"a\": 3}");
    defer_now(&c);
    r = claim("merge", "", 60, &c);
    assert_int_equal((long)vt_num(previous(&r), "a"), 3); /* the newest one */
    assert_null(cJSON_GetObjectItem(previous(&r), "c"));  /* not merged across jobs */
    vt_resp_free(&r);
}

/* A lease that passes (the sweeper expires the job) keeps the checkpoint for the next claim. */
static void test_checkpoints_survive_lease_expiry(void **state)
{
    (void)state;
    vt_claim c, again = {0};
    vt_register(&srv, "expire", "a", NULL);
    vt_resp r = claim("expire", "", 5, &c);
    vt_resp_free(&r);
    heartbeat_ok(&c, "\"lease_seconds\": 5, \"checkpoint\": {\"step\": 3}");
    r = (vt_resp){0};
    for (int i = 0; i < 60 && again.job_id == 0; i++) { /* the sweeper runs every second */
        sleep_s(0.5);
        vt_resp_free(&r);
        r = claim("expire", "", 60, &again);
    }
    assert_int_equal(again.attempt, 2);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE id = %lld AND status ="
                                 " 'expired'",
                                 (long long)c.job_id),
                     1);
    assert_int_equal((long)vt_num(previous(&r), "step"), 3);
    vt_resp_free(&r);
}

/* Secrets are masked at any depth before they are stored. */
static void test_checkpoints_redacted(void **state)
{
    (void)state;
    vt_claim c;
    vt_register(&srv, "secret", "a", NULL);
    vt_resp r = claim("secret", "", 60, &c);
    vt_resp_free(&r);
    heartbeat_ok(&c, "\"checkpoint\": {\"post_id\": 7, \"wp_password\": \"hunter2-secret\","
                     " \"steps\": [{\"log\": \"GET https://bot:s3cr3tpw@wp.ex.org/x\"},"
                     " {\"api\": {\"access_token\": \"tok-123456789\"}}]}");
    char *cp = stored(c.job_id);
    assert_non_null(cp);
    assert_null(strstr(cp, "hunter2-secret"));
    assert_null(strstr(cp, "s3cr3tpw"));
    assert_null(strstr(cp, "tok-123456789"));
    assert_non_null(strstr(cp, "\"post_id\": 7"));
    free(cp);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE id = %lld AND"
                                 " checkpoint->>'wp_password' = '[REDACTED]'",
                                 (long long)c.job_id),
                     1);
}

/* A member of n bytes: "key": "xxx..." (malloc'd). */
static char *big_member(const char *key, size_t n)
{
    char *s = malloc(n + 64);
    assert_non_null(s);
    int head = snprintf(s, 64, "\"%s\": \"", key);
    memset(s + head, 'x', n);
    snprintf(s + head + n, 8, "\"");
    return s;
}

/* Too large (alone, or once merged) or not an object: refused naming the field, and nothing
 * is written, the lease included. */
static void test_checkpoints_limits(void **state)
{
    (void)state;
    vt_claim c;
    char members[70000 + 128];
    vt_register(&srv, "limits", "a", NULL);
    vt_resp r = claim("limits", "", 60, &c);
    vt_resp_free(&r);
    heartbeat_ok(&c, "\"checkpoint\": {\"keep\": 1}");
    char *lease =
        vt_sql("SELECT lease_expires_at::text FROM items WHERE id = %lld", (long long)c.item_id);
    char *m = big_member("blob", 65536);
    snprintf(members, sizeof(members), "\"lease_seconds\": 600, \"checkpoint\": {%s}", m);
    free(m);
    r = heartbeat(&c, members);
    vt_assert_error(&r, 413, "payload_too_large");
    assert_string_equal(vt_str(r.json, "field"), "checkpoint");
    vt_resp_free(&r);
    char *now =
        vt_sql("SELECT lease_expires_at::text FROM items WHERE id = %lld", (long long)c.item_id);
    assert_string_equal(now, lease); /* the lease was not extended either */
    free(now);
    /* merged beyond 128 KiB: each one fits, the third does not */
    for (int i = 0; i < 3; i++) {
        char key[8];
        snprintf(key, sizeof(key), "k%d", i);
        m = big_member(key, 50000);
        snprintf(members, sizeof(members), "\"lease_seconds\": %d, \"checkpoint\": {%s}",
                 600 + i * 60, m);
        free(m);
        r = heartbeat(&c, members);
        assert_int_equal(r.status, i < 2 ? 200 : 413);
        if (i == 2)
            assert_string_equal(vt_str(r.json, "field"), "checkpoint");
        vt_resp_free(&r);
        now = vt_sql("SELECT lease_expires_at::text FROM items WHERE id = %lld",
                     (long long)c.item_id);
        assert_true((strcmp(now, lease) == 0) == (i == 2)); /* extended unless refused */
        free(lease);
        lease = now;
    }
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE id = %lld AND checkpoint ?"
                                 " 'k1' AND NOT checkpoint ? 'k2' AND checkpoint ? 'keep'",
                                 (long long)c.job_id),
                     1);
    r = heartbeat(&c, "\"checkpoint\": [1, 2]");
    vt_assert_error(&r, 400, "invalid_field");
    assert_string_equal(vt_str(r.json, "field"), "checkpoint");
    vt_resp_free(&r);
    r = heartbeat(&c, "\"checkpoint\": \"post 42\"");
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
    free(lease);
}

/* A heartbeat of a lost claim (released by an admin) or of a finished job writes nothing. */
static void test_checkpoints_fenced(void **state)
{
    (void)state;
    vt_claim c, next;
    char path[64];
    int64_t id = vt_register(&srv, "fenced", "a", NULL);
    vt_resp r = claim("fenced", "", 60, &c);
    vt_resp_free(&r);
    heartbeat_ok(&c, "\"checkpoint\": {\"post_id\": 1}");
    snprintf(path, sizeof(path), "/v1/items/%lld/release", (long long)id);
    r = vt_http(&srv, "POST", path, VT_ADMIN, "{\"reason\": \"stuck\"}", NULL);
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    r = heartbeat(&c, "\"checkpoint\": {\"post_id\": 2}");
    vt_assert_error(&r, 409, "claim_lost");
    vt_resp_free(&r);
    char *cp = stored(c.job_id);
    assert_string_equal(cp, "{\"post_id\": 1}");
    free(cp);
    /* the next holder gets the released job's checkpoint, and a finished job takes no more */
    r = claim("fenced", "", 60, &next);
    assert_int_equal((long)vt_num(previous(&r), "post_id"), 1);
    vt_resp_free(&r);
    r = vt_dispose(&srv, &next, "\"disposition\": \"complete\"");
    vt_resp_free(&r);
    r = heartbeat(&next, "\"checkpoint\": {\"post_id\": 3}");
    vt_assert_error(&r, 409, "job_finalized");
    vt_resp_free(&r);
    assert_null(stored(next.job_id));
    /* another job's token: nothing written either */
    vt_claim forged = c;
    forged.job_id = next.job_id;
    r = heartbeat(&forged, "\"checkpoint\": {\"post_id\": 4}");
    assert_int_equal(r.status, 409);
    vt_resp_free(&r);
    assert_null(stored(next.job_id));
}

/* worker_version: a semantic version of at most 64 bytes, else 400 naming the field. */
static void test_checkpoints_worker_version(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "1.4",
        "v1.4.2",
        "01.2.3",
        "1.2.3-",
        "1.2.3+",
        "1.2.3-01",
        "1..3",
        "1.2.3 ",
        "1.2.3-a..b",
        "1.2.3-\xc3\xa9",
        "",
        "1.2.3-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    static const char *const good[] = {"0.0.0", "1.4.2", "10.20.30-rc.1+build.5",
                                       "1.0.0-alpha-a.b-c", "1.2.3+001"};
    char extra[200];
    vt_claim c;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(extra, sizeof(extra), ", \"worker_version\": \"%s\"", bad[i]);
        vt_resp r = claim("versions", extra, 60, &c);
        vt_assert_error(&r, 400, "invalid_field");
        assert_string_equal(vt_str(r.json, "field"), "worker_version");
        vt_resp_free(&r);
    }
    vt_resp r = claim("versions", ", \"worker_version\": 142", 60, &c);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        char ident[16];
        snprintf(ident, sizeof(ident), "v%zu", i);
        vt_register(&srv, "versions", ident, NULL);
        snprintf(extra, sizeof(extra), ", \"worker_version\": \"%s\"", good[i]);
        r = claim("versions", extra, 60, &c);
        assert_int_equal(r.status, 200);
        vt_resp_free(&r);
        char *v = vt_sql("SELECT worker_version FROM jobs WHERE id = %lld", (long long)c.job_id);
        assert_string_equal(v, good[i]);
        free(v);
    }
}

VT_SERVER_FIXTURE(srv, "VERDICT_SWEEP_INTERVAL_SECONDS=1", NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checkpoints_post_42_story),
        cmocka_unit_test(test_checkpoints_merge_and_latest),
        cmocka_unit_test(test_checkpoints_survive_lease_expiry),
        cmocka_unit_test(test_checkpoints_redacted),
        cmocka_unit_test(test_checkpoints_limits),
        cmocka_unit_test(test_checkpoints_fenced),
        cmocka_unit_test(test_checkpoints_worker_version),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
