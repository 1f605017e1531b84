/* test_model.c - a randomized model test against the real server: thousands of random
 * events (claims, every disposition, heartbeats, passed leases, requeues, replays, stale
 * tokens) on a few dozen items, checking the state machine's invariants in the database
 * after every step. The seed is printed so a failure can be replayed (VERDICT_MODEL_SEED). */
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

#define ITEMS 30
#define MAX_LIVE 64

static vt_server srv;
static unsigned long long rng;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

typedef struct finished {
    vt_claim claim;
    char members[256];
} finished;

static vt_claim live[MAX_LIVE];
static int nlive;
static finished done[4096];
static int ndone;

/* The invariants, each a count of the rows that break it: 0 when it holds. */
static const struct {
    const char *name, *sql;
} invariants[] = {
    /* done only through complete, reject (or skip-as-reject) or a succeeded session */
    {"done by a deciding cause",
     "SELECT count(*) FROM items i WHERE i.state IN ('processed', 'rejected') AND NOT EXISTS"
     " (SELECT 1 FROM audit t WHERE t.item_id = i.id AND t.to_state = i.state AND"
     "  t.cause IN ('complete', 'reject_source', 'skip_item', 'session_outcome'))"},
    /* counters within budgets */
    {"counters within budgets",
     "SELECT count(*) FROM items WHERE failures > max_attempts OR defers > max_defers"},
    /* a claimed item has exactly its processing job; no other job is processing */
    {"claimed item has its processing job",
     "SELECT count(*) FROM items i LEFT JOIN jobs j ON j.id = i.current_job_id"
     " WHERE i.state = 'claimed' AND (j.status IS DISTINCT FROM 'processing'"
     " OR j.claim_token IS DISTINCT FROM i.claim_token)"},
    {"processing job has its claimed item",
     "SELECT count(*) FROM jobs j JOIN items i ON i.id = j.item_id"
     " WHERE j.status = 'processing' AND (i.state <> 'claimed' OR i.current_job_id <> j.id)"},
    /* the transitions replay to the current state, each from where the last one left */
    {"last transition is the state",
     "SELECT count(*) FROM items i WHERE i.state IS DISTINCT FROM"
     " (SELECT to_state FROM audit t WHERE t.item_id = i.id ORDER BY id DESC LIMIT 1)"},
    {"transitions chain", "SELECT count(*) FROM (SELECT from_state, lag(to_state) OVER"
                          " (PARTITION BY item_id ORDER BY id) AS prev FROM audit) x"
                          " WHERE prev IS NOT NULL AND from_state IS DISTINCT FROM prev"},
    /* parked and done items are never claimable; claimable ones are never parked */
    {"parked and done hold no lease",
     "SELECT count(*) FROM items WHERE state IN ('processed', 'rejected',"
     " 'manual_review', 'failed') AND lease_expires_at IS NOT NULL"},
};

/* The invariants, summed (one query: this runs after every step): 0 when all hold; when one
 * does not, each broken invariant is named on stderr. */
static long violations(void)
{
    char sql[4096] = "SELECT 0";
    size_t n = sizeof(invariants) / sizeof(invariants[0]);
    for (size_t i = 0; i < n; i++)
        snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), " + (%s)", invariants[i].sql);
    long total = vt_sql_long("%s", sql);
    for (size_t i = 0; total != 0 && i < n; i++) {
        long broken = vt_sql_long("%s", invariants[i].sql);
        if (broken != 0)
            fprintf(stderr, "invariant broken: %s (%ld rows)\n", invariants[i].name, broken);
    }
    return total;
}

static const char *random_disposition(char *buf, size_t len)
{
    static const char *const reasons[] = {"spam", "tool-error", "", "thin", "no idea"};
    switch (rnd(7)) {
    case 0:
        return "\"disposition\": \"complete\"";
    case 1:
        return "\"disposition\": \"reject_source\", \"reason_code\": \"duplicate\"";
    case 2:
        snprintf(buf, len,
                 "\"disposition\": \"defer_item\", \"reason_code\": \"tool_error\","
                 " \"retry_after_seconds\": 0, \"manual_review\": %s",
                 rnd(6) == 0 ? "true" : "false");
        return buf;
    case 3:
    case 4:
        snprintf(buf, len, "\"disposition\": \"fail\", \"error\": \"e%u\", \"retryable\": %s",
                 rnd(100), rnd(5) == 0 ? "false" : "true");
        return buf;
    case 5:
        snprintf(buf, len, "\"disposition\": \"skip_item\", \"reason\": \"%s\"", reasons[rnd(5)]);
        return buf;
    default:
        return "\"disposition\": \"defer_item\", \"reason_code\": \"low_confidence\"";
    }
}

static void step_dispose(void)
{
    char buf[256];
    int i = (int)rnd((unsigned)nlive);
    vt_claim c = live[i];
    const char *m = random_disposition(buf, sizeof(buf));
    vt_resp r = vt_dispose(&srv, &c, m);
    if (r.status == 200) {
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "replayed")));
        if (ndone < 4096) {
            done[ndone].claim = c;
            snprintf(done[ndone].members, sizeof(done[0].members), "%s", m);
            ndone++;
        }
    } else if (r.status != 409 || strcmp(vt_str(r.json, "error"), "claim_lost") != 0) {
        fail_msg("dispose %s: %ld %s", m, r.status, r.body); /* only a passed lease may refuse */
    }
    vt_resp_free(&r);
    live[i] = live[--nlive];
}

static void step_replay_or_stale(void)
{
    finished *f = &done[rnd((unsigned)ndone)];
    bool replay = rnd(2) == 0;
    vt_resp r = vt_dispose(&srv, &f->claim,
                           replay ? f->members
                                  : "\"disposition\": \"complete\","
                                    " \"reason\": \"stale\"");
    if (replay) {
        if (r.status != 200 || !cJSON_IsTrue(cJSON_GetObjectItem(r.json, "replayed")))
            fail_msg("replay %s: %ld %s", f->members, r.status, r.body);
    } else if (r.status != 409) {
        fail_msg("stale call answered %ld %s", r.status, r.body);
    }
    vt_resp_free(&r);
}

static void step_claim(void)
{
    vt_claim got[3];
    int n = vt_claim_n(&srv, "model", 1 + (int)rnd(3), 300, got);
    for (int i = 0; i < n && nlive < MAX_LIVE; i++)
        live[nlive++] = got[i];
}

static void step_heartbeat(void)
{
    char path[64], body[128];
    const vt_claim *c = &live[rnd((unsigned)nlive)];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/heartbeat", (long long)c->job_id);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\"}", c->token);
    vt_resp r = vt_http(&srv, "POST", path, VT_WORKER, body, NULL);
    assert_true(r.status == 200 || r.status == 409);
    vt_resp_free(&r);
}

static void step_expire(void)
{
    const vt_claim *c = &live[rnd((unsigned)nlive)];
    /* only while that job still holds the item: a claim stays in live after its lease was
     * swept, and setting a lease on the parked item it left would break the invariant the
     * test checks, not the service */
    vt_sql("UPDATE items SET lease_expires_at = now() - interval '1 second' WHERE id = %lld"
           " AND current_job_id = %lld AND state = 'claimed'",
           (long long)c->item_id, (long long)c->job_id);
    for (int i = 0; i < 60; i++) { /* the sweeper runs every second */
        if (vt_sql_long("SELECT count(*) FROM jobs WHERE id = %lld AND status = 'processing'",
                        (long long)c->job_id) == 0)
            return;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fail_msg("the sweeper did not close job %lld", (long long)c->job_id);
}

static void step_requeue(void)
{
    char path[64];
    long id = vt_sql_long("SELECT id FROM items WHERE flow_step_id = 'model' AND state <> 'claimed'"
                          " ORDER BY random() LIMIT 1");
    if (id < 0)
        return;
    snprintf(path, sizeof(path), "/v1/items/%ld/requeue", id);
    vt_resp r =
        vt_http(&srv, "POST", path, VT_ADMIN, rnd(2) ? "{\"reset_budgets\": true}" : "{}", NULL);
    assert_true(r.status == 200 || r.status == 409);
    vt_resp_free(&r);
}

static void test_model_random_sequences(void **state)
{
    (void)state;
    const char *seed = getenv("VERDICT_MODEL_SEED");
    const char *steps_env = getenv("VERDICT_MODEL_STEPS");
    int steps = steps_env ? (int)strtol(steps_env, NULL, 10) : 3000;
    rng = seed ? strtoull(seed, NULL, 10) : (unsigned long long)time(NULL) | 1;
    fprintf(stderr, "model test: seed %llu, %d steps\n", rng, steps);
    for (int i = 0; i < ITEMS; i++) {
        char ident[16], extra[64];
        snprintf(ident, sizeof(ident), "m%d", i);
        snprintf(extra, sizeof(extra), "\"max_attempts\": %d, \"max_defers\": %d", 1 + i % 4,
                 1 + i % 3);
        vt_register(&srv, "model", ident, extra);
    }
    for (int s = 0; s < steps; s++) {
        unsigned a = rnd(100);
        if (nlive == 0 || a < 30)
            step_claim();
        else if (a < 70)
            step_dispose();
        else if (a < 78 && ndone > 0)
            step_replay_or_stale();
        else if (a < 85)
            step_heartbeat();
        else if (a < 87)
            step_expire();
        else
            step_requeue();
        long v = violations();
        if (v != 0)
            fail_msg("step %d (seed %s): %ld invariant violations", s, seed ? seed : "random", v);
    }
}

VT_SERVER_FIXTURE(srv, "VERDICT_SWEEP_INTERVAL_SECONDS=1", "VERDICT_BACKOFF_BASE_SECONDS=0",
                  "VERDICT_LOG_LEVEL=warn", NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_random_sequences),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
