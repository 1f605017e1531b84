/* test_async_db.c - batch claims on the non-blocking executor (store/async.h) under many real
 * concurrent clients on two verdictd replicas sharing the database: every item is handed out
 * once and finished by its claimer through batch dispositions; the executor's answers have the
 * same shape as the worker threads' (VERDICT_DB_ASYNC_CONNECTIONS=0), in a plain and in a
 * keyed flow step and with limit keys; a statement that fails (a trigger raising for one flow
 * step) is answered as the sync path answers it; a connection lost after the COMMIT answers 503
 * and runs nothing twice; a backend terminated before the COMMIT is handed back and answered
 * once; and a stop with claims in flight answers every one of them. Batch dispositions take the
 * executor too (its continuation, decision 0084): counted in the batch cycle, answered byte for
 * byte as the worker threads answer them (replays, refusals, one job and many), a finish that
 * fails answered as the sync path answers it, a backend terminated while the lock waits or
 * while the finish runs handed back and applied once, and a connection lost after its COMMIT
 * answered 503 and replayed. Coalesced single dispositions take it as one group (decision
 * 0097): counted there, answered byte for byte as the worker threads answer them, a failing
 * finish or a terminated backend handed back and each request answered its own way, once, and a
 * stop with a group in flight answering every request. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/buf.h"
#include "vt.h"
#include "vt_api.h"
#include "vt_pg.h"

#define CLIENTS 48
#define ITEMS 3000
#define BATCH 10
#define FLOW "ab"

static vt_server srv[2];

VT_FIXTURE(.srv = {&srv[0], &srv[1]}, .env = VT_ENV("VERDICT_LOG_LEVEL=warn"))

typedef struct run {
    _Atomic int claimed[ITEMS];
    _Atomic long errors, completes;
    int64_t first_id;
    char first_error[400];
    _Atomic int noted;
} run;

static run R;

static void note(const char *what, const vt_resp *r)
{
    atomic_fetch_add(&R.errors, 1);
    if (atomic_fetch_add(&R.noted, 1) == 0)
        snprintf(R.first_error, sizeof(R.first_error), "%s: %ld %.300s", what, r->status,
                 r->body ? r->body : "");
}

/* The claims of an answer into out (at most BATCH); how many. */
static int claims_of(const vt_resp *r, vt_claim *out)
{
    const cJSON *claims = cJSON_GetObjectItem(r->json, "claims");
    int n = cJSON_GetArraySize(claims);
    for (int i = 0; i < n && i < BATCH; i++) {
        const cJSON *j = cJSON_GetArrayItem(claims, i);
        out[i] = (vt_claim){(int64_t)vt_num(j, "job_id"), (int64_t)vt_num(j, "item.id"), 1, ""};
        snprintf(out[i].token, sizeof(out[i].token), "%s", vt_str(j, "claim_token"));
    }
    return n;
}

/* One POST /v1/dispositions completing cl[0..n) as worker `who`. */
static void dispose_all(const vt_server *s, const vt_claim *cl, int n, int who)
{
    char body[BATCH * 200 + 64];
    size_t len = (size_t)snprintf(body, sizeof(body), "{\"dispositions\": [");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(body + len, sizeof(body) - len,
                                "%s{\"job_id\": %lld, \"claim_token\": \"%s\", \"disposition\": "
                                "\"complete\", \"engine_data\": {\"by\": \"w%d\"}}",
                                i ? "," : "", (long long)cl[i].job_id, cl[i].token, who);
    snprintf(body + len, sizeof(body) - len, "]}");
    vt_resp d = vt_http(s, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
    const cJSON *results = cJSON_GetObjectItem(d.json, "results");
    if (d.status != 200 || cJSON_GetArraySize(results) != n)
        note("dispositions", &d);
    for (int i = 0; d.status == 200 && i < cJSON_GetArraySize(results); i++) {
        const cJSON *e = cJSON_GetArrayItem(results, i);
        if (vt_num(e, "status") == 200)
            atomic_fetch_add(&R.completes, 1);
        else
            note("disposition entry", &d);
    }
    vt_resp_free(&d);
}

static void *client_main(void *p)
{
    int who = (int)(intptr_t)p;
    const vt_server *s = &srv[who % 2];
    char body[200];
    int idle = 0;
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"" FLOW "\", \"worker_id\": \"w%d\", \"limit\": %d, "
             "\"lease_seconds\": 600}",
             who, BATCH);
    while (idle < 2) {
        vt_claim cl[BATCH];
        vt_resp r = vt_http(s, "POST", "/v1/claims", VT_WORKER, body, NULL);
        int n = r.status == 200 ? claims_of(&r, cl) : 0;
        if (r.status != 200 || n > BATCH)
            note("claim", &r);
        vt_resp_free(&r);
        if (n == 0) {
            idle++;
            continue;
        }
        for (int i = 0; i < n; i++) {
            long idx = (long)(cl[i].item_id - R.first_id);
            if (idx >= 0 && idx < ITEMS)
                atomic_fetch_add(&R.claimed[idx], 1);
        }
        dispose_all(s, cl, n, who);
    }
    vt_http_thread_cleanup();
    return NULL;
}

/* verdict_db_async_claims_total{outcome} summed over the servers given. */
static long async_claims(const vt_server *const *s, int n, const char *outcome)
{
    char sample[160];
    snprintf(sample, sizeof(sample), "verdict_db_async_claims_total{outcome=\"%s\"}", outcome);
    return vt_metric_sum(s, n, sample);
}

/* verdict_db_async_dispositions_total{outcome} summed over the servers given. */
static long async_disps(const vt_server *const *s, int n, const char *outcome)
{
    char sample[160];
    snprintf(sample, sizeof(sample), "verdict_db_async_dispositions_total{outcome=\"%s\"}",
             outcome);
    return vt_metric_sum(s, n, sample);
}

static void test_batch_cycles(void **state)
{
    pthread_t t[CLIENTS];
    const vt_server *both[] = {&srv[0], &srv[1]};
    long before = async_claims(both, 2, "answered");
    long disps = async_disps(both, 2, "answered"), back = async_disps(both, 2, "handed_back");
    (void)state;
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('" FLOW "')");
    vt_seed_items(FLOW, "item-", ITEMS, 5, 3);
    R.first_id = vt_sql_long("SELECT min(id) FROM items WHERE flow_step_id = '" FLOW "'");
    for (int i = 0; i < CLIENTS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, client_main, (void *)(intptr_t)i), 0);
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(t[i], NULL);
    if (atomic_load(&R.errors))
        fail_msg("%ld unexpected answers; the first: %s", atomic_load(&R.errors), R.first_error);
    assert_int_equal(atomic_load(&R.completes), ITEMS);
    for (int i = 0; i < ITEMS; i++)
        if (atomic_load(&R.claimed[i]) != 1)
            fail_msg("item %d was handed out %d times", i, atomic_load(&R.claimed[i]));
    /* each job was finished by the worker that claimed it, each item has one job */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = '" FLOW "'"
                                 " AND status = 'completed' AND engine_data->>'by' = worker_id"),
                     ITEMS);
    assert_int_equal(vt_sql_long("SELECT count(DISTINCT item_id) FROM jobs"
                                 " WHERE flow_step_id = '" FLOW "'"),
                     ITEMS);
    /* and the claims went through the executor */
    print_message("executor: %ld claims answered\n", async_claims(both, 2, "answered") - before);
    assert_true(async_claims(both, 2, "answered") - before >= ITEMS / BATCH);
    /* and so did the batch dispositions, each of them */
    print_message("executor: %ld batch dispositions answered, %ld handed back\n",
                  async_disps(both, 2, "answered") - disps,
                  async_disps(both, 2, "handed_back") - back);
    assert_true(async_disps(both, 2, "answered") - disps >= ITEMS / BATCH);
    assert_int_equal(async_disps(both, 2, "handed_back"), back);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* s with every run of digits as one '#' (a message naming a job). */
static void hash_digits(cJSON *m)
{
    char *s = m->valuestring, *o = s;
    for (const char *p = s; *p; p++) {
        bool digit = *p >= '0' && *p <= '9';
        if (!digit)
            *o++ = *p;
        else if (o == s || o[-1] != '#')
            *o++ = '#';
    }
    *o = '\0';
}

/* j without what differs between two equal claims: ids, tokens, times, identifiers (their
 * values become their JSON type), the numbers in messages. */
static void strip(cJSON *j)
{
    static const char *const varying[] = {"id", "_at", "token", "identifier"};
    cJSON *m;
    cJSON_ArrayForEach(m, j)
    {
        bool vary = false;
        for (size_t k = 0; m->string && k < sizeof(varying) / sizeof(*varying); k++)
            vary = vary || ends_with(m->string, varying[k]);
        if (m->string && strcmp(m->string, "message") == 0 && cJSON_IsString(m))
            hash_digits(m);
        if (vary && !cJSON_IsObject(m) && !cJSON_IsArray(m)) {
            cJSON *marker = cJSON_CreateString(cJSON_IsNull(m)     ? "null"
                                               : cJSON_IsNumber(m) ? "number"
                                                                   : "string");
            cJSON_ReplaceItemInObjectCaseSensitive(j, m->string, marker);
            m = marker;
        } else {
            strip(m);
        }
    }
}

/* The stripped body of a claim of `limit` in flow with the extra members given. */
static char *claim_shape(const vt_server *s, const char *flow, int limit, const char *extra,
                         long *status)
{
    char body[400];
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"%s\", \"worker_id\": \"shape\", \"limit\": %d%s}", flow, limit,
             extra ? extra : "");
    vt_resp r = vt_http(s, "POST", "/v1/claims", VT_WORKER, body, NULL);
    char *out;
    *status = r.status;
    assert_non_null(r.json);
    strip(r.json);
    out = cJSON_PrintUnformatted(r.json);
    vt_resp_free(&r);
    return out;
}

/* The same claim on the executor (srv[0]) and on a worker thread (off): the same answer. */
static void same_answer(const vt_server *off, const char *flow, int limit, const char *extra,
                        long want)
{
    long sa = 0, sb = 0;
    char *a = claim_shape(&srv[0], flow, limit, extra, &sa);
    char *b = claim_shape(off, flow, limit, extra, &sb);
    if (sa != want || sb != want || strcmp(a, b) != 0)
        fail_msg("%s limit %d: executor %ld %s\nworker thread %ld %s", flow, limit, sa, a, sb, b);
    free(a);
    free(b);
}

static void test_same_answers(void **state)
{
    vt_server off;
    const vt_server *on[] = {&srv[0]};
    long before = async_claims(on, 1, "answered");
    (void)state;
    vt_server_start(&off, (const char *const[]){"VERDICT_DB_ASYNC_CONNECTIONS=0",
                                                "VERDICT_LOG_LEVEL=warn", NULL});
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('shape'), ('keyed')");
    vt_seed_items("shape", "s-", 40, 5, 3);
    vt_seed_items("keyed", "k-", 40, 5, 3);
    vt_resp l =
        vt_http(&srv[0], "PUT", "/v1/limits/model:x", VT_ADMIN, "{\"concurrency\": 6}", NULL);
    assert_int_equal(l.status, 200);
    vt_resp_free(&l);
    /* a keyed flow step: the plain claim claims nothing there, claim_limited follows */
    vt_sql("UPDATE items SET limit_keys = '{model:x}' WHERE flow_step_id = 'keyed'");
    same_answer(&off, "shape", 5, NULL, 200);
    same_answer(&off, "shape", 3, ", \"limit_keys\": [\"model:x\"], \"estimated_tokens\": 10", 200);
    same_answer(&off, "keyed", 3, NULL, 200);
    same_answer(&off, "keyed", 4, NULL, 200);   /* the limit of 6 leaves 3 to each */
    same_answer(&off, "nowhere", 5, NULL, 200); /* an unknown flow step */
    vt_server_stop(&off);
    assert_true(async_claims(on, 1, "answered") - before >= 5);
}

/* A statement that fails inside the executor's transaction (rolled back) goes to a worker
 * thread, which answers it as it always does; nothing of it is committed. */
static void test_statement_error(void **state)
{
    vt_server off;
    const vt_server *on[] = {&srv[0]};
    long back = async_claims(on, 1, "handed_back");
    long sa = 0, sb = 0;
    (void)state;
    vt_server_start(&off, (const char *const[]){"VERDICT_DB_ASYNC_CONNECTIONS=0",
                                                "VERDICT_LOG_LEVEL=error", NULL});
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('boom')");
    vt_seed_items("boom", "b-", 10, 5, 3);
    vt_sql("CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
           "IF NEW.flow_step_id = 'boom' THEN RAISE EXCEPTION 'boom'; END IF; RETURN NEW; END $$");
    vt_sql("CREATE TRIGGER boom BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION boom()");
    char *a = claim_shape(&srv[0], "boom", 3, NULL, &sa);
    char *b = claim_shape(&off, "boom", 3, NULL, &sb);
    vt_sql("DROP TRIGGER boom ON jobs");
    vt_sql("DROP FUNCTION boom()");
    if (sa != sb || sa < 500 || strcmp(a, b) != 0)
        fail_msg("executor %ld %s\nworker thread %ld %s", sa, a, sb, b);
    free(a);
    free(b);
    assert_true(async_claims(on, 1, "handed_back") > back);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'boom'"), 0);
    vt_server_stop(&off);
}

#define STOPPERS 16

typedef struct stop_claim {
    const vt_server *s;
    int index;
    long status;
    int claims;
} stop_claim;

static void *stop_client(void *p)
{
    stop_claim *c = p;
    char body[160];
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"slow\", \"worker_id\": \"st%d\", \"limit\": 2}", c->index);
    vt_resp r = vt_http(c->s, "POST", "/v1/claims", VT_WORKER, body, NULL);
    c->status = r.status;
    c->claims = cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "claims"));
    vt_resp_free(&r);
    vt_http_thread_cleanup();
    return NULL;
}

/* A stop while claims are in flight on the executor (each held 300 ms by a trigger): each is
 * answered with what it claimed, and what was answered is what was committed. */
static void test_stop_in_flight(void **state)
{
    vt_server s;
    pthread_t t[STOPPERS];
    stop_claim c[STOPPERS];
    long answered = 0;
    (void)state;
    vt_replica_start(&s);
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('slow')");
    vt_seed_items("slow", "sl-", 2 * STOPPERS, 5, 3);
    vt_sql("CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
           "IF NEW.flow_step_id = 'slow' THEN PERFORM pg_sleep(0.15); END IF; RETURN NEW; END $$");
    vt_sql("CREATE TRIGGER slow BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION slow()");
    for (int i = 0; i < STOPPERS; i++) {
        c[i] = (stop_claim){&s, i, 0, 0};
        assert_int_equal(pthread_create(&t[i], NULL, stop_client, &c[i]), 0);
    }
    vt_sleep_ms(150);
    vt_server_stop(&s); /* asserts a clean exit */
    for (int i = 0; i < STOPPERS; i++) {
        pthread_join(t[i], NULL);
        if (c[i].status != 200 && c[i].status != 503)
            fail_msg("claim %d answered %ld", i, c[i].status);
        answered += c[i].claims;
    }
    vt_sql("DROP TRIGGER slow ON jobs");
    vt_sql("DROP FUNCTION slow()");
    print_message("stop: %ld items claimed by %d claims in flight\n", answered, STOPPERS);
    assert_true(answered > 0);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'slow'"),
                     answered);
}

/* A claim of worker `who` in flow step lost, on s. */
static vt_resp claim_lost(const vt_server *s, const char *who)
{
    char body[160];
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"lost\", \"worker_id\": \"%s\", \"limit\": 2}", who);
    return vt_http(s, "POST", "/v1/claims", VT_WORKER, body, NULL);
}

/* The executor's connection lost after the claim's COMMIT reached the server (the dropping
 * proxy closes it before the answer): 503, as the sync path answers it, the claim is not
 * sent again, and the next claim is served on a new connection. */
static void test_lost_after_commit(void **state)
{
    vt_server s;
    const vt_server *one[] = {&s};
    int drops = 0;
    (void)state;
    assert_int_equal(vt_fixture_route(&vt_fx, VT_ROUTE_PROXY), 0);
    vt_replica_start(&s);
    assert_int_equal(vt_fixture_route(&vt_fx, VT_ROUTE_DIRECT), 0);
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('lost')");
    vt_seed_items("lost", "l-", 10, 5, 3);
    drops = vt_proxy_drops();
    vt_proxy_arm("lost-worker", 1, true);
    vt_resp r = claim_lost(&s, "lost-worker");
    assert_int_equal(vt_proxy_drops(), drops + 1);
    vt_assert_error(&r, 503, "database_unavailable");
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE worker_id = 'lost-worker'"), 2);
    r = claim_lost(&s, "next-worker");
    assert_int_equal(r.status, 200);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "claims")), 2);
    vt_resp_free(&r);
    assert_int_equal(async_claims(one, 1, "answered"), 2); /* both on the executor */
    vt_server_stop(&s);
}

typedef struct term_claim {
    long status;
    int claims;
} term_claim;

static void *term_client(void *p)
{
    term_claim *c = p;
    vt_resp r = vt_http(&srv[0], "POST", "/v1/claims", VT_WORKER,
                        "{\"flow_step_id\": \"term\", \"worker_id\": \"tw\", \"limit\": 3}", NULL);
    c->status = r.status;
    c->claims = cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "claims"));
    vt_resp_free(&r);
    vt_http_thread_cleanup();
    return NULL;
}

/* The executor's backend terminated while its claim statement runs (before the COMMIT): the
 * claim committed nothing, so it goes to a worker thread and is answered with what that
 * claimed, once. */
static void test_backend_terminated(void **state)
{
    const vt_server *on[] = {&srv[0]};
    long back = async_claims(on, 1, "handed_back");
    term_claim c = {0, 0};
    pthread_t t;
    long killed = 0;
    (void)state;
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('term')");
    vt_seed_items("term", "t-", 10, 5, 3);
    vt_sql("CREATE FUNCTION term() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
           "IF NEW.flow_step_id = 'term' THEN PERFORM pg_sleep(0.2); END IF; RETURN NEW; END $$");
    vt_sql("CREATE TRIGGER term BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION term()");
    assert_int_equal(pthread_create(&t, NULL, term_client, &c), 0);
    for (int i = 0; i < 40 && killed == 0; i++) {
        vt_sleep_ms(25);
        killed = vt_sql_long("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                             " WHERE wait_event = 'PgSleep' AND pid <> pg_backend_pid()");
    }
    pthread_join(t, NULL);
    vt_sql("DROP TRIGGER term ON jobs");
    vt_sql("DROP FUNCTION term()");
    assert_int_equal(killed, 1);
    assert_int_equal(c.status, 200);
    assert_int_equal(c.claims, 3);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'term'"), 3);
    assert_true(async_claims(on, 1, "handed_back") > back);
}

/* One POST /v1/dispositions on s: "<status> <stripped body>\n" appended to out. */
static void batch_shape(const vt_server *s, const char *body, vd_buf *out)
{
    vt_resp r = vt_http(s, "POST", "/v1/dispositions", VT_WORKER, body, NULL);
    char *text;
    assert_non_null(r.json);
    strip(r.json);
    text = cJSON_PrintUnformatted(r.json);
    vd_buf_printf(out, "%ld %s\n", r.status, text);
    free(text);
    vt_resp_free(&r);
}

/* The entry of job c with members (a disposition), for a batch body. */
static void entry(vd_buf *b, const vt_claim *c, const char *members)
{
    vd_buf_printf(b, "%s{\"job_id\": %lld, \"claim_token\": \"%s\", %s}",
                  b->data[b->len - 1] == '[' ? "" : ",", (long long)c->job_id, c->token, members);
}

/* A round of batch dispositions on s over six claims of flow step dshape: completes, a fail,
 * a defer and a review request with a wrong token and an unknown job among them, the same
 * batch again (replays and the same refusals), one job alone (twice), a different call on a
 * finished job, and a batch that finishes nothing; every answer stripped, in out. */
static void disposition_round(const vt_server *s, vd_buf *out)
{
    vt_claim c[6];
    vt_claim wrong, none = {999999999, 0, 1, "00000000-0000-0000-0000-000000000000"};
    vd_buf b = {0};
    assert_int_equal(vt_claim_n(s, "dshape", 6, 600, c), 6);
    wrong = c[4];
    snprintf(wrong.token, sizeof(wrong.token), "00000000-0000-0000-0000-000000000000");
    vd_buf_printf(&b, "{\"dispositions\": [");
    entry(&b, &c[0], "\"disposition\": \"complete\", \"engine_data\": {\"k\": 1}");
    entry(&b, &c[1],
          "\"disposition\": \"fail\", \"error\": \"e\", \"retryable\": true, "
          "\"retry_after_seconds\": 60");
    entry(&b, &c[2],
          "\"disposition\": \"defer_item\", \"reason_code\": \"quality_gate\", "
          "\"retry_after_seconds\": 120");
    entry(&b, &c[3], "\"disposition\": \"request_review\", \"question\": \"which?\"");
    entry(&b, &wrong, "\"disposition\": \"complete\"");
    entry(&b, &none, "\"disposition\": \"complete\"");
    vd_buf_printf(&b, "]}");
    batch_shape(s, b.data, out);
    batch_shape(s, b.data, out); /* replays */
    b.len = 0;
    vd_buf_printf(&b, "{\"dispositions\": [");
    entry(&b, &c[5], "\"disposition\": \"complete\"");
    vd_buf_printf(&b, "]}");
    batch_shape(s, b.data, out);
    batch_shape(s, b.data, out);
    b.len = 0;
    vd_buf_printf(&b, "{\"dispositions\": [");
    entry(&b, &c[0], "\"disposition\": \"fail\", \"error\": \"e\", \"retryable\": false");
    entry(&b, &wrong, "\"disposition\": \"complete\"");
    vd_buf_printf(&b, "]}");
    batch_shape(s, b.data, out); /* finishes nothing: the lock's COMMIT alone */
    vd_buf_cleanup(&b);
}

/* The same batch dispositions on the executor (srv[0]) and on a worker thread: the same
 * answers, and the executor answered them. */
static void test_same_disposition_answers(void **state)
{
    vt_server off;
    const vt_server *on[] = {&srv[0]};
    long before = async_disps(on, 1, "answered");
    vd_buf a = {0}, b = {0};
    (void)state;
    vt_server_start(&off, (const char *const[]){"VERDICT_DB_ASYNC_CONNECTIONS=0",
                                                "VERDICT_LOG_LEVEL=warn", NULL});
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('dshape')");
    vt_seed_items("dshape", "ds-", 12, 5, 3);
    disposition_round(&srv[0], &a);
    disposition_round(&off, &b);
    vt_server_stop(&off);
    if (strcmp(a.data, b.data) != 0)
        fail_msg("executor:\n%s\nworker thread:\n%s", a.data, b.data);
    assert_true(async_disps(on, 1, "answered") - before >= 5);
    vd_buf_cleanup(&a);
    vd_buf_cleanup(&b);
}

/* A batch of a job of flow step fboom and one of dfine on s, stripped, in out. */
static void boom_batch(const vt_server *s, vd_buf *out, int64_t *jobs)
{
    vt_claim c[2];
    vd_buf b = {0};
    assert_int_equal(vt_claim_n(s, "fboom", 1, 600, &c[0]), 1);
    assert_int_equal(vt_claim_n(s, "dfine", 1, 600, &c[1]), 1);
    vd_buf_printf(&b, "{\"dispositions\": [");
    entry(&b, &c[1], "\"disposition\": \"complete\"");
    entry(&b, &c[0], "\"disposition\": \"complete\"");
    vd_buf_printf(&b, "]}");
    batch_shape(s, b.data, out);
    jobs[0] = c[0].job_id;
    jobs[1] = c[1].job_id;
    vd_buf_cleanup(&b);
}

/* jobs_finish failing for one flow step (a trigger): the executor hands the batch back and
 * it is answered as the sync path answers it; nothing of it is committed. */
static void test_finish_error(void **state)
{
    vt_server off;
    const vt_server *on[] = {&srv[0]};
    long back = async_disps(on, 1, "handed_back");
    vd_buf a = {0}, b = {0};
    int64_t ja[2], jb[2];
    (void)state;
    vt_server_start(&off, (const char *const[]){"VERDICT_DB_ASYNC_CONNECTIONS=0",
                                                "VERDICT_LOG_LEVEL=error", NULL});
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('fboom'), ('dfine')");
    vt_seed_items("fboom", "fb-", 4, 5, 3);
    vt_seed_items("dfine", "df-", 4, 5, 3);
    vt_sql("CREATE FUNCTION fboom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
           "IF NEW.flow_step_id = 'fboom' AND NEW.status <> 'processing' THEN "
           "RAISE EXCEPTION 'fboom'; END IF; RETURN NEW; END $$");
    vt_sql("CREATE TRIGGER fboom BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION fboom()");
    boom_batch(&srv[0], &a, ja);
    boom_batch(&off, &b, jb);
    vt_sql("DROP TRIGGER fboom ON jobs");
    vt_sql("DROP FUNCTION fboom()");
    vt_server_stop(&off);
    if (strcmp(a.data, b.data) != 0 || strncmp(a.data, "500 ", 4) != 0)
        fail_msg("executor: %s\nworker thread: %s", a.data, b.data);
    assert_true(async_disps(on, 1, "handed_back") > back);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE id IN (%lld, %lld, %lld, %lld)"
                                 " AND status = 'processing'",
                                 (long long)ja[0], (long long)ja[1], (long long)jb[0],
                                 (long long)jb[1]),
                     4);
    vd_buf_cleanup(&a);
    vd_buf_cleanup(&b);
}

typedef struct term_batch {
    vt_claim c[3];
    long status;
    int ok;
} term_batch;

static void *term_batch_client(void *p)
{
    term_batch *t = p;
    vd_buf b = {0};
    vd_buf_printf(&b, "{\"dispositions\": [");
    for (int i = 0; i < 3; i++)
        entry(&b, &t->c[i], "\"disposition\": \"complete\"");
    vd_buf_printf(&b, "]}");
    vt_resp r = vt_http(&srv[0], "POST", "/v1/dispositions", VT_WORKER, b.data, NULL);
    const cJSON *results = cJSON_GetObjectItem(r.json, "results");
    t->status = r.status;
    for (int i = 0; i < cJSON_GetArraySize(results); i++)
        t->ok += vt_num(cJSON_GetArrayItem(results, i), "status") == 200 &&
                 cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(results, i), "replayed"));
    vt_resp_free(&r);
    vd_buf_cleanup(&b);
    vt_http_thread_cleanup();
    return NULL;
}

/* The executor's backend terminated while the batch's finish runs (before its COMMIT): rolled
 * back, handed back, applied once by the worker thread. */
static void test_finish_terminated(void **state)
{
    const vt_server *on[] = {&srv[0]};
    long back = async_disps(on, 1, "handed_back");
    term_batch t = {0};
    pthread_t th;
    long killed = 0;
    (void)state;
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('dterm')");
    vt_seed_items("dterm", "dt-", 3, 5, 3);
    assert_int_equal(vt_claim_n(&srv[0], "dterm", 3, 600, t.c), 3);
    vt_sql("CREATE FUNCTION dterm() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
           "IF NEW.flow_step_id = 'dterm' AND NEW.status <> 'processing' THEN "
           "PERFORM pg_sleep(0.2); END IF; RETURN NEW; END $$");
    vt_sql("CREATE TRIGGER dterm BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION dterm()");
    assert_int_equal(pthread_create(&th, NULL, term_batch_client, &t), 0);
    for (int i = 0; i < 40 && killed == 0; i++) {
        vt_sleep_ms(25);
        killed = vt_sql_long("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                             " WHERE wait_event = 'PgSleep' AND pid <> pg_backend_pid()");
    }
    pthread_join(th, NULL);
    vt_sql("DROP TRIGGER dterm ON jobs");
    vt_sql("DROP FUNCTION dterm()");
    assert_int_equal(killed, 1);
    assert_int_equal(t.status, 200);
    assert_int_equal(t.ok, 3);
    assert_true(async_disps(on, 1, "handed_back") > back);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs j JOIN items i ON i.id = j.item_id"
                                 " WHERE j.flow_step_id = 'dterm' AND j.status = 'completed'"
                                 " AND i.state = 'processed'"),
                     3);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit t JOIN jobs j ON j.id = "
                                 "t.job_id WHERE j.flow_step_id = 'dterm' AND t.cause = "
                                 "'complete'"),
                     3);
}

/* The executor's backend terminated while the batch's lock waits (phase 1, a row lock the
 * test holds): nothing of it committed, handed back, applied once by the worker thread. */
static void test_lock_terminated(void **state)
{
    const vt_server *on[] = {&srv[0]};
    long back = async_disps(on, 1, "handed_back");
    term_batch t = {0};
    pthread_t th;
    long killed = 0;
    char sql[160];
    PGconn *hold = PQconnectdb(vt_db_setup_url());
    (void)state;
    assert_int_equal(PQstatus(hold), CONNECTION_OK);
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('dlock')");
    vt_seed_items("dlock", "dk-", 3, 5, 3);
    assert_int_equal(vt_claim_n(&srv[0], "dlock", 3, 600, t.c), 3);
    snprintf(sql, sizeof(sql), "SELECT 1 FROM jobs WHERE id = %lld FOR UPDATE",
             (long long)t.c[1].job_id);
    PQclear(vt_pq_ok(hold, "BEGIN"));
    PQclear(vt_pq_ok(hold, sql));
    assert_int_equal(pthread_create(&th, NULL, term_batch_client, &t), 0);
    for (int i = 0; i < 40 && killed == 0; i++) {
        vt_sleep_ms(25);
        killed = vt_sql_long("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                             " WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()");
    }
    PQclear(vt_pq_ok(hold, "COMMIT"));
    PQfinish(hold);
    pthread_join(th, NULL);
    assert_int_equal(killed, 1);
    assert_int_equal(t.status, 200);
    assert_int_equal(t.ok, 3);
    assert_true(async_disps(on, 1, "handed_back") > back);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit t JOIN jobs j ON j.id = t.job_id"
                                 " WHERE j.flow_step_id = 'dlock' AND t.cause = 'complete'"),
                     3);
}

/* The executor's connection lost after the batch's COMMIT reached the server (the dropping
 * proxy): 503, nothing sent twice, and the same batch again replays what was committed. */
static void test_disposition_lost_after_commit(void **state)
{
    vt_server s;
    const vt_server *one[] = {&s};
    vt_claim c[2];
    vd_buf b = {0};
    int drops;
    (void)state;
    assert_int_equal(vt_fixture_route(&vt_fx, VT_ROUTE_PROXY), 0);
    vt_replica_start(&s);
    assert_int_equal(vt_fixture_route(&vt_fx, VT_ROUTE_DIRECT), 0);
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('dlost')");
    vt_seed_items("dlost", "dl-", 2, 5, 3);
    assert_int_equal(vt_claim_n(&s, "dlost", 2, 600, c), 2);
    vd_buf_printf(&b, "{\"dispositions\": [");
    for (int i = 0; i < 2; i++)
        entry(&b, &c[i], "\"disposition\": \"complete\", \"engine_data\": {\"m\": \"lost-batch\"}");
    vd_buf_printf(&b, "]}");
    drops = vt_proxy_drops();
    vt_proxy_arm("lost-batch", 1, true);
    vt_resp r = vt_http(&s, "POST", "/v1/dispositions", VT_WORKER, b.data, NULL);
    assert_int_equal(vt_proxy_drops(), drops + 1);
    vt_assert_error(&r, 503, "database_unavailable");
    vt_resp_free(&r);
    assert_int_equal(async_disps(one, 1, "answered"), 1); /* the 503 is the executor's */
    r = vt_http(&s, "POST", "/v1/dispositions", VT_WORKER, b.data, NULL);
    assert_int_equal(r.status, 200);
    for (int i = 0; i < 2; i++) {
        const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "results"), i);
        assert_int_equal((long)vt_num(e, "status"), 200);
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(e, "replayed")));
    }
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit t JOIN jobs j ON j.id = "
                                 "t.job_id WHERE j.flow_step_id = 'dlost' AND t.cause = "
                                 "'complete'"),
                     2);
    vd_buf_cleanup(&b);
    vt_server_stop(&s);
}

/* verdict_db_async_coalesced_requests_total{outcome} (coalesced single dispositions carried by
 * the executor) summed over the servers given. */
static long async_singles(const vt_server *const *s, int n, const char *outcome)
{
    char sample[160];
    snprintf(sample, sizeof(sample), "verdict_db_async_coalesced_requests_total{outcome=\"%s\"}",
             outcome);
    return vt_metric_sum(s, n, sample);
}

/* One single disposition (POST /v1/jobs/{id}/disposition) run on a thread of its own. */
typedef struct single_call {
    const vt_server *s;
    vt_claim c;
    const char *members;
    long status;
    bool replayed;
    char *shape; /* "<status> <stripped body>" (malloc'd) */
} single_call;

static void *single_client(void *p)
{
    single_call *k = p;
    vt_resp r = vt_dispose(k->s, &k->c, k->members);
    size_t len;
    k->status = r.status;
    k->replayed = cJSON_IsTrue(cJSON_GetObjectItem(r.json, "replayed"));
    if (r.json)
        strip(r.json);
    char *text = r.json ? cJSON_PrintUnformatted(r.json) : NULL;
    len = (text ? strlen(text) : 0) + 32;
    k->shape = malloc(len);
    snprintf(k->shape, len, "%ld %s", r.status, text ? text : "(no JSON)");
    free(text);
    vt_resp_free(&r);
    vt_http_thread_cleanup();
    return NULL;
}

/* Run k[0..n) at once, each on its own thread, and wait for all of them. */
static void run_singles(single_call *k, int n)
{
    pthread_t t[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&t[i], NULL, single_client, &k[i]), 0);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

static void singles_free(single_call *k, int n)
{
    for (int i = 0; i < n; i++) {
        free(k[i].shape);
        k[i].shape = NULL;
    }
}

#define SINGLES 48

/* Concurrent single dispositions (coalesced) are carried by the executor: every one counted
 * there as answered, none handed back, each answered 200 once and applied once. */
static void test_singles_on_executor(void **state)
{
    const vt_server *on[] = {&srv[0]};
    long before = async_singles(on, 1, "answered"), back = async_singles(on, 1, "handed_back");
    single_call k[SINGLES];
    vt_claim c[SINGLES];
    (void)state;
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('sx')");
    vt_seed_items("sx", "sx-", SINGLES, 5, 3);
    assert_int_equal(vt_claim_n(&srv[0], "sx", SINGLES, 600, c), SINGLES);
    for (int i = 0; i < SINGLES; i++)
        k[i] = (single_call){&srv[0], c[i], "\"disposition\": \"complete\"", 0, false, NULL};
    run_singles(k, SINGLES);
    for (int i = 0; i < SINGLES; i++) {
        if (k[i].status != 200 || k[i].replayed)
            fail_msg("single %d: %s", i, k[i].shape);
    }
    singles_free(k, SINGLES);
    print_message("singles: %ld answered by the executor, %ld handed back\n",
                  async_singles(on, 1, "answered") - before,
                  async_singles(on, 1, "handed_back") - back);
    assert_int_equal(async_singles(on, 1, "answered") - before, SINGLES);
    assert_int_equal(async_singles(on, 1, "handed_back"), back);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit t JOIN jobs j ON j.id = t.job_id"
                                 " WHERE j.flow_step_id = 'sx' AND t.cause = 'complete'"),
                     SINGLES);
}

#define SHAPES 9

/* The single dispositions of a round over six claims of flow step sshape: completes, a fail, a
 * defer, a review request, a wrong token, an unknown job, a replay, a different call on a
 * finished job. */
static void shape_calls(const vt_server *s, single_call *k)
{
    static const char *const members[SHAPES] = {
        "\"disposition\": \"complete\", \"engine_data\": {\"k\": 1}",
        "\"disposition\": \"fail\", \"error\": \"e\", \"retryable\": true, "
        "\"retry_after_seconds\": 60",
        "\"disposition\": \"defer_item\", \"reason_code\": \"quality_gate\", "
        "\"retry_after_seconds\": 120",
        "\"disposition\": \"request_review\", \"question\": \"which?\"",
        "\"disposition\": \"complete\"",
        "\"disposition\": \"complete\"",
        "\"disposition\": \"complete\", \"evidence\": \"seen\"",
        "\"disposition\": \"complete\", \"engine_data\": {\"k\": 1}",
        "\"disposition\": \"fail\", \"error\": \"e\", \"retryable\": false",
    };
    vt_claim c[6], none = {999999999, 0, 1, "00000000-0000-0000-0000-000000000000"};
    assert_int_equal(vt_claim_n(s, "sshape", 6, 600, c), 6);
    for (int i = 0; i < SHAPES; i++)
        k[i] = (single_call){s, c[i < 6 ? i : 0], members[i], 0, false, NULL};
    snprintf(k[4].c.token, sizeof(k[4].c.token), "00000000-0000-0000-0000-000000000000");
    k[5].c = none;
}

/* One round on s: the calls one after the other (each alone: one job, positional
 * statements), then a second round's first seven at once (coalesced groups); every answer's
 * shape appended to out, in call order. */
static void singles_round(const vt_server *s, vd_buf *out)
{
    single_call k[SHAPES];
    shape_calls(s, k);
    for (int i = 0; i < SHAPES; i++)
        run_singles(&k[i], 1);
    for (int i = 0; i < SHAPES; i++)
        vd_buf_printf(out, "%s\n", k[i].shape);
    singles_free(k, SHAPES);
    shape_calls(s, k);
    run_singles(k, 6); /* distinct jobs, at once */
    run_singles(&k[6], 3);
    for (int i = 0; i < SHAPES; i++)
        vd_buf_printf(out, "%s\n", k[i].shape);
    singles_free(k, SHAPES);
}

/* Single dispositions answered by the executor (srv[0]) and by the worker threads
 * (VERDICT_DB_ASYNC_CONNECTIONS=0): the same status and body, byte for byte (ids, times and
 * the numbers in messages masked). */
static void test_singles_same_answers(void **state)
{
    vt_server off;
    const vt_server *on[] = {&srv[0]}, *offs[] = {&off};
    long before = async_singles(on, 1, "answered");
    vd_buf a = {0}, b = {0};
    (void)state;
    vt_server_start(&off, (const char *const[]){"VERDICT_DB_ASYNC_CONNECTIONS=0",
                                                "VERDICT_LOG_LEVEL=warn", NULL});
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('sshape')");
    vt_seed_items("sshape", "ss-", 24, 5, 3);
    singles_round(&srv[0], &a);
    singles_round(&off, &b);
    if (strcmp(a.data, b.data) != 0)
        fail_msg("executor:\n%s\nworker thread:\n%s", a.data, b.data);
    assert_true(async_singles(on, 1, "answered") - before >= 10);
    assert_int_equal(async_singles(offs, 1, "answered"), 0);
    vt_server_stop(&off);
    vd_buf_cleanup(&a);
    vd_buf_cleanup(&b);
}

/* Three jobs of flow step sfboom and three of sfine on s, completed at once; each answer's
 * shape into out, in call order. */
static void boom_singles(const vt_server *s, vd_buf *out)
{
    single_call k[6];
    vt_claim c[6];
    assert_int_equal(vt_claim_n(s, "sfboom", 3, 600, c), 3);
    assert_int_equal(vt_claim_n(s, "sfine", 3, 600, c + 3), 3);
    for (int i = 0; i < 6; i++)
        k[i] = (single_call){
            s, c[i % 2 ? i / 2 : 3 + i / 2], "\"disposition\": \"complete\"", 0, false, NULL};
    run_singles(k, 6);
    for (int i = 0; i < 6; i++)
        vd_buf_printf(out, "%s\n", k[i].shape);
    singles_free(k, 6);
}

/* jobs_finish failing for one flow step (a trigger) in a coalesced group: the executor hands
 * the group back, and each request is answered its own way (the sync path's one by one
 * retry): the others complete, those of the failing flow step answer as a worker thread
 * answers them, and nothing of theirs is committed. */
static void test_singles_finish_error(void **state)
{
    vt_server off;
    const vt_server *on[] = {&srv[0]};
    long back = async_singles(on, 1, "handed_back");
    vd_buf a = {0}, b = {0};
    (void)state;
    vt_server_start(&off, (const char *const[]){"VERDICT_DB_ASYNC_CONNECTIONS=0",
                                                "VERDICT_LOG_LEVEL=error", NULL});
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('sfboom'), ('sfine')");
    vt_seed_items("sfboom", "sfb-", 6, 5, 3);
    vt_seed_items("sfine", "sff-", 6, 5, 3);
    vt_sql("CREATE FUNCTION sfboom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
           "IF NEW.flow_step_id = 'sfboom' AND NEW.status <> 'processing' THEN "
           "RAISE EXCEPTION 'sfboom'; END IF; RETURN NEW; END $$");
    vt_sql("CREATE TRIGGER sfboom BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION sfboom()");
    boom_singles(&srv[0], &a);
    boom_singles(&off, &b);
    vt_sql("DROP TRIGGER sfboom ON jobs");
    vt_sql("DROP FUNCTION sfboom()");
    vt_server_stop(&off);
    if (strcmp(a.data, b.data) != 0)
        fail_msg("executor:\n%s\nworker thread:\n%s", a.data, b.data);
    int i = 0;
    for (const char *line = a.data; *line; line = strchr(line, '\n') + 1, i++) {
        bool fine = i % 2 == 0; /* boom_singles: sfine, sfboom, sfine, ... */
        if ((strncmp(line, "200 ", 4) == 0) != fine)
            fail_msg("call %d (%s): %s", i, fine ? "sfine" : "sfboom", a.data);
    }
    assert_int_equal(i, 6);
    assert_true(async_singles(on, 1, "handed_back") > back);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'sfine'"
                                 " AND status = 'completed'"),
                     6);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'sfboom'"
                                 " AND status = 'processing'"),
                     6);
    vd_buf_cleanup(&a);
    vd_buf_cleanup(&b);
}

/* The executor's backend terminated while a coalesced group's finish runs (a trigger sleeps):
 * handed back, served on the sync path, every request answered once and applied once. */
static void test_singles_terminated(void **state)
{
    const vt_server *on[] = {&srv[0]};
    long back = async_singles(on, 1, "handed_back");
    single_call k[4];
    vt_claim c[4];
    long killed = 0;
    pthread_t t[4];
    (void)state;
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('sterm')");
    vt_seed_items("sterm", "st-", 4, 5, 3);
    assert_int_equal(vt_claim_n(&srv[0], "sterm", 4, 600, c), 4);
    vt_sql("CREATE FUNCTION sterm() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
           "IF NEW.flow_step_id = 'sterm' AND NEW.status <> 'processing' THEN "
           "PERFORM pg_sleep(0.2); END IF; RETURN NEW; END $$");
    vt_sql("CREATE TRIGGER sterm BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION sterm()");
    for (int i = 0; i < 4; i++) {
        k[i] = (single_call){&srv[0], c[i], "\"disposition\": \"complete\"", 0, false, NULL};
        assert_int_equal(pthread_create(&t[i], NULL, single_client, &k[i]), 0);
    }
    for (int i = 0; i < 40 && killed == 0; i++) {
        vt_sleep_ms(25);
        killed = vt_sql_long("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                             " WHERE wait_event = 'PgSleep' AND pid <> pg_backend_pid()");
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    vt_sql("DROP TRIGGER sterm ON jobs");
    vt_sql("DROP FUNCTION sterm()");
    assert_true(killed >= 1);
    for (int i = 0; i < 4; i++) {
        if (k[i].status != 200 || k[i].replayed)
            fail_msg("single %d: %s", i, k[i].shape);
    }
    singles_free(k, 4);
    assert_true(async_singles(on, 1, "handed_back") > back);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit t JOIN jobs j ON j.id = t.job_id"
                                 " WHERE j.flow_step_id = 'sterm' AND t.cause = 'complete'"),
                     4);
}

/* A stop while coalesced single dispositions are on the executor (each finish held by a
 * trigger): the runners wait for them, every request is answered (200, or 503 when it came
 * after the stop began), verdictd exits cleanly, and what was answered 200 is what was
 * committed. */
static void test_singles_stop_in_flight(void **state)
{
    vt_server s;
    const vt_server *one[] = {&s};
    single_call k[STOPPERS];
    vt_claim c[STOPPERS];
    pthread_t t[STOPPERS];
    long ok = 0, carried = 0;
    (void)state;
    vt_replica_start(&s);
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('sstop')");
    vt_seed_items("sstop", "sp-", STOPPERS, 5, 3);
    assert_int_equal(vt_claim_n(&s, "sstop", STOPPERS, 600, c), STOPPERS);
    vt_sql("CREATE FUNCTION sstop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
           "IF NEW.flow_step_id = 'sstop' AND NEW.status <> 'processing' THEN "
           "PERFORM pg_sleep(0.05); END IF; RETURN NEW; END $$");
    vt_sql("CREATE TRIGGER sstop BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION sstop()");
    for (int i = 0; i < STOPPERS; i++) {
        k[i] = (single_call){&s, c[i], "\"disposition\": \"complete\"", 0, false, NULL};
        assert_int_equal(pthread_create(&t[i], NULL, single_client, &k[i]), 0);
    }
    /* the first goes alone; once it is answered the rest, which waited, go as one group */
    for (int i = 0; i < 200 && carried == 0; i++) {
        vt_sleep_ms(10);
        carried = async_singles(one, 1, "answered");
    }
    vt_server_stop(&s); /* asserts a clean exit */
    for (int i = 0; i < STOPPERS; i++) {
        pthread_join(t[i], NULL);
        if (k[i].status != 200 && k[i].status != 503)
            fail_msg("single %d: %s", i, k[i].shape);
        ok += k[i].status == 200;
    }
    singles_free(k, STOPPERS);
    vt_sql("DROP TRIGGER sstop ON jobs");
    vt_sql("DROP FUNCTION sstop()");
    print_message("stop: %ld of %d answered 200 (%ld on the executor before the stop)\n", ok,
                  STOPPERS, carried);
    assert_true(carried > 0);
    assert_true(ok > 0);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE flow_step_id = 'sstop'"
                                 " AND status = 'completed'"),
                     ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_answers),
        cmocka_unit_test(test_statement_error),
        cmocka_unit_test(test_stop_in_flight),
        cmocka_unit_test(test_lost_after_commit),
        cmocka_unit_test(test_backend_terminated),
        cmocka_unit_test(test_same_disposition_answers),
        cmocka_unit_test(test_finish_error),
        cmocka_unit_test(test_finish_terminated),
        cmocka_unit_test(test_lock_terminated),
        cmocka_unit_test(test_disposition_lost_after_commit),
        cmocka_unit_test(test_singles_on_executor),
        cmocka_unit_test(test_singles_same_answers),
        cmocka_unit_test(test_singles_finish_error),
        cmocka_unit_test(test_singles_terminated),
        cmocka_unit_test(test_singles_stop_in_flight),
        cmocka_unit_test(test_batch_cycles),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
