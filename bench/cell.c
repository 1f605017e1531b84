/* cell.c - one cell of the matrix: `clients` worker threads doing claim → disposition
 * cycles for a warm-up and then a measured window, either over HTTP against the child
 * verdictd (keep-alive, bench/http.c), as the same transactions over libpq through
 * verdict's own store and service functions (vd_store_claim, vd_job_apply) with one
 * connection per worker, or as the minimal SKIP LOCKED cycle (minimal.c). The first two
 * build the same request bodies, parse the same claim answers and draw the same random
 * dispositions, so their difference is what verdictd adds: HTTP, JSON validation, auth,
 * routing, logging and the connection pool. The npm peers' cells run in peers.c.
 */
#include "bench.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verdict/config.h"
#include "verdict/error.h"
#include "verdict/jobs.h"
#include "verdict/store.h"
#include "verdict/store/claims.h"
#include "verdict/store/idempotency.h"

#define PHASE_WARMUP 0
#define PHASE_MEASURE 1
#define PHASE_STOP 2

extern volatile int vb_interrupted;

typedef enum disp_kind { DISP_COMPLETE, DISP_REJECT, DISP_DEFER, DISP_FAIL } disp_kind;

typedef struct claim {
    int64_t job_id;
    char token[40];
} claim;

typedef struct shared {
    const vb_options *o;
    const vb_env *e;
    vb_scenario scenario;
    vb_mode mode;
    vd_config cfg;        /* verdictd's defaults: lease, backoff (the SQL side needs them) */
    atomic_int connected; /* workers past their connect, ready or not */
    atomic_int go;        /* set once every worker is connected */
    atomic_int phase;
    atomic_long counted;
} shared;

typedef struct worker {
    shared *sh;
    int index;
    pthread_t thread;
    bool started, ready;
    uint64_t rng;
    char flow_step[32], worker_id[32];
    /* HTTP */
    vb_http http;
    /* SQL */
    vd_db *db;
    vd_conn *conn;
    /* minimal */
    vb_min *min;
    /* results */
    /* the *_next scenarios: the claims the last disposition's answer handed over */
    claim held[VB_MAX_BATCH];
    int nheld;
    vb_samples claim_lat, disp_lat;
    long cycles, items, claim_calls, disp_calls, errors, errors_5xx, empty;
    char first_error[200];
} worker;

static const char *disp_name(disp_kind k)
{
    static const char *const names[] = {"complete", "reject_source", "defer_item", "fail"};
    return names[k];
}

/* The request body of a disposition, byte for byte what the HTTP side sends. */
static int disp_body(char *buf, size_t cap, disp_kind k, const char *token)
{
    switch (k) {
    case DISP_REJECT:
        return snprintf(buf, cap,
                        "{\"claim_token\":\"%s\",\"disposition\":\"reject_source\","
                        "\"reason_code\":\"too_thin\",\"reason\":\"bench: a one-line post\"}",
                        token);
    case DISP_DEFER:
        return snprintf(buf, cap,
                        "{\"claim_token\":\"%s\",\"disposition\":\"defer_item\","
                        "\"reason_code\":\"tool_error\",\"reason\":\"bench: the fetch tool "
                        "timed out\"}",
                        token);
    case DISP_FAIL:
        return snprintf(buf, cap,
                        "{\"claim_token\":\"%s\",\"disposition\":\"fail\","
                        "\"error\":\"bench: the provider answered 503\"}",
                        token);
    case DISP_COMPLETE:
    default:
        return snprintf(buf, cap, "{\"claim_token\":\"%s\",\"disposition\":\"complete\"}", token);
    }
}

static disp_kind pick(worker *w)
{
    unsigned r;
    if (w->sh->scenario != VB_SCENARIO_MIX)
        return DISP_COMPLETE;
    r = (unsigned)(vb_rand(&w->rng) % 100);
    return r < 70 ? DISP_COMPLETE : r < 85 ? DISP_REJECT : r < 95 ? DISP_DEFER : DISP_FAIL;
}

static void note_error(worker *w, int status, const char *what, const char *body)
{
    w->errors++;
    if (status < 0 || status >= 500)
        w->errors_5xx++;
    if (!w->first_error[0])
        snprintf(w->first_error, sizeof(w->first_error), "%s: %d %.150s", what, status,
                 body ? body : "(no body)");
}

/* Parse {"claims":[{"job_id":..,"claim_token":".."},..]} into out; returns the count. */
static int parse_claims(const char *text, claim *out, int max)
{
    cJSON *root = cJSON_Parse(text), *c = NULL;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "claims");
    int n = 0;
    cJSON_ArrayForEach(c, arr)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "job_id");
        const cJSON *tok = cJSON_GetObjectItemCaseSensitive(c, "claim_token");
        if (n >= max || !cJSON_IsNumber(id) || !cJSON_IsString(tok))
            break;
        out[n].job_id = (int64_t)id->valuedouble;
        snprintf(out[n].token, sizeof(out[n].token), "%s", tok->valuestring);
        n++;
    }
    cJSON_Delete(root);
    return n;
}

/* ---- one call each way ------------------------------------------------------------------ */

static bool claims_next(vb_scenario sc)
{
    return sc == VB_SCENARIO_SINGLE_NEXT || sc == VB_SCENARIO_BATCH_CALL_NEXT;
}

static bool batched(vb_scenario sc)
{
    return sc == VB_SCENARIO_BATCH || sc == VB_SCENARIO_BATCH_CALL ||
           sc == VB_SCENARIO_BATCH_CALL_NEXT;
}

/* The members a *_next scenario adds to a disposition's body ("" otherwise). */
static const char *next_members(const worker *w)
{
    switch (w->sh->scenario) {
    case VB_SCENARIO_SINGLE_NEXT:
        return ",\"claim_next\":1";
    case VB_SCENARIO_BATCH_CALL_NEXT:
        return ",\"claim_next\":10";
    default:
        return "";
    }
}

/* The claim's limit keys (--limit-keys, --keys-per-claim): worker i names keys
 * (i * K + j) mod N, j < K, and reserves 100 tokens per item; "" without --limit-keys. */
static void claim_keys(const worker *w, char *out, size_t cap)
{
    const vb_options *o = w->sh->o;
    int k = o->keys_per_claim < o->limit_keys ? o->keys_per_claim : o->limit_keys;
    size_t len = 0;
    out[0] = '\0';
    if (o->limit_keys <= 0)
        return;
    len += (size_t)snprintf(out + len, cap - len, ",\"estimated_tokens\":100,\"limit_keys\":[");
    for (int j = 0; j < k && len < cap; j++)
        len += (size_t)snprintf(out + len, cap - len, "%s\"bench-k%d\"", j ? "," : "",
                                (w->index * k + j) % o->limit_keys);
    if (len < cap)
        snprintf(out + len, cap - len, "]");
}

/* --idempotency-keys: the claim's own Idempotency-Key (as the PHP client sends one with every
 * claim), unique in the process: the bench's pid and a counter. */
static void claim_idem_key(worker *w)
{
    static _Atomic long next;
    if (w->sh->o->idem_keys)
        snprintf(w->http.extra, sizeof(w->http.extra), "Idempotency-Key: vb-%ld-%ld\r\n",
                 (long)getpid(), atomic_fetch_add(&next, 1));
}

/* Claim; returns the status and fills claims[0..*n). */
static int do_claim(worker *w, int limit, claim *claims, int *n)
{
    char body[600], keys[400];
    claim_keys(w, keys, sizeof(keys));
    int len = snprintf(body, sizeof(body),
                       "{\"flow_step_id\":\"%s\",\"worker_id\":\"%s\",\"limit\":%d%s}",
                       w->flow_step, w->worker_id, limit, w->sh->mode == VB_MODE_HTTP ? keys : "");
    int status;
    *n = 0;
    if (w->sh->mode == VB_MODE_MIN) {
        int64_t ids[VB_MAX_BATCH];
        status = vb_min_claim(w->min, w->flow_step, w->worker_id, limit, ids, n);
        for (int i = 0; i < *n; i++) {
            claims[i].job_id = ids[i];
            claims[i].token[0] = '\0';
        }
        if (status != 200)
            note_error(w, status, "claim", vb_min_error(w->min));
        return status;
    }
    if (w->sh->mode == VB_MODE_HTTP) {
        claim_idem_key(w);
        status = vb_http_request(&w->http, "POST", "/v1/claims", body, (size_t)len);
        if (status == 200)
            *n = parse_claims(w->http.body, claims, VB_MAX_BATCH);
        else
            note_error(w, status, "claim", status > 0 ? w->http.body : NULL);
        return status;
    }
    /* what h_claims.c does after validation: no Idempotency-Key, the config's lease */
    vd_idem idem = {"claims", VB_ACTOR, NULL, body};
    vd_reply reply = {0};
    vd_error rc = vd_store_claim(w->conn, w->flow_step, w->worker_id, NULL, limit,
                                 w->sh->cfg.lease_seconds, VB_ACTOR, false, &idem, &reply);
    status = vd_error_status(rc);
    if (rc == VD_OK)
        *n = parse_claims(reply.body, claims, VB_MAX_BATCH);
    else
        note_error(w, status, "claim", vd_error_code(rc));
    free(reply.body);
    return status;
}

/* Fill w the way h_jobs.c fills it for this disposition (reason first, then the
 * per-disposition fields; fail's error replaces the reason). */
static void fill_write(vd_job_write *jw, disp_kind k, const claim *c, const char *body, char *head,
                       size_t head_cap)
{
    memset(jw, 0, sizeof(*jw));
    jw->job_id = c->job_id;
    jw->token = c->token;
    jw->event.retry_after_seconds = -1;
    jw->event.retryable = true;
    if (!vd_disposition_parse(disp_name(k), &jw->disposition))
        jw->disposition = VD_DISPOSITION_FAIL;
    jw->cause = vd_disposition_cause(jw->disposition);
    switch (k) {
    case DISP_COMPLETE:
        jw->event.kind = VD_EVENT_COMPLETE;
        break;
    case DISP_REJECT:
        jw->event.kind = VD_EVENT_REJECT_SOURCE;
        jw->is_reject = true;
        jw->reason_code = "too_thin";
        jw->reason = "bench: a one-line post";
        break;
    case DISP_DEFER:
        jw->event.kind = VD_EVENT_DEFER_ITEM;
        jw->event.manual_review = false;
        jw->reason_code = "tool_error";
        jw->reason = "bench: the fetch tool timed out";
        break;
    case DISP_FAIL:
        jw->event.kind = VD_EVENT_FAIL;
        jw->reason_code = "engine_error";
        jw->reason = "bench: the provider answered 503";
        break;
    }
    (void)head;
    (void)head_cap;
    jw->request_json = body;
    jw->actor = VB_ACTOR;
}

static int do_disposition(worker *w, const claim *c, disp_kind k)
{
    char body[300], path[64], head[64];
    int len = disp_body(body, sizeof(body), k, c->token);
    int status;
    if (w->sh->mode == VB_MODE_MIN) {
        status = vb_min_complete(w->min, &c->job_id, 1);
        if (status != 200)
            note_error(w, status, "complete", vb_min_error(w->min));
        return status;
    }
    if (claims_next(w->sh->scenario) && len > 0) /* {..."claim_next":1} */
        len = snprintf(body + len - 1, sizeof(body) - (size_t)len + 1, "%s}", next_members(w)) +
              len - 1;
    if (w->sh->mode == VB_MODE_HTTP) {
        snprintf(path, sizeof(path), "/v1/jobs/%" PRId64 "/disposition", c->job_id);
        status = vb_http_request(&w->http, "POST", path, body, (size_t)len);
        if (status != 200)
            note_error(w, status, disp_name(k), status > 0 ? w->http.body : NULL);
        else if (claims_next(w->sh->scenario))
            w->nheld = parse_claims(w->http.body, w->held, VB_MAX_BATCH);
        return status;
    }
    vd_job_write jw;
    vd_job_answer ans = {0};
    vd_claim_next next = {1, w->sh->cfg.lease_seconds, true, NULL, -1};
    fill_write(&jw, k, c, body, head, sizeof(head));
    vd_error rc = vd_job_apply_next(w->conn, &w->sh->cfg, &jw, 1,
                                    claims_next(w->sh->scenario) ? &next : NULL, &ans, NULL);
    if (rc == VD_OK)
        rc = ans.rc;
    status = vd_error_status(rc);
    if (rc != VD_OK)
        note_error(w, status, disp_name(k), vd_error_code(rc));
    if (ans.kept) /* the reply the HTTP side would send */
        free(vd_job_reply(NULL, ans.kept, ans.replayed));
    if (ans.kept && rc == VD_OK && claims_next(w->sh->scenario))
        w->nheld = parse_claims(ans.kept, w->held, VB_MAX_BATCH);
    free(ans.kept);
    return status;
}

/* All n claims finished as "complete" in one batch call; returns 200 when every entry was. */
static int do_dispositions(worker *w, const claim *c, int n)
{
    int status;
    if (w->sh->mode == VB_MODE_MIN) {
        int64_t ids[VB_MAX_BATCH];
        for (int i = 0; i < n; i++)
            ids[i] = c[i].job_id;
        status = vb_min_complete(w->min, ids, n);
        if (status != 200)
            note_error(w, status, "complete", vb_min_error(w->min));
        return status;
    }
    if (w->sh->mode == VB_MODE_HTTP) {
        char body[VB_MAX_BATCH * 120 + 32];
        size_t len = (size_t)snprintf(body, sizeof(body), "{\"dispositions\":[");
        for (int i = 0; i < n; i++)
            len += (size_t)snprintf(body + len, sizeof(body) - len,
                                    "%s{\"job_id\":%" PRId64 ",\"claim_token\":\"%s\","
                                    "\"disposition\":\"complete\"}",
                                    i ? "," : "", c[i].job_id, c[i].token);
        len += (size_t)snprintf(body + len, sizeof(body) - len, "]%s}", next_members(w));
        status = vb_http_request(&w->http, "POST", "/v1/dispositions", body, len);
        /* every entry's answer starts {"job_id":N,"status":S, (h_jobs.c) */
        int ok = 0;
        for (const char *p = status == 200 ? w->http.body : NULL;
             p && (p = strstr(p, ",\"status\":200,")); p++)
            ok++;
        if (status == 200 && ok != n)
            status = 409;
        if (status != 200)
            note_error(w, status, "dispositions", status > 0 ? w->http.body : NULL);
        else if (claims_next(w->sh->scenario))
            w->nheld = parse_claims(w->http.body, w->held, VB_MAX_BATCH);
        return status;
    }
    /* what h_jobs.c does after validation: each entry's request without its job_id */
    vd_job_write jw[VB_MAX_BATCH] = {{0}};
    vd_job_answer ans[VB_MAX_BATCH];
    char bodies[VB_MAX_BATCH][128], heads[VB_MAX_BATCH][64];
    vd_error rc;
    for (int i = 0; i < n; i++) {
        disp_body(bodies[i], sizeof(bodies[i]), DISP_COMPLETE, c[i].token);
        fill_write(&jw[i], DISP_COMPLETE, &c[i], bodies[i], heads[i], sizeof(heads[i]));
    }
    vd_claim_next next = {VB_MAX_BATCH, w->sh->cfg.lease_seconds, false, NULL, -1};
    char *claims = NULL;
    rc = vd_job_apply_next(w->conn, &w->sh->cfg, jw, (size_t)n,
                           claims_next(w->sh->scenario) ? &next : NULL, ans, &claims);
    if (rc == VD_OK && claims)
        w->nheld = parse_claims(claims, w->held, VB_MAX_BATCH);
    free(claims);
    for (int i = 0; i < n; i++) {
        if (rc == VD_OK && ans[i].rc != VD_OK)
            rc = ans[i].rc;
        if (ans[i].kept)
            free(vd_job_reply(NULL, ans[i].kept, ans[i].replayed));
        free(ans[i].kept);
    }
    status = vd_error_status(rc);
    if (rc != VD_OK)
        note_error(w, status, "dispositions", vd_error_code(rc));
    return status;
}

/* ---- the worker ------------------------------------------------------------------------- */

static void cycle(worker *w)
{
    claim claims[VB_MAX_BATCH];
    vb_scenario sc = w->sh->scenario;
    int limit = batched(sc) ? VB_MAX_BATCH : 1;
    int n = 0, done = 0, status = 200;
    int phase = atomic_load(&w->sh->phase);
    double t0 = vb_now(), t1;
    if (w->nheld > 0) { /* the last disposition claimed these (*_next) */
        n = w->nheld;
        memcpy(claims, w->held, (size_t)n * sizeof(claims[0]));
        w->nheld = 0;
    } else {
        status = do_claim(w, limit, claims, &n);
        t1 = vb_now();
        if (phase == PHASE_MEASURE) {
            vb_samples_add(&w->claim_lat, t1 - t0);
            w->claim_calls++;
        }
    }
    if (status != 200) {
        vb_sleep(status < 0 ? 0.05 : 0.001); /* a dead connection: do not spin */
        return;
    }
    if (n == 0) {
        if (phase == PHASE_MEASURE)
            w->empty++;
        vb_sleep(0.001);
        return;
    }
    if (sc == VB_SCENARIO_BATCH_CALL || sc == VB_SCENARIO_BATCH_CALL_NEXT) {
        phase = atomic_load(&w->sh->phase);
        t0 = vb_now();
        status = do_dispositions(w, claims, n);
        t1 = vb_now();
        if (phase == PHASE_MEASURE) {
            vb_samples_add(&w->disp_lat, t1 - t0);
            w->disp_calls++;
        }
        done = status == 200 ? n : 0;
    }
    for (int i = 0; sc != VB_SCENARIO_BATCH_CALL && sc != VB_SCENARIO_BATCH_CALL_NEXT && i < n;
         i++) {
        disp_kind k = pick(w);
        phase = atomic_load(&w->sh->phase);
        t0 = vb_now();
        status = do_disposition(w, &claims[i], k);
        t1 = vb_now();
        if (phase == PHASE_MEASURE) {
            vb_samples_add(&w->disp_lat, t1 - t0);
            w->disp_calls++;
        }
        done += status == 200;
    }
    /* a cycle counts when it completed inside the measured window and every call succeeded */
    if (atomic_load(&w->sh->phase) == PHASE_MEASURE && done == n) {
        w->cycles++;
        w->items += n;
        atomic_fetch_add(&w->sh->counted, 1);
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    if (sh->mode == VB_MODE_HTTP) {
        w->ready = vb_http_open(&w->http, sh->e->port, sh->e->token);
    } else if (sh->mode == VB_MODE_MIN) {
        w->ready = (w->min = vb_min_connect(sh->e)) != NULL;
    } else {
        /* a pool of one, borrowed for the whole cell: a persistent, prepared connection */
        w->db = vd_db_create(sh->e->db_url, 1);
        w->ready = w->db && vd_db_acquire(w->db, &w->conn) == VD_OK;
    }
    if (!w->ready) {
        w->errors++;
        w->errors_5xx++;
        snprintf(w->first_error, sizeof(w->first_error), "worker %d could not connect", w->index);
    }
    atomic_fetch_add(&sh->connected, 1);
    while (!atomic_load(&sh->go))
        vb_sleep(0.001);
    while (w->ready && atomic_load(&sh->phase) != PHASE_STOP)
        cycle(w);
    if (sh->mode == VB_MODE_HTTP) {
        vb_http_close(&w->http);
    } else if (sh->mode == VB_MODE_MIN) {
        vb_min_close(w->min);
    } else {
        if (w->conn)
            vd_db_release(w->db, w->conn);
        vd_db_destroy(w->db);
    }
    return NULL;
}

/* ---- stock ------------------------------------------------------------------------------ */

bool vb_stock_refill(vb_env *e, const vb_options *o, long per_step)
{
    for (int k = 0; k < o->flow_steps; k++) {
        char sql[1024];
        long have, add;
        snprintf(sql, sizeof(sql),
                 "SELECT count(*) FROM items WHERE flow_step_id = 'bench_%d' AND state = "
                 "'available'",
                 k);
        if ((have = vb_env_sql_long(e, sql)) < 0)
            return false;
        if (have >= per_step)
            continue;
        add = per_step - have;
        /* what POST /v1/items writes (sql VD_SQL_ITEMS_INSERT): the item's source and queue
         * rows (sql/migrations/0023_item_sources.sql) and its register transition, which the
         * counters' fold takes (sql/migrations/0019) */
        snprintf(sql, sizeof(sql),
                 "WITH src AS (INSERT INTO item_sources (flow_step_id, source_type,"
                 " item_identifier, payload)"
                 " SELECT 'bench_%d', 'bench', 'https://bench.example/bench_%d/' || g,"
                 " jsonb_build_object('title', 'bench item ' || g)"
                 " FROM generate_series(%ld, %ld) g RETURNING id, flow_step_id),"
                 " ins AS (INSERT INTO items (id, flow_step_id, max_attempts, max_defers)"
                 " SELECT id, flow_step_id, 5, 3 FROM src RETURNING id)"
                 " INSERT INTO transitions (item_id, to_state, cause, actor)"
                 " SELECT id, 'available', 'register', '%s' FROM ins",
                 k, k, e->seq + 1, e->seq + add, VB_ACTOR);
        if (!vb_env_sql(e, sql))
            return false;
        e->seq += add;
        vb_log("refilled bench_%d: +%ld items (now %ld claimable)", k, add, per_step);
    }
    return true;
}

bool vb_seed_http(vb_env *e, const vb_options *o, double *seconds)
{
    vb_http h;
    size_t cap = 1000 * 160 + 64, len = 0;
    char *body = malloc(cap);
    long per_step = (o->items + o->flow_steps - 1) / o->flow_steps;
    double t0 = vb_now();
    bool ok = body && vb_http_open(&h, e->port, e->token);
    if (!ok) {
        free(body);
        return false;
    }
    for (int k = 0; ok && k < o->flow_steps; k++) {
        for (long done = 0; ok && done < per_step;) {
            long n = per_step - done > 1000 ? 1000 : per_step - done;
            int status;
            len = (size_t)snprintf(body, cap, "{\"items\":[");
            for (long i = 0; i < n; i++) {
                long id = e->seq + 1 + i;
                len += (size_t)snprintf(body + len, cap - len,
                                        "%s{\"flow_step_id\":\"bench_%d\",\"source_type\":"
                                        "\"bench\",\"item_identifier\":\"https://bench.example/"
                                        "bench_%d/%ld\",\"payload\":{\"title\":\"bench item "
                                        "%ld\"}}",
                                        i ? "," : "", k, k, id, id);
            }
            len += (size_t)snprintf(body + len, cap - len, "]}");
            status = vb_http_request(&h, "POST", "/v1/items", body, len);
            if (status != 200) {
                fprintf(stderr, "verdict-bench: POST /v1/items: %d %.300s\n", status,
                        status > 0 ? h.body : "");
                ok = false;
            }
            e->seq += n;
            done += n;
        }
    }
    for (int k = 0; ok && k < o->limit_keys; k++) { /* limits that never bind */
        char path[64];
        static const char never[] =
            "{\"concurrency\":64,\"rate\":{\"per\":\"second\",\"count\":1000000,"
            "\"burst\":64},\"tokens_per_minute\":1000000000000}";
        snprintf(path, sizeof(path), "/v1/limits/bench-k%d", k);
        ok = vb_http_request(&h, "PUT", path, never, sizeof(never) - 1) == 200;
    }
    *seconds = vb_now() - t0;
    vb_http_close(&h);
    free(body);
    return ok;
}

/* ---- the cell --------------------------------------------------------------------------- */

/* Before every cell but the first (main.c's priming cell): VACUUM (ANALYZE) the hot tables,
 * so that every side starts from the same table state and autovacuum is less likely to land
 * inside a measured window (it still may: it stays on), then CHECKPOINT, so that every cell
 * starts equally far from the last checkpoint and pays the same full-page images (not before
 * the priming cell: `jobs` is empty then; see the ANALYZE after the seed in main.c). */
bool vb_cell_settle(vb_env *e, const vb_options *o)
{
    bool ok = true;
    if (o->vacuum && e->cells_run > 0)
        ok = vb_env_sql(e, o->minimal ? "VACUUM (ANALYZE) items, jobs, transitions, bench_min_jobs"
                                      : "VACUUM (ANALYZE) items, jobs, transitions");
    if (ok && !vb_env_sql(e, "CHECKPOINT"))
        vb_log("CHECKPOINT refused (not a superuser?): cells start at varying distances from "
               "the last checkpoint");
    e->cells_run++;
    return ok;
}

static const char *env_none(const char *name)
{
    (void)name;
    return NULL;
}

static void snapshot(const vb_env *e, pid_t proc, double v[5])
{
    v[0] = proc > 0 ? vb_proc_cpu_seconds(proc) : 0;
    v[1] = vb_postgres_cpu_seconds(e->postmaster);
    v[2] = vb_self_cpu_seconds();
    if (!vb_host_cpu(&v[3], &v[4]))
        v[3] = v[4] = 0;
}

void vb_window_open(const vb_env *e, pid_t proc, double snap[5], vb_cell *c)
{
    vb_pgss_reset(e);
    vb_dbstat_read(e, &c->db_before);
    snapshot(e, proc, snap);
}

void vb_window_close(const vb_env *e, pid_t proc, const double before[5], vb_cell *c)
{
    double after[5];
    snapshot(e, proc, after);
    vb_dbstat_read(e, &c->db_after);
    c->n_stmts = vb_pgss_collect(e, c->stmts, VB_MAX_STMTS, &c->pgss_top_wal);
    c->server_cpu_s = proc > 0 ? after[0] - before[0] : 0;
    c->pg_cpu_s = after[1] - before[1];
    c->bench_cpu_s = after[2] - before[2];
    c->host_busy = after[4] > before[4] ? (after[3] - before[3]) / (after[4] - before[4]) : 0;
}

bool vb_cell_applies(const vb_options *o, vb_scenario s, vb_mode m)
{
    switch (m) {
    case VB_MODE_HTTP:
    case VB_MODE_SQL:
        return true;
    case VB_MODE_MIN:
        return o->minimal && s != VB_SCENARIO_MIX && !claims_next(s);
    case VB_MODE_PGBOSS:
    case VB_MODE_GRAPHILE:
        return o->peers && (s == VB_SCENARIO_SINGLE || s == VB_SCENARIO_BATCH_CALL);
    default:
        return false;
    }
}

/* Claimable items each flow step must hold before this cell. */
static long stock_needed(const vb_env *e, const vb_options *o, vb_scenario s, int clients)
{
    int active = clients < o->flow_steps ? clients : o->flow_steps;
    double per_cycle = batched(s) ? VB_MAX_BATCH : 1;
    /* three times what the fastest cell so far would use (the next one may be faster), and
     * at least 1,000 cycles/s (a first batch cell at 1,000 items/s ran dry) */
    double peak = e->peak_items_per_s > 1000 * per_cycle ? e->peak_items_per_s : 1000 * per_cycle;
    double need =
        o->cycles > 0 ? (double)o->cycles * per_cycle * 1.5 : peak * (o->warmup + o->duration) * 3;
    long per_step = (long)(need / active) + 1;
    long base = (o->items + o->flow_steps - 1) / o->flow_steps;
    return per_step > base ? per_step : base;
}

static void merge_results(worker *ws, int n, vb_cell *out)
{
    vb_samples cl = {0}, dl = {0};
    for (int i = 0; i < n; i++) {
        worker *w = &ws[i];
        out->cycles += w->cycles;
        out->items += w->items;
        out->claim_calls += w->claim_calls;
        out->disp_calls += w->disp_calls;
        out->errors += w->errors;
        out->errors_5xx += w->errors_5xx;
        out->empty_claims += w->empty;
        out->reconnects += w->http.reconnects;
        if (!out->first_error[0] && w->first_error[0])
            snprintf(out->first_error, sizeof(out->first_error), "%s", w->first_error);
        vb_samples_merge(&cl, &w->claim_lat);
        vb_samples_merge(&dl, &w->disp_lat);
        vb_samples_free(&w->claim_lat);
        vb_samples_free(&w->disp_lat);
    }
    out->claim_ms[0] = vb_samples_pct(&cl, 50);
    out->claim_ms[1] = vb_samples_pct(&cl, 95);
    out->claim_ms[2] = vb_samples_pct(&cl, 99);
    out->disp_ms[0] = vb_samples_pct(&dl, 50);
    out->disp_ms[1] = vb_samples_pct(&dl, 95);
    out->disp_ms[2] = vb_samples_pct(&dl, 99);
    vb_samples_free(&cl);
    vb_samples_free(&dl);
}

/* Sleep until `until` (or, with --cycles, until enough cycles were counted), sampling
 * verdictd's RSS every 20 ms. */
static void watch(shared *sh, double until, long cycles, long *peak_kb)
{
    for (;;) {
        long kb = sh->e->pid > 0 ? vb_proc_rss_kb(sh->e->pid) : -1;
        double now = vb_now();
        if (kb > *peak_kb)
            *peak_kb = kb;
        if (vb_interrupted)
            return;
        if (cycles > 0 ? atomic_load(&sh->counted) >= cycles : now >= until)
            return;
        vb_sleep(cycles > 0 || until - now > 0.02 ? 0.02 : until - now);
    }
}

/* Start the workers; returns how many threads started. They connect, then wait for go. */
static int start_workers(shared *sh, worker *ws, int clients)
{
    int started = 0;
    for (int i = 0; i < clients; i++) {
        worker *w = &ws[i];
        w->sh = sh;
        w->index = i;
        w->http.fd = -1;
        /* seeded by worker and scenario only: both sides draw the same dispositions */
        w->rng = ((uint64_t)sh->o->seed << 32) ^ ((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull) ^
                 (uint64_t)(sh->scenario + 1);
        snprintf(w->flow_step, sizeof(w->flow_step), "bench_%d", i % sh->o->flow_steps);
        snprintf(w->worker_id, sizeof(w->worker_id), "bench-w%d", i);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
            break;
        w->started = true;
        started++;
    }
    return started;
}

bool vb_cell_run(vb_env *e, const vb_options *o, vb_scenario s, vb_mode m, int clients,
                 vb_cell *out)
{
    shared sh;
    worker *ws = NULL;
    char err[256];
    double before[5], t0;
    bool ok = false;
    int started = 0;
    if (m == VB_MODE_PGBOSS || m == VB_MODE_GRAPHILE)
        return vb_peer_run(e, o, s, m, clients, out);
    memset(out, 0, sizeof(*out));
    memset(&sh, 0, sizeof(sh));
    out->scenario = s;
    out->mode = m;
    out->clients = clients;
    sh.o = o;
    sh.e = e;
    sh.scenario = s;
    sh.mode = m;
    atomic_init(&sh.phase, PHASE_WARMUP);
    atomic_init(&sh.counted, 0);
    atomic_init(&sh.connected, 0);
    atomic_init(&sh.go, 0);
    /* verdictd's own defaults (the child runs with them): lease and backoff */
    if (!vd_config_load(&sh.cfg, env_none, err, sizeof(err))) {
        fprintf(stderr, "verdict-bench: config: %s\n", err);
        return false;
    }
    if (m == VB_MODE_MIN ? !vb_min_refill(e, o, stock_needed(e, o, s, clients))
                         : !vb_stock_refill(e, o, stock_needed(e, o, s, clients)))
        goto out;
    if (!vb_cell_settle(e, o))
        goto out;
    if (!(ws = calloc((size_t)clients, sizeof(*ws))))
        goto out;
    out->rss_idle_kb = out->rss_peak_kb = e->pid > 0 ? vb_proc_rss_kb(e->pid) : -1;
    started = start_workers(&sh, ws, clients);
    if (started < clients) {
        fprintf(stderr, "verdict-bench: could not start %d threads\n", clients);
        atomic_store(&sh.phase, PHASE_STOP);
    }
    while (atomic_load(&sh.connected) < started)
        vb_sleep(0.001);
    atomic_store(&sh.go, 1);
    watch(&sh, vb_now() + o->warmup, 0, &out->rss_peak_kb);
    vb_window_open(e, m == VB_MODE_HTTP ? e->pid : 0, before, out);
    t0 = vb_now();
    atomic_store(&sh.phase, PHASE_MEASURE);
    watch(&sh, t0 + o->duration, o->cycles, &out->rss_peak_kb);
    out->seconds = vb_now() - t0;
    atomic_store(&sh.phase, PHASE_STOP);
    vb_window_close(e, m == VB_MODE_HTTP ? e->pid : 0, before, out);
    for (int i = 0; i < clients; i++)
        if (ws[i].started)
            pthread_join(ws[i].thread, NULL);
    merge_results(ws, clients, out);
    if (out->seconds > 0 && out->items / out->seconds > e->peak_items_per_s)
        e->peak_items_per_s = out->items / out->seconds;
    ok = started == clients && !vb_interrupted;
out:
    free(ws);
    vd_config_cleanup(&sh.cfg);
    return ok;
}
