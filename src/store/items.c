/* items.c - the store's item, claim, heartbeat and flow-step operations, plus the
 * Idempotency-Key mechanism shared by POST /v1/items and POST /v1/claims. Every answer is
 * JSON text rendered by PostgreSQL. */
#include "store_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/store/limits.h"
#include "verdict/store.h"
#include "verdict/store/claims.h"
#include "verdict/store/flow_steps.h"
#include "verdict/store/idempotency.h"
#include "verdict/store/items.h"
#include "verdict/store/jobs.h"
#include "verdict/store/reviews.h"

/* An operation run under an Idempotency-Key (or plainly when there is none). */
typedef vd_error (*idem_op)(vd_conn *c, void *arg, char **body);

typedef struct idem_tx {
    const vd_idem *idem;
    idem_op op;
    void *arg;
    vd_reply *out;
} idem_tx;

static vd_error idem_tx_run(vd_conn *c, void *arg)
{
    idem_tx *t = arg;
    const char *p[] = {t->idem->route, t->idem->key_name, t->idem->key, t->idem->body};
    PGresult *res = NULL;
    vd_error rc;
    free(t->out->body);
    t->out->body = NULL;
    t->out->replayed = false;
    rc = vd_sql_exec(c, VD_SQL_IDEM_CLAIM, 4, p, &res);
    if (rc)
        return rc;
    bool fresh = PQntuples(res) == 1;
    PQclear(res);
    if (!fresh) {
        rc = vd_sql_exec(c, VD_SQL_IDEM_GET, 4, p, &res);
        if (rc)
            return rc;
        if (PQntuples(res) == 0 || PQgetisnull(res, 0, 1))
            rc = VD_ERR_DATABASE_UNAVAILABLE; /* no answer stored: cannot happen (idem_claim
                                               * takes over an expired record) */
        else if (strcmp(PQgetvalue(res, 0, 0), "t") != 0)
            rc = VD_ERR_IDEMPOTENCY_KEY_REUSED;
        else
            rc = vd_sql_dup(res, 0, 1, &t->out->body);
        t->out->replayed = rc == VD_OK;
        PQclear(res);
        return rc;
    }
    rc = t->op(c, t->arg, &t->out->body);
    if (rc)
        return rc;
    const char *s[] = {t->idem->route, t->idem->key_name, t->idem->key, t->out->body};
    return vd_sql_exec_deferred(c, VD_SQL_IDEM_SAVE, 4, s); /* goes with the COMMIT */
}

typedef struct plain_tx {
    idem_op op;
    void *arg;
    char **body;
} plain_tx;

static vd_error plain_tx_run(vd_conn *c, void *arg)
{
    plain_tx *t = arg;
    free(*t->body);
    *t->body = NULL;
    return t->op(c, t->arg, t->body);
}

static vd_error run_idempotent(vd_conn *c, const vd_idem *idem, bool needs_tx, idem_op op,
                               void *arg, vd_reply *out)
{
    out->body = NULL;
    out->replayed = false;
    vd_error rc;
    if (idem && idem->key) {
        idem_tx t = {idem, op, arg, out};
        rc = vd_sql_tx(c, idem_tx_run, &t);
    } else if (!needs_tx) {
        rc = op(c, arg, &out->body);
    } else {
        plain_tx t = {op, arg, &out->body};
        rc = vd_sql_tx(c, plain_tx_run, &t);
    }
    if (rc) { /* e.g. the COMMIT failed after the answer was built: no answer */
        free(out->body);
        out->body = NULL;
        out->replayed = false;
    }
    return rc;
}

typedef struct register_args {
    const char *batch;
    const char *actor;
} register_args;

static vd_error register_op(vd_conn *c, void *arg, char **body)
{
    register_args *a = arg;
    const char *p1[] = {a->batch};
    const char *p2[] = {a->batch, a->actor};
    char *created = NULL;
    vd_error rc = vd_sql_exec_deferred(c, VD_SQL_FLOW_STEPS_ENSURE, 1, p1); /* with INSERT */
    if (rc)
        return rc;
    rc = vd_sql_first_text_announce(c, VD_SQL_ITEMS_INSERT, 2, p2, 1, &created);
    if (rc)
        return rc;
    const char *p3[] = {a->batch, created};
    rc = vd_sql_first_text(c, VD_SQL_ITEMS_REGISTERED, 2, p3, body);
    free(created);
    return rc;
}

vd_error vd_store_items_register(vd_conn *c, const char *batch_json, const char *actor,
                                 const vd_idem *idem, vd_reply *out)
{
    register_args a = {batch_json, actor};
    return run_idempotent(c, idem, true, register_op, &a, out);
}

vd_error vd_store_items_lookup(vd_conn *c, const char *flow_step_id, const char *source_type,
                               const char *identifiers_json, char **out)
{
    const char *p[] = {flow_step_id, source_type, identifiers_json};
    return vd_sql_first_text(c, VD_SQL_ITEMS_LOOKUP, 3, p, out);
}

vd_error vd_store_item_get(vd_conn *c, int64_t id, char **out)
{
    vd_i64_text ids = vd_i64_text_of(id);
    const char *p[] = {ids.s};
    return vd_sql_first_text(c, VD_SQL_ITEM_GET, 1, p, out);
}

/* A history read (the feed, the lists) with its generic plan, as one transaction of its own:
 * the plans that read a page and stop (tests/integration/test_history.c asserts them); a
 * custom plan made for one cursor may read everything after it and sort. */
static vd_error first_text_generic(vd_conn *c, vd_sql sql, int n, const char *const *p, char **out)
{
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec_generic(c, sql, n, p, &res);
    return vd_sql_result_text(rc, res, out);
}

/* A filter string, or NULL when absent or empty. */
static const char *opt(const char *s)
{
    return s && *s ? s : NULL;
}

vd_error vd_store_items_list(vd_conn *c, const vd_list_filter *f, char **out)
{
    vd_i64_text a = vd_i64_text_of(f->after), l = vd_i64_text_of(f->limit);
    const char *p[] = {opt(f->flow_step_id),
                       opt(f->state),
                       a.s,
                       l.s,
                       opt(f->reason_code),
                       opt(f->worker_id),
                       opt(f->identifier),
                       opt(f->identifier_prefix)};
    return first_text_generic(c, f->desc ? VD_SQL_ITEMS_LIST_DESC : VD_SQL_ITEMS_LIST, 8, p, out);
}

vd_error vd_store_transitions_feed(vd_conn *c, int64_t after, const char *flow_step_id,
                                   int64_t limit, char **out)
{
    vd_i64_text a = vd_i64_text_of(after), l = vd_i64_text_of(limit);
    const char *p[] = {a.s, opt(flow_step_id), l.s};
    return first_text_generic(c, VD_SQL_TRANSITIONS_FEED, 3, p, out);
}

vd_error vd_store_resolve_one(vd_conn *c, int64_t id, const char *outcome, const char *reason_code,
                              const char *reason, const char *actor, char **out)
{
    vd_i64_text ids = vd_i64_text_of(id);
    const char *p[] = {ids.s, outcome, reason_code, reason, actor};
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, VD_SQL_RESOLVE_ONE, 5, p, &res);
    *out = NULL;
    if (rc)
        return rc;
    if (PQntuples(res) == 0)
        rc = VD_ERR_NOT_FOUND;
    else if (PQgetisnull(res, 0, 1))
        rc = VD_ERR_INVALID_TRANSITION;
    else
        rc = vd_sql_dup(res, 0, 1, out);
    PQclear(res);
    return rc;
}

vd_error vd_store_resolve_bulk(vd_conn *c, const vd_bulk_select *sel, const char *outcome,
                               const char *reason_code, const char *reason, const char *actor,
                               char **ids_json)
{
    vd_i64_text l = vd_i64_text_of(sel->limit);
    const char *p[] = {sel->flow_step_id,
                       sel->state,
                       opt(sel->reason_code),
                       l.s,
                       outcome,
                       reason_code,
                       reason,
                       actor};
    return vd_sql_first_text(c, VD_SQL_RESOLVE_BULK, 8, p, ids_json);
}

/* The first eight parameters of items_select and requeue_bulk (BULK_FILTER, LIMIT $4). */
static void bulk_params(const vd_bulk_select *sel, const vd_i64_text *limit, const char **p)
{
    p[0] = sel->flow_step_id;
    p[1] = sel->states_json;
    p[2] = opt(sel->reason_code);
    p[3] = limit->s;
    p[4] = sel->tool_failed;
    p[5] = sel->below_version;
    p[6] = sel->since;
    p[7] = sel->until;
}

vd_error vd_store_items_select(vd_conn *c, const vd_bulk_select *sel, char **ids_json)
{
    vd_i64_text l = vd_i64_text_of(sel->limit);
    const char *p[8];
    bulk_params(sel, &l, p);
    return vd_sql_first_text(c, VD_SQL_ITEMS_SELECT, 8, p, ids_json);
}

typedef struct claim_args {
    const char *p[8]; /* [6] the claim's limit keys (JSON), [7] estimated tokens: or NULL */
    const char
        *trace; /* the request's trace id (vd_conn_set_trace), or NULL: the plain claim's $7 */
    const char *span; /* ... and its span id, or NULL: $8 */
    bool generic;     /* inside a begun transaction without a key (claim_next) */
    bool hold_empty;  /* a claim that got nothing keeps nothing (a long-poll that may wait) */
    bool empty;       /* ... and it got nothing */
} claim_args;

static vd_error claim_once(vd_conn *c, claim_args *a, char **body);

/* The claim; with hold_empty, an answer without claims is dropped and the transaction (the
 * Idempotency-Key's record with it) rolled back: the caller parks and claims again later. */
static vd_error claim_op(vd_conn *c, void *arg, char **body)
{
    claim_args *a = arg;
    size_t len;
    vd_error rc = claim_once(c, a, body);
    if (rc || !a->hold_empty)
        return rc;
    len = strlen(*body); /* {"claims" : []}: the array closes right away */
    a->empty = len >= 3 && strcmp(*body + len - 3, "[]}") == 0;
    if (!a->empty)
        return VD_OK;
    free(*body);
    *body = NULL;
    return VD_ERR_NOT_FOUND;
}

static vd_error claim_plain(vd_conn *c, claim_args *a, char **body);

/* A claim statement's answer: under an Idempotency-Key, part of that transaction; alone, a
 * transaction of its own planned by index, whatever the size of jobs when its generic plan is
 * made (vd_sql_exec_indexed; tests/integration/test_claims.c checks the plan). */
static vd_error claim_text(vd_conn *c, vd_sql sql, int n, const char *const *p, char **body)
{
    PGresult *res = NULL;
    if (vd_in_tx(c))
        return vd_sql_first_text(c, sql, n, p, body);
    vd_error rc = vd_sql_exec_indexed(c, sql, n, p, &res);
    return vd_sql_result_text(rc, res, body);
}

/* A claim naming limit keys or tokens runs claim_limited; any other runs the plain claim,
 * which answers NULL (VD_ERR_NOT_FOUND) in a keyed flow step, claiming nothing: then
 * claim_limited without keys (sql/migrations/0032_flow_control.sql). */
static vd_error claim_once(vd_conn *c, claim_args *a, char **body)
{
    vd_error rc = VD_ERR_NOT_FOUND;
    if (!a->p[6] && !a->p[7])
        rc = claim_plain(c, a, body);
    if (rc == VD_ERR_NOT_FOUND) {
        const char *p[10] = {a->p[0], a->p[1], a->p[2], a->p[3],  a->p[4],
                             a->p[5], a->p[6], a->p[7], a->trace, a->span};
        rc = claim_text(c, VD_SQL_CLAIM_LIMITED, 10, p, body);
    }
    return rc;
}

static vd_error claim_plain(vd_conn *c, claim_args *a, char **body)
{
    const char *p[8] = {a->p[0], a->p[1], a->p[2], a->p[3], a->p[4], a->p[5], a->trace, a->span};
    if (vd_in_tx(c) && a->generic) { /* claim_next: after the disposition's lock, generic too */
        vd_error rc = vd_sql_prefer_generic(c);
        return rc ? rc : vd_sql_first_text(c, VD_SQL_CLAIM, 8, p, body);
    }
    /* alone, a custom plan of the claim costs about as much to make as to run, and its
     * generic plan is as good */
    return claim_text(c, VD_SQL_CLAIM, 8, p, body);
}

vd_error vd_store_claim(vd_conn *c, const char *flow_step_id, const char *worker_id,
                        const char *worker_version, int64_t limit, int64_t lease_seconds,
                        const char *actor, bool hold_empty, const vd_idem *idem, vd_reply *out)
{
    vd_claim_keys none = {NULL, -1};
    return vd_store_claim_keyed(c, flow_step_id, worker_id, worker_version, limit, lease_seconds,
                                actor, &none, hold_empty, idem, out);
}

vd_error vd_store_claim_keyed(vd_conn *c, const char *flow_step_id, const char *worker_id,
                              const char *worker_version, int64_t limit, int64_t lease_seconds,
                              const char *actor, const vd_claim_keys *keys, bool hold_empty,
                              const vd_idem *idem, vd_reply *out)
{
    vd_i64_text l = vd_i64_text_of(limit), s = vd_i64_text_of(lease_seconds),
                e = vd_i64_text_of(keys->estimated_tokens);
    claim_args a = {{flow_step_id, worker_id, l.s, s.s, actor, worker_version, keys->keys_json,
                     keys->estimated_tokens >= 0 ? e.s : NULL},
                    c->trace_id[0] ? c->trace_id : NULL,
                    c->trace_id[0] && c->span_id[0] ? c->span_id : NULL,
                    vd_in_tx(c) && !(idem && idem->key),
                    hold_empty,
                    false};
    /* without a key the claim is one pipeline: BEGIN, generic plan, claim, COMMIT */
    vd_error rc = run_idempotent(c, idem, false, claim_op, &a, out);
    return rc == VD_ERR_NOT_FOUND && a.empty ? VD_OK : rc; /* held empty: body NULL */
}

vd_error vd_store_claim_links(vd_conn *c, const char *job_ids, char **out)
{
    const char *p[] = {job_ids};
    return vd_sql_first_text(c, VD_SQL_CLAIM_LINKS, 1, p, out);
}

vd_error vd_store_heartbeat(vd_conn *c, int64_t job_id, const char *token, int64_t lease_seconds,
                            int64_t default_lease, const char *checkpoint, vd_job_snapshot *seen,
                            bool *too_big, char **out)
{
    vd_i64_text j = vd_i64_text_of(job_id), s = vd_i64_text_of(lease_seconds),
                d = vd_i64_text_of(default_lease);
    const char *p[] = {j.s, token, lease_seconds > 0 ? s.s : NULL, checkpoint, d.s};
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, VD_SQL_HEARTBEAT, 5, p, &res);
    memset(seen, 0, sizeof(*seen));
    *too_big = false;
    *out = NULL;
    if (rc)
        return rc;
    if (PQntuples(res) == 1) {
        seen->found = true;
        seen->token_ok = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
        seen->holds = !PQgetisnull(res, 0, 2);
        *too_big = strcmp(PQgetvalue(res, 0, 3), "t") == 0;
        if (!vd_job_status_parse(PQgetvalue(res, 0, 0), &seen->status))
            rc = VD_ERR_INTERNAL;
        else if (seen->holds)
            rc = vd_sql_dup(res, 0, 2, out);
    }
    PQclear(res);
    return rc;
}

vd_error vd_store_flow_step_set_paused(vd_conn *c, const char *flow_step_id, bool paused,
                                       char **out)
{
    const char *p[] = {flow_step_id, paused ? "true" : "false"};
    return vd_sql_first_text_announce(c, VD_SQL_FLOW_STEP_SET_PAUSED, 2, p, 1, out);
}

vd_error vd_store_flow_steps_list(vd_conn *c, char **out)
{
    return vd_sql_first_text(c, VD_SQL_FLOW_STEPS_LIST, 0, NULL, out);
}

vd_error vd_store_job_get(vd_conn *c, int64_t id, char **out)
{
    vd_i64_text ids = vd_i64_text_of(id);
    const char *p[] = {ids.s};
    return vd_sql_first_text(c, VD_SQL_JOB_GET, 1, p, out);
}

vd_error vd_store_job_claimed(vd_conn *c, int64_t id, const char *token, char **out)
{
    vd_i64_text ids = vd_i64_text_of(id);
    const char *p[] = {ids.s, token};
    return vd_sql_first_text(c, VD_SQL_JOB_CLAIMED, 2, p, out);
}

vd_error vd_store_jobs_list(vd_conn *c, const vd_list_filter *f, char **out)
{
    vd_i64_text a = vd_i64_text_of(f->after), l = vd_i64_text_of(f->limit),
                item = vd_i64_text_of(f->item_id);
    const char *p[] = {opt(f->flow_step_id),
                       opt(f->state),
                       opt(f->since),
                       a.s,
                       l.s,
                       opt(f->reason_code),
                       opt(f->worker_id),
                       f->item_id > 0 ? item.s : NULL,
                       opt(f->trace_id)};
    vd_sql which = f->item_id > 0 ? (f->desc ? VD_SQL_JOBS_OF_ITEM_DESC : VD_SQL_JOBS_OF_ITEM)
                                  : (f->desc ? VD_SQL_JOBS_LIST_DESC : VD_SQL_JOBS_LIST);
    return first_text_generic(c, which, 9, p, out);
}

/* One item's admin move ($1 the item; four parameters): a row (state it was in, the answer
 * or NULL when the move does not apply, the announcement or NULL), none when no such item. */
static vd_error item_move(vd_conn *c, vd_sql stmt, const char *const p[4], char **out)
{
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(c, stmt, 4, p, &res);
    *out = NULL;
    if (rc)
        return rc;
    if (PQntuples(res) == 0)
        rc = VD_ERR_NOT_FOUND;
    else if (PQgetisnull(res, 0, 1))
        rc = VD_ERR_INVALID_TRANSITION;
    else
        rc = vd_sql_dup(res, 0, 1, out);
    if (rc == VD_OK && !PQgetisnull(res, 0, 2))
        vd_sql_announce(c, PQgetvalue(res, 0, 2));
    PQclear(res);
    return rc;
}

vd_error vd_store_requeue_one(vd_conn *c, int64_t id, bool reset_budgets, const char *reason,
                              const char *actor, char **out)
{
    vd_i64_text ids = vd_i64_text_of(id);
    const char *p[] = {ids.s, reset_budgets ? "true" : "false", reason, actor};
    return item_move(c, VD_SQL_REQUEUE_ONE, p, out);
}

vd_error vd_store_requeue_bulk(vd_conn *c, const vd_bulk_select *sel, bool reset_budgets,
                               const char *reason, const char *actor, char **ids_json)
{
    vd_i64_text l = vd_i64_text_of(sel->limit);
    const char *p[11];
    bulk_params(sel, &l, p);
    p[8] = reset_budgets ? "true" : "false";
    p[9] = reason;
    p[10] = actor;
    return vd_sql_first_text_announce(c, VD_SQL_REQUEUE_BULK, 11, p, 1, ids_json);
}

vd_error vd_store_review_one(vd_conn *c, int64_t id, vd_item_state to, const char *answer,
                             const char *actor, char **out)
{
    vd_i64_text ids = vd_i64_text_of(id);
    const char *p[] = {ids.s, vd_item_state_name(to), answer, actor};
    return item_move(c, VD_SQL_REVIEW_ONE, p, out);
}

vd_error vd_store_reviews_list(vd_conn *c, const char *flow_step_id, int64_t limit, char **out)
{
    vd_i64_text l = vd_i64_text_of(limit);
    const char *p[] = {opt(flow_step_id), l.s};
    return vd_sql_first_text(c, VD_SQL_REVIEWS_LIST, 2, p, out);
}
