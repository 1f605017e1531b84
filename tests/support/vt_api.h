/* vt_api.h - integration-test shortcuts over verdict's API: register items, claim, post a
 * disposition. Each asserts the call succeeded (cmocka). Test code only. */
#ifndef VERDICT_TEST_VT_API_H
#define VERDICT_TEST_VT_API_H

#include <stdint.h>

#include "vt.h"

typedef struct vt_claim {
    int64_t job_id;
    int64_t item_id;
    int attempt;
    char token[64];
} vt_claim;

/* Register one item (extra: more JSON members such as "\"max_defers\": 2" or NULL); returns
 * its id. */
int64_t vt_register(const vt_server *s, const char *flow, const char *ident, const char *extra);
/* Claim up to `limit` items of flow; fills out[0..n) and returns n. */
int vt_claim_n(const vt_server *s, const char *flow, int limit, int lease, vt_claim *out);
/* Claim exactly one item (asserts one was there). */
vt_claim vt_claim1(const vt_server *s, const char *flow);
/* POST /v1/jobs/{id}/disposition with the claim's token and the given members
 * (e.g. "\"disposition\": \"complete\""). The caller frees the answer. */
vt_resp vt_dispose(const vt_server *s, const vt_claim *c, const char *members);
/* The item's state, read over HTTP. Returned string is static per thread. */
const char *vt_item_state(const vt_server *s, int64_t item_id);
/* The sum over servers s[0..n) of the /metrics sample that starts with `sample` (its name and
 * labels, e.g. "verdict_coalesced_requests_total{kind=\"claim\"}"); a server without it adds 0. */
long vt_metric_sum(const vt_server *const *s, int n, const char *sample);
/* PUT /v1/limits/{key} with body as admin; asserts 200. */
void vt_put_limit(const vt_server *s, const char *key, const char *body);
/* A member of GET /v1/limits/{key}'s "limit" object, as a number. */
double vt_limit_num(const vt_server *s, const char *key, const char *field);
/* The most jobs of flow holding limit key at once, replayed from the audit in the order the
 * rows were written (logged_at): +1 at a claim, -1 when the job ended. A claim's time is when
 * its job's row was written, after it saw the slot free; an end's is its transaction's start,
 * before its commit (sql/migrations/0040_claim_time_when_written.sql), so a claim that found
 * the slot freed comes after the end that freed it. */
long vt_max_in_flight(const char *flow, const char *key);

#endif
