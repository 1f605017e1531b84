/* test_coalesce.c - coalesced single-item claims and dispositions (coalesce.h) under many real
 * concurrent clients on two verdictd replicas sharing the database: every item is handed out
 * once, every request gets a job of its own (the job claimed for worker wN is the one wN
 * finishes, with wN's token), a wrong token or a call on a finished job in the same group
 * answers only its own request with its own error, an identical repeat replays, and the
 * statements did serve several requests at once (verdict_coalesced_*_total); the same for
 * single dispositions that claim the next item (claim_next); and single claims with an
 * Idempotency-Key in those statements: a stored key answers its stored answer, a new one claims
 * and is kept with its job, one key claims once in a statement or across replicas. */
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

#define CLIENTS 48
#define ITEMS 3000
#define FLOW "co"

static vt_server srv[2];

typedef struct run {
    _Atomic int claimed[ITEMS];
    _Atomic long errors5xx, unexpected, completes, replays, lost, finalized;
    int64_t first_id;
    char first_error[400];
    _Atomic int noted;
} run;

static run R;

typedef struct client {
    int index;
} client;

static void note(const char *what, const vt_resp *r)
{
    atomic_fetch_add(&R.unexpected, 1);
    if (atomic_fetch_add(&R.noted, 1) == 0)
        snprintf(R.first_error, sizeof(R.first_error), "%s: %ld %.300s", what, r->status,
                 r->body ? r->body : "");
}

static bool is_error(const vt_resp *r, long status, const char *code)
{
    const char *error = vt_str(r->json, "error");
    return r->status == status && error && strcmp(error, code) == 0;
}

/* One claimed job: sometimes a wrong token first, then the right call, then its identical
 * repeat, sometimes a different call on the finished job. */
static void finish(const vt_server *s, const vt_claim *cl, int who, int cycle)
{
    char members[160];
    snprintf(members, sizeof(members),
             "\"disposition\": \"complete\", \"engine_data\": {\"by\": \"w%d\"}", who);
    if (cycle % 5 == 1) {
        vt_claim bad = *cl;
        snprintf(bad.token, sizeof(bad.token), "00000000-0000-4000-8000-000000000000");
        vt_resp b = vt_dispose(s, &bad, members);
        if (is_error(&b, 409, "claim_lost"))
            atomic_fetch_add(&R.lost, 1);
        else
            note("wrong token", &b);
        vt_resp_free(&b);
    }
    vt_resp d = vt_dispose(s, cl, members);
    if (d.status >= 500 || d.status == 0)
        atomic_fetch_add(&R.errors5xx, 1);
    if (d.status == 200 && vt_num(d.json, "job.id") == (double)cl->job_id &&
        !cJSON_IsTrue(cJSON_GetObjectItem(d.json, "replayed")))
        atomic_fetch_add(&R.completes, 1);
    else
        note("complete", &d);
    vt_resp_free(&d);
    if (cycle % 3 == 0) { /* the identical call again: the kept answer */
        vt_resp again = vt_dispose(&srv[(who + 1) % 2], cl, members);
        if (again.status == 200 && cJSON_IsTrue(cJSON_GetObjectItem(again.json, "replayed")))
            atomic_fetch_add(&R.replays, 1);
        else
            note("replay", &again);
        vt_resp_free(&again);
    }
    if (cycle % 7 == 2) { /* another call on the finished job */
        vt_resp other = vt_dispose(s, cl,
                                   "\"disposition\": \"fail\", \"error\": \"x\","
                                   " \"retryable\": false");
        if (is_error(&other, 409, "job_finalized"))
            atomic_fetch_add(&R.finalized, 1);
        else
            note("finalized", &other);
        vt_resp_free(&other);
    }
}

static void *client_main(void *p)
{
    const client *c = p;
    const vt_server *s = &srv[c->index % 2];
    char body[200];
    int idle = 0;
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"" FLOW "\", \"worker_id\": \"w%d\", \"lease_seconds\": 600}",
             c->index);
    for (int cycle = 0; idle < 2; cycle++) {
        vt_resp r = vt_http(s, "POST", "/v1/claims", VT_WORKER, body, NULL);
        const cJSON *claims = cJSON_GetObjectItem(r.json, "claims");
        if (r.status >= 500 || r.status == 0)
            atomic_fetch_add(&R.errors5xx, 1);
        if (r.status != 200 || cJSON_GetArraySize(claims) > 1)
            note("claim", &r);
        if (r.status != 200 || cJSON_GetArraySize(claims) != 1) {
            idle++;
            vt_resp_free(&r);
            continue;
        }
        const cJSON *j = cJSON_GetArrayItem(claims, 0);
        vt_claim cl = {(int64_t)vt_num(j, "job_id"), (int64_t)vt_num(j, "item.id"), 1, ""};
        snprintf(cl.token, sizeof(cl.token), "%s", vt_str(j, "claim_token"));
        long idx = (long)(cl.item_id - R.first_id);
        if (idx >= 0 && idx < ITEMS)
            atomic_fetch_add(&R.claimed[idx], 1);
        vt_resp_free(&r);
        finish(s, &cl, c->index, cycle);
    }
    vt_http_thread_cleanup();
    return NULL;
}

/* A counter's samples of one kind, summed over both servers. */
static long metric(const char *name, const char *kind)
{
    const vt_server *both[] = {&srv[0], &srv[1]};
    char sample[160];
    snprintf(sample, sizeof(sample), "%s{kind=\"%s\"}", name, kind);
    return vt_metric_sum(both, 2, sample);
}

/* CLIENTS clients running fn until the stock is gone; then no unexpected answer, no 5xx, every
 * one of the items finished, and each handed out exactly once. */
static void run_clients(void *(*fn)(void *), int items)
{
    pthread_t t[CLIENTS];
    client args[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        args[i] = (client){i};
        assert_int_equal(pthread_create(&t[i], NULL, fn, &args[i]), 0);
    }
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(t[i], NULL);
    if (atomic_load(&R.unexpected))
        fail_msg("%ld unexpected answers; the first: %s", atomic_load(&R.unexpected),
                 R.first_error);
    assert_int_equal(atomic_load(&R.errors5xx), 0);
    assert_int_equal(atomic_load(&R.completes), items);
    for (int i = 0; i < items; i++) {
        if (atomic_load(&R.claimed[i]) != 1)
            fail_msg("item %d was handed out %d times", i, atomic_load(&R.claimed[i]));
    }
}

static void test_coalesced_cycles(void **state)
{
    (void)state;
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('" FLOW "')");
    vt_seed_items(FLOW, "item-", ITEMS, 5, 3);
    R.first_id = vt_sql_long("SELECT min(id) FROM items WHERE flow_step_id = '" FLOW "'");
    run_clients(client_main, ITEMS);
    assert_true(atomic_load(&R.lost) > 0 && atomic_load(&R.replays) > 0 &&
                atomic_load(&R.finalized) > 0);
    /* each job was finished by the worker it was claimed for, each item has one job */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = '" FLOW "'"
                                 " AND status = 'completed' AND engine_data->>'by' = worker_id"),
                     ITEMS);
    assert_int_equal(vt_sql_long("SELECT count(DISTINCT item_id) FROM jobs"
                                 " WHERE flow_step_id = '" FLOW "'"),
                     ITEMS);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit t JOIN items i"
                                 " ON i.id = t.item_id WHERE i.flow_step_id = '" FLOW "'"
                                 " AND t.cause IN ('claim', 'complete')"),
                     2 * ITEMS);
    /* each job kept its own request's trace */
    assert_int_equal(vt_sql_long("SELECT count(DISTINCT disposition_trace_id) FROM jobs"
                                 " WHERE flow_step_id = '" FLOW "'"),
                     ITEMS);
    /* and the statements served several requests at once */
    long cs = metric("verdict_coalesced_statements_total", "claim");
    long cr = metric("verdict_coalesced_requests_total", "claim");
    long ds = metric("verdict_coalesced_statements_total", "disposition");
    long dr = metric("verdict_coalesced_requests_total", "disposition");
    print_message("claims: %ld requests in %ld statements; dispositions: %ld in %ld\n", cr, cs, dr,
                  ds);
    assert_true(cr >= ITEMS && cr > cs);
    assert_true(dr >= ITEMS && dr > ds);
}

#define NEXT_FLOW "co_next"
#define NEXT_ITEMS 1500

/* The claimed item of a disposition's claims (claim_next: 1), 0 when none; fills cl. */
static int64_t next_claim(const cJSON *answer, vt_claim *cl)
{
    const cJSON *claims = cJSON_GetObjectItem(answer, "claims");
    if (!cJSON_IsArray(claims) || cJSON_GetArraySize(claims) > 1) {
        atomic_fetch_add(&R.unexpected, 1);
        return 0;
    }
    const cJSON *j = cJSON_GetArrayItem(claims, 0);
    if (!j)
        return 0;
    *cl = (vt_claim){(int64_t)vt_num(j, "job_id"), (int64_t)vt_num(j, "item.id"), 1, ""};
    snprintf(cl->token, sizeof(cl->token), "%s", vt_str(j, "claim_token"));
    long idx = (long)(cl->item_id - R.first_id);
    if (idx >= 0 && idx < NEXT_ITEMS)
        atomic_fetch_add(&R.claimed[idx], 1);
    return cl->job_id;
}

/* A worker living on claim_next: one plain claim, then single dispositions that claim the
 * next item, until one claims nothing; every third call is repeated on the other replica and
 * must replay the same claim. */
static void *next_client_main(void *p)
{
    const client *c = p;
    const vt_server *s = &srv[c->index % 2];
    char body[200], members[200];
    vt_claim cl;
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"" NEXT_FLOW
             "\", \"worker_id\": \"n%d\", \"lease_seconds\": 600}",
             c->index);
    snprintf(members, sizeof(members),
             "\"disposition\": \"complete\", \"claim_next\": 1,"
             " \"engine_data\": {\"by\": \"n%d\"}",
             c->index);
    vt_resp r = vt_http(s, "POST", "/v1/claims", VT_WORKER, body, NULL);
    int64_t job = r.status == 200 ? next_claim(r.json, &cl) : 0;
    vt_resp_free(&r);
    for (int cycle = 0; job; cycle++) {
        vt_claim now = cl;
        vt_resp d = vt_dispose(s, &now, members);
        if (d.status >= 500 || d.status == 0)
            atomic_fetch_add(&R.errors5xx, 1);
        if (d.status != 200 || vt_num(d.json, "job.id") != (double)now.job_id) {
            note("complete with claim_next", &d);
            vt_resp_free(&d);
            break;
        }
        atomic_fetch_add(&R.completes, 1);
        job = next_claim(d.json, &cl);
        vt_resp_free(&d);
        if (cycle % 3 == 0) { /* the identical call again: the same claims */
            vt_resp again = vt_dispose(&srv[(c->index + 1) % 2], &now, members);
            const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(again.json, "claims"), 0);
            int64_t replayed_job = first ? (int64_t)vt_num(first, "job_id") : 0;
            if (again.status == 200 && cJSON_IsTrue(cJSON_GetObjectItem(again.json, "replayed")) &&
                replayed_job == job)
                atomic_fetch_add(&R.replays, 1);
            else
                note("replay with claim_next", &again);
            vt_resp_free(&again);
        }
    }
    vt_http_thread_cleanup();
    return NULL;
}

/* Single dispositions with claim_next coalesce too: each request's claim is its own (claimed
 * for its worker, kept in its answer for replays), every item is handed out once, and the
 * dispositions' statements served several requests at once. */
static void test_coalesced_claim_next(void **state)
{
    (void)state;
    memset(&R, 0, sizeof(R));
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('" NEXT_FLOW "')");
    vt_seed_items(NEXT_FLOW, "next-", NEXT_ITEMS, 5, 3);
    R.first_id = vt_sql_long("SELECT min(id) FROM items WHERE flow_step_id = '" NEXT_FLOW "'");
    long ds = metric("verdict_coalesced_statements_total", "disposition");
    long dr = metric("verdict_coalesced_requests_total", "disposition");
    run_clients(next_client_main, NEXT_ITEMS);
    assert_true(atomic_load(&R.replays) > 0);
    /* each job claimed for the worker whose call claimed it, and finished by that worker */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = '" NEXT_FLOW "'"
                                 " AND status = 'completed' AND engine_data->>'by' = worker_id"),
                     NEXT_ITEMS);
    long ds2 = metric("verdict_coalesced_statements_total", "disposition") - ds;
    long dr2 = metric("verdict_coalesced_requests_total", "disposition") - dr;
    print_message("dispositions with claim_next: %ld requests in %ld statements\n", dr2, ds2);
    assert_true(dr2 >= NEXT_ITEMS && dr2 > ds2);
}

typedef struct one_claim {
    const char *flow, *worker, *keys; /* keys: more members of the claim, or "" */
    long status;
    char got_flow[64];
} one_claim;

/* One claim of one item of a->flow on the first replica; its answer's flow step. */
static void *one_claim_main(void *p)
{
    one_claim *a = p;
    char body[300];
    snprintf(body, sizeof(body), "{\"flow_step_id\": \"%s\", \"worker_id\": \"%s\"%s}", a->flow,
             a->worker, a->keys);
    vt_resp r = vt_http(&srv[0], "POST", "/v1/claims", VT_WORKER, body, NULL);
    a->status = r.status;
    const char *fs =
        vt_str(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "claims"), 0), "item.flow_step_id");
    snprintf(a->got_flow, sizeof(a->got_flow), "%s", fs ? fs : "");
    vt_resp_free(&r);
    vt_http_thread_cleanup();
    return NULL;
}

static long metric_one(const char *name)
{
    const vt_server *first[] = {&srv[0]};
    char sample[160];
    snprintf(sample, sizeof(sample), "%s{kind=\"claim\"}", name);
    return vt_metric_sum(first, 1, sample);
}

/* on: a trigger holds every claim of worker "holder" in its statement for 1.5 s (the job's
 * insert sleeps); off: the trigger is gone */
static void hold_claims(bool on)
{
    free(vt_sql(on ? "CREATE FUNCTION cx_hold() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                     " IF NEW.worker_id = 'holder' THEN PERFORM pg_sleep(1.5); END IF;"
                     " RETURN NEW; END $$; CREATE TRIGGER cx_hold BEFORE INSERT ON jobs"
                     " FOR EACH ROW EXECUTE FUNCTION cx_hold()"
                   : "DROP TRIGGER cx_hold ON jobs; DROP FUNCTION cx_hold()"));
}

/* holder's claim held in its statement (hold_claims), then n (at most 16) requests started
 * while it is in flight: fn on each of the n elements of `size` bytes at each; returns when all
 * are answered and the hold is gone. */
static void held_while(one_claim *holder, void *(*fn)(void *), void *each, size_t size, int n)
{
    pthread_t hold, t[16];
    assert_true(n <= 16);
    hold_claims(true);
    assert_int_equal(pthread_create(&hold, NULL, one_claim_main, holder), 0);
    vt_sleep_ms(400); /* the holder's statement is in flight */
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&t[i], NULL, fn, (char *)each + (size_t)i * size), 0);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    pthread_join(hold, NULL);
    hold_claims(false);
}

/* held_while with n claims each[] of one item (one_claim_main) */
static void held_round_of(one_claim *holder, one_claim *each, int n)
{
    held_while(holder, one_claim_main, each, sizeof(*each), n);
}

static void held_round(one_claim *holder, one_claim each[4])
{
    held_round_of(holder, each, 4);
}

/* A held round (held_round_of) of one kind of claim: the holder claims of holder_flow, then
 * n claims of flow by worker; all name the members keys. The holder gets its own item. */
static void same_claims_round(const char *holder_flow, const char *flow, const char *worker,
                              const char *keys, one_claim *each, int n)
{
    one_claim holder = {holder_flow, "holder", keys, 0, ""};
    for (int i = 0; i < n; i++)
        each[i] = (one_claim){flow, worker, keys, 0, ""};
    held_round_of(&holder, each, n);
    assert_int_equal(holder.status, 200);
    assert_string_equal(holder.got_flow, holder_flow);
}

/* text with every "%d" in it replaced by the digit i (0..9) */
static void each_index(char *out, size_t size, const char *text, int i)
{
    size_t n = 0;
    for (const char *c = text; *c && n + 1 < size; c++) {
        if (c[0] == '%' && c[1] == 'd') {
            out[n++] = (char)('0' + i);
            c++;
        } else {
            out[n++] = *c;
        }
    }
    out[n] = '\0';
}

/* Single claims of different flow steps (with limit keys: keys, members of each claim, "%d" the
 * claim's index, or "") that arrive while a claim statement is in flight wait for it and share
 * the next statement: a claim held in its statement (a trigger sleeps for worker "holder"),
 * then claims of four other flow steps: two statements for five requests, each request an item
 * of its own flow step. Claims were grouped by flow step before, so each went alone at once
 * (five statements). */
static void flow_steps_share(const char *p, const char *keys)
{
    char fs[5][16], own[5][200];
    one_claim holder, each[4];
    for (int i = 0; i < 5; i++) {
        each_index(own[i], sizeof(own[i]), keys, i);
        snprintf(fs[i], sizeof(fs[i]), "%s_%d", p, i);
        vt_seed_flow(fs[i], 2 + i);
    }
    long st = metric_one("verdict_coalesced_statements_total");
    long rq = metric_one("verdict_coalesced_requests_total");
    holder = (one_claim){fs[4], "holder", own[4], 0, ""};
    for (int i = 0; i < 4; i++)
        each[i] = (one_claim){fs[i], "cx", own[i], 0, ""};
    held_round(&holder, each);
    assert_int_equal(holder.status, 200);
    assert_string_equal(holder.got_flow, fs[4]);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(each[i].status, 200);
        assert_string_equal(each[i].got_flow, fs[i]);
    }
    long st2 = metric_one("verdict_coalesced_statements_total") - st;
    long rq2 = metric_one("verdict_coalesced_requests_total") - rq;
    print_message("five claims of five flow steps%s: %ld requests in %ld statements\n", keys, rq2,
                  st2);
    assert_int_equal(rq2, 5);
    assert_int_equal(st2, 2);
}

static void test_flow_steps_share_a_statement(void **state)
{
    (void)state;
    flow_steps_share("cx", "");
}

/* The same with limit keys and a token estimate: the five jobs hold the key's slots and reserve
 * their tokens on it, as five claims alone would. */
static void test_limited_flow_steps_share_a_statement(void **state)
{
    (void)state;
    vt_put_limit(&srv[0], "cx-key", "{\"concurrency\": 8, \"tokens_per_minute\": 100000}");
    flow_steps_share("cl", ", \"limit_keys\": [\"cx-key\"], \"estimated_tokens\": 100");
    assert_int_equal((long)vt_limit_num(&srv[0], "cx-key", "in_flight"), 5);
    /* each job reserved its estimate on the key (the key's own total is per minute, and the
     * holder's statement may fall in the minute before) */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id LIKE 'cl\\_%%'"
                                 " AND limit_keys = '{cx-key}' AND estimated_tokens = 100"
                                 " AND cardinality(limit_cells) >= 1"),
                     5);
}

/* Limited claims of different key sets and estimates share a statement too, and each job holds
 * its own request's keys and estimate. Before, each key set and estimate was a group of its
 * own. */
static void test_key_sets_share_a_statement(void **state)
{
    (void)state;
    for (int i = 0; i < 5; i++) {
        char key[16];
        snprintf(key, sizeof(key), "ks-%d", i);
        vt_put_limit(&srv[0], key, "{\"concurrency\": 8, \"tokens_per_minute\": 100000}");
    }
    flow_steps_share("ck", ", \"limit_keys\": [\"ks-%d\"], \"estimated_tokens\": 1%d");
    for (int i = 0; i < 5; i++) {
        char key[16];
        snprintf(key, sizeof(key), "ks-%d", i);
        assert_int_equal((long)vt_limit_num(&srv[0], key, "in_flight"), 1);
        assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'ck_%d'"
                                     " AND limit_keys = '{ks-%d}' AND estimated_tokens = 1%d"
                                     " AND cardinality(limit_cells) >= 1",
                                     i, i, i),
                         1);
    }
}

/* Limited claims of one flow step with different key sets in one statement: each pick skips
 * the items an earlier pick of the statement took (a transaction does not skip its own row
 * locks), so four claims get four different items. Before, two picks found the same items and
 * the statement failed on a duplicate job (500 for every request). */
static void test_key_sets_of_one_flow_step(void **state)
{
    one_claim holder, each[4];
    (void)state;
    vt_put_limit(&srv[0], "ko-a", "{\"concurrency\": 8}");
    vt_put_limit(&srv[0], "ko-b", "{\"concurrency\": 8}");
    vt_seed_flow("ko_h", 1);
    vt_seed_flow("ko_0", 8);
    long st = metric_one("verdict_coalesced_statements_total");
    holder = (one_claim){"ko_h", "holder", ", \"limit_keys\": [\"ko-a\"]", 0, ""};
    for (int i = 0; i < 4; i++)
        each[i] = (one_claim){
            "ko_0", "ko", i % 2 ? ", \"limit_keys\": [\"ko-b\"]" : ", \"limit_keys\": [\"ko-a\"]",
            0, ""};
    held_round(&holder, each);
    assert_int_equal(holder.status, 200);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(each[i].status, 200);
        assert_string_equal(each[i].got_flow, "ko_0");
    }
    assert_int_equal(metric_one("verdict_coalesced_statements_total") - st, 2);
    /* four jobs on four items, each holding its own request's key */
    assert_int_equal(
        vt_sql_long("SELECT count(DISTINCT item_id) FROM jobs WHERE flow_step_id = 'ko_0'"
                    " AND status = 'processing'"),
        4);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'ko_0'"
                                 " AND limit_keys = '{ko-b}'"),
                     2);
}

/* Limited claims of one key set whose run no lane has room for: the one-statement claim
 * (claim_many_take) splits the run over lanes (verdict_limit_take_many). Concurrency 2 is two
 * lanes of one slot; the holder's claim holds one lane in its statement, the four claims that
 * wait for it find no lane with room for four, and one of them gets the other lane's slot. */
static void test_one_key_set_run_split(void **state)
{
    one_claim each[4];
    int got = 0;
    (void)state;
    vt_put_limit(&srv[0], "rs-k", "{\"concurrency\": 2}");
    vt_seed_flow("rs_h", 1);
    vt_seed_flow("rs_0", 8);
    same_claims_round("rs_h", "rs_0", "rs", ", \"limit_keys\": [\"rs-k\"]", each, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(each[i].status, 200);
        got += strcmp(each[i].got_flow, "rs_0") == 0;
    }
    assert_int_equal(got, 1);
    assert_int_equal((long)vt_limit_num(&srv[0], "rs-k", "in_flight"), 2);
}

/* Limited claims go in runs of at most VD_LIMITED_RUN (8): a claim held in its statement, then
 * twelve limited claims of one key set that wait for it; the twelve are served by two
 * statements (8 and 4), each its own transaction, and every one of them gets an item. A run
 * of twelve took one statement before, and with no lane of 64 / 8 slots room for twelve it
 * was split over lanes by verdict_limit_split, which locks and counts every lane. */
static void test_limited_runs_capped(void **state)
{
    enum { N = 12 };
    static const char keys[] = ", \"limit_keys\": [\"lc-k\"], \"estimated_tokens\": 10";
    one_claim each[N];
    (void)state;
    vt_put_limit(&srv[0], "lc-k", "{\"concurrency\": 64, \"tokens_per_minute\": 1000000}");
    vt_seed_flow("lc_h", 1);
    vt_seed_flow("lc_0", N + 2);
    long st = metric_one("verdict_coalesced_statements_total");
    long rq = metric_one("verdict_coalesced_requests_total");
    same_claims_round("lc_h", "lc_0", "lc", keys, each, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(each[i].status, 200);
        assert_string_equal(each[i].got_flow, "lc_0");
    }
    assert_int_equal(metric_one("verdict_coalesced_requests_total") - rq, N + 1);
    assert_int_equal(metric_one("verdict_coalesced_statements_total") - st, 3);
    /* no transaction claimed more than eight: the jobs of one run share their xmin */
    assert_int_equal(vt_sql_long("SELECT max(n) FROM (SELECT count(*) AS n FROM jobs"
                                 " WHERE flow_step_id = 'lc_0' GROUP BY xmin::text) x"),
                     8);
    assert_int_equal((long)vt_limit_num(&srv[0], "lc-k", "in_flight"), N + 1);
}

/* Limited claims of one key set in a keyed flow step (its items carry keys of their own): the
 * one-statement claim leaves them, and the pick claims each within its item's keys and the
 * claim's. */
static void test_one_key_set_keyed_flow_step(void **state)
{
    one_claim each[4];
    (void)state;
    vt_put_limit(&srv[0], "kf-k", "{\"concurrency\": 8}");
    vt_put_limit(&srv[0], "kf-site", "{\"concurrency\": 8}");
    vt_seed_flow("kf_h", 1);
    vt_seed_flow("kf_0", 6);
    free(vt_sql("UPDATE items SET limit_keys = '{kf-site}' WHERE flow_step_id = 'kf_0';"
                " UPDATE flow_steps SET keyed = true WHERE flow_step_id = 'kf_0'"));
    same_claims_round("kf_h", "kf_0", "kf", ", \"limit_keys\": [\"kf-k\"]", each, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(each[i].status, 200);
        assert_string_equal(each[i].got_flow, "kf_0");
    }
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'kf_0'"
                                 " AND limit_keys = '{kf-k,kf-site}'"),
                     4);
    assert_int_equal((long)vt_limit_num(&srv[0], "kf-site", "in_flight"), 4);
    assert_int_equal((long)vt_limit_num(&srv[0], "kf-k", "in_flight"), 5);
}

/* One single-item claim with an Idempotency-Key, and its answer. */
typedef struct keyed_claim {
    const char *flow, *worker, *key, *more; /* more: more members of the claim, or "" */
    int replica;                            /* the verdictd it goes to: 0 or 1 */
    long status;
    bool replayed;
    char body[2048]; /* the answer */
    char error[64];  /* its error code, or "" */
    char content_type[128];
} keyed_claim;

static keyed_claim keyed(const char *flow, const char *worker, const char *key, const char *more)
{
    keyed_claim a;
    memset(&a, 0, sizeof(a));
    a.flow = flow;
    a.worker = worker;
    a.key = key;
    a.more = more;
    return a;
}

static void *keyed_claim_main(void *p)
{
    keyed_claim *a = p;
    char body[300], header[160];
    snprintf(body, sizeof(body), "{\"flow_step_id\": \"%s\", \"worker_id\": \"%s\"%s}", a->flow,
             a->worker, a->more);
    snprintf(header, sizeof(header), "Idempotency-Key: %s", a->key);
    const char *headers[] = {header, NULL};
    vt_resp r = vt_http(&srv[a->replica], "POST", "/v1/claims", VT_WORKER, body, headers);
    const char *error = vt_str(r.json, "error");
    a->status = r.status;
    a->replayed = r.replayed;
    snprintf(a->body, sizeof(a->body), "%s", r.body ? r.body : "");
    snprintf(a->error, sizeof(a->error), "%s", error ? error : "");
    snprintf(a->content_type, sizeof(a->content_type), "%s", r.content_type);
    vt_resp_free(&r);
    vt_http_thread_cleanup();
    return NULL;
}

/* A plain claim of worker "holder" held in its statement (hold_claims), then the n keyed
 * claims each[] started while it is in flight: they share the next statement. Returns the
 * statements and requests the coalescer counted meanwhile. */
static void keyed_round(const char *holder_flow, keyed_claim *each, int n, long *statements,
                        long *requests)
{
    one_claim holder = {holder_flow, "holder", "", 0, ""};
    long st = metric_one("verdict_coalesced_statements_total");
    long rq = metric_one("verdict_coalesced_requests_total");
    held_while(&holder, keyed_claim_main, each, sizeof(*each), n);
    assert_int_equal(holder.status, 200);
    *statements = metric_one("verdict_coalesced_statements_total") - st;
    *requests = metric_one("verdict_coalesced_requests_total") - rq;
}

static long jobs_of(const char *flow)
{
    return vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = '%s'", flow);
}

/* Its replay: the same body and key answer the same text, marked replayed, with nothing
 * claimed; the same key with another body is refused. */
static void assert_replays(const keyed_claim *first)
{
    keyed_claim again = *first, other = *first;
    long jobs = jobs_of(first->flow);
    keyed_claim_main(&again);
    assert_int_equal(again.status, 200);
    assert_true(again.replayed);
    assert_string_equal(again.body, first->body);
    assert_string_equal(again.content_type, first->content_type);
    other.worker = "someone-else";
    keyed_claim_main(&other);
    assert_int_equal(other.status, 422);
    assert_string_equal(other.error, "idempotency_key_reused");
    assert_int_equal(jobs_of(first->flow), jobs);
}

/* Single claims with an Idempotency-Key share a statement like the others: five requests in
 * two statements, four jobs, each key stored with its request's answer; each replays that
 * answer and refuses another body, as a key first answered alone (a claim that may wait, on
 * the path of its own) does. Before, a keyed claim ran alone: five requests, one coalesced. */
static void test_keyed_claims_share_a_statement(void **state)
{
    keyed_claim each[4], alone = keyed("ik", "ikw", "ik-alone", ", \"wait_seconds\": 1");
    char key[4][16];
    long st = 0, rq = 0;
    (void)state;
    vt_seed_flow("ik_h", 1);
    vt_seed_flow("ik", 8);
    for (int i = 0; i < 4; i++) {
        snprintf(key[i], sizeof(key[i]), "ik-key-%d", i);
        each[i] = keyed("ik", "ikw", key[i], "");
    }
    keyed_round("ik_h", each, 4, &st, &rq);
    print_message("four keyed claims: %ld requests in %ld statements\n", rq, st);
    assert_int_equal(rq, 5);
    assert_int_equal(st, 2);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(each[i].status, 200);
        assert_false(each[i].replayed);
        assert_non_null(strstr(each[i].body, "\"claim_token\""));
        /* the key keeps exactly the answer its request got */
        assert_int_equal(
            vt_sql_long("SELECT count(*) FROM idempotency_keys WHERE route = 'claims'"
                        " AND idem_key = '%s' AND status = 200 AND response = $v$%s$v$",
                        key[i], each[i].body),
            1);
    }
    assert_int_equal(vt_sql_long("SELECT count(DISTINCT item_id) FROM jobs"
                                 " WHERE flow_step_id = 'ik' AND status = 'processing'"),
                     4);
    for (int i = 0; i < 4; i++)
        assert_replays(&each[i]);
    keyed_claim_main(&alone);
    assert_int_equal(alone.status, 200);
    assert_false(alone.replayed);
    assert_replays(&alone);
}

/* One key three times in one statement, with two bodies: one request claims, the one with its
 * body answers its answer as a replay, the other body is refused (two concurrent requests with
 * one key answer one after the other so); a key stored before answers its stored answer or
 * refuses another body, and a new key beside them claims: a refusal fails no other request.
 * Before, keyed claims ran alone (one request coalesced). */
static void test_one_key_in_a_statement(void **state)
{
    keyed_claim pre = keyed("sk", "skw", "sk-pre", ""), each[6];
    long st = 0, rq = 0;
    int own = -1;
    (void)state;
    vt_seed_flow("sk_h", 1);
    vt_seed_flow("sk", 8);
    keyed_claim_main(&pre);
    assert_int_equal(pre.status, 200);
    each[0] = keyed("sk", "skw", "sk-same", "");
    each[1] = keyed("sk", "skw", "sk-same", "");
    each[2] = keyed("sk", "sko", "sk-same", "");
    each[3] = keyed("sk", "skw", "sk-pre", "");
    each[4] = keyed("sk", "sko", "sk-pre", "");
    each[5] = keyed("sk", "skw", "sk-new", "");
    keyed_round("sk_h", each, 6, &st, &rq);
    assert_int_equal(rq, 7);
    assert_int_equal(st, 2);
    for (int i = 0; i < 3; i++) /* the one that claimed sk-same */
        if (each[i].status == 200 && !each[i].replayed) {
            assert_int_equal(own, -1);
            own = i;
        }
    assert_true(own >= 0);
    for (int i = 0; i < 3; i++) {
        if (i == own)
            continue;
        if (strcmp(each[i].worker, each[own].worker) == 0) {
            assert_int_equal(each[i].status, 200);
            assert_true(each[i].replayed);
            assert_string_equal(each[i].body, each[own].body);
        } else {
            assert_int_equal(each[i].status, 422);
            assert_string_equal(each[i].error, "idempotency_key_reused");
        }
    }
    assert_int_equal(each[3].status, 200);
    assert_true(each[3].replayed);
    assert_string_equal(each[3].body, pre.body);
    assert_int_equal(each[4].status, 422);
    assert_string_equal(each[4].error, "idempotency_key_reused");
    assert_int_equal(each[5].status, 200);
    assert_false(each[5].replayed);
    assert_non_null(strstr(each[5].body, "\"claim_token\""));
    assert_int_equal(jobs_of("sk"), 3); /* sk-pre, sk-same, sk-new */
}

/* A key stored by a concurrent request after the statement began (a claim on the other
 * replica, its statement held while it claims): the statement does not claim for it a second
 * time; it runs again and answers the stored answer. One item claimed for the key. */
static void test_one_key_on_two_replicas(void **state)
{
    keyed_claim a = keyed("rk", "holder", "rk-1", ""), b = a;
    pthread_t ta, tb;
    long rq = metric_one("verdict_coalesced_requests_total");
    (void)state;
    vt_seed_flow("rk", 4);
    b.replica = 1;
    hold_claims(true);
    assert_int_equal(pthread_create(&tb, NULL, keyed_claim_main, &b), 0);
    vt_sleep_ms(400); /* b's statement holds the key's claim */
    assert_int_equal(pthread_create(&ta, NULL, keyed_claim_main, &a), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    hold_claims(false);
    assert_int_equal(metric_one("verdict_coalesced_requests_total") - rq, 1);
    assert_int_equal(a.status, 200);
    assert_int_equal(b.status, 200);
    assert_true(a.replayed != b.replayed);
    assert_string_equal(a.body, b.body);
    assert_int_equal(jobs_of("rk"), 1);
}

/* A key and its claim commit together: a statement that fails after the claim (storing the
 * key) leaves neither the job nor the key; one that fails at the claim (the job's insert)
 * leaves no key. Then the same key claims afresh. */
static void test_key_and_claim_commit_together(void **state)
{
    keyed_claim a = keyed("ak", "akw", "ak-boom", ""), b = keyed("ak", "boom", "ak-job", "");
    long rq = metric_one("verdict_coalesced_requests_total");
    (void)state;
    vt_seed_flow("ak", 4);
    free(vt_sql("CREATE FUNCTION ak_fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                " IF TG_TABLE_NAME = 'jobs' AND NEW.worker_id = 'boom'"
                "  OR TG_TABLE_NAME = 'idempotency_keys' AND NEW.idem_key = 'ak-boom' THEN"
                " RAISE EXCEPTION 'ak_fail'; END IF; RETURN NEW; END $$;"
                " CREATE TRIGGER ak_fail BEFORE INSERT ON jobs FOR EACH ROW"
                " EXECUTE FUNCTION ak_fail(); CREATE TRIGGER ak_fail BEFORE INSERT"
                " ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION ak_fail()"));
    keyed_claim_main(&a);
    keyed_claim_main(&b);
    assert_true(a.status >= 500);
    assert_true(b.status >= 500);
    assert_int_equal(metric_one("verdict_coalesced_requests_total") - rq, 2);
    assert_int_equal(jobs_of("ak"), 0);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM idempotency_keys"
                                 " WHERE idem_key IN ('ak-boom', 'ak-job')"),
                     0);
    free(vt_sql("DROP TRIGGER ak_fail ON jobs; DROP TRIGGER ak_fail ON idempotency_keys;"
                " DROP FUNCTION ak_fail()"));
    keyed_claim_main(&a);
    keyed_claim_main(&b);
    assert_int_equal(a.status, 200);
    assert_false(a.replayed);
    assert_int_equal(b.status, 200);
    assert_false(b.replayed);
    assert_int_equal(jobs_of("ak"), 2);
}

/* A keyed claim in a keyed flow step (its items name limit keys): claim_many answers nothing
 * for it and it claims alone with its key on the runner's connection, with limits, as before
 * (not in the claim_many_limited of the unkeyed ones); a repeat replays it. */
static void test_key_in_a_keyed_flow_step(void **state)
{
    keyed_claim a = keyed("kk", "kkw", "kk-1", "");
    long rq = metric_one("verdict_coalesced_requests_total");
    (void)state;
    vt_seed_flow("kk", 4);
    vt_put_limit(&srv[0], "kk-model", "{\"concurrency\": 6}");
    /* as a registration with limit keys leaves them (items_insert) */
    free(vt_sql("UPDATE items SET limit_keys = '{kk-model}' WHERE flow_step_id = 'kk';"
                " UPDATE flow_steps SET keyed = true WHERE flow_step_id = 'kk'"));
    assert_int_equal(vt_sql_long("SELECT count(*) FROM flow_steps WHERE flow_step_id = 'kk'"
                                 " AND keyed"),
                     1);
    keyed_claim_main(&a);
    assert_int_equal(a.status, 200);
    assert_false(a.replayed);
    assert_non_null(strstr(a.body, "\"claim_token\""));
    assert_int_equal(metric_one("verdict_coalesced_requests_total") - rq, 1);
    assert_int_equal((long)vt_limit_num(&srv[0], "kk-model", "in_flight"), 1);
    assert_replays(&a);
    assert_int_equal(jobs_of("kk"), 1);
}

VT_FIXTURE(.srv = {&srv[0], &srv[1]}, .env = VT_ENV("VERDICT_LOG_LEVEL=warn"))

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coalesced_cycles),
        cmocka_unit_test(test_coalesced_claim_next),
        cmocka_unit_test(test_flow_steps_share_a_statement),
        cmocka_unit_test(test_limited_flow_steps_share_a_statement),
        cmocka_unit_test(test_key_sets_share_a_statement),
        cmocka_unit_test(test_key_sets_of_one_flow_step),
        cmocka_unit_test(test_one_key_set_run_split),
        cmocka_unit_test(test_limited_runs_capped),
        cmocka_unit_test(test_one_key_set_keyed_flow_step),
        cmocka_unit_test(test_keyed_claims_share_a_statement),
        cmocka_unit_test(test_one_key_in_a_statement),
        cmocka_unit_test(test_one_key_on_two_replicas),
        cmocka_unit_test(test_key_and_claim_commit_together),
        cmocka_unit_test(test_key_in_a_keyed_flow_step),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
