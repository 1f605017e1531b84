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

#endif
