/* h_reviews.c - human review (docs/decisions/0061-human-review.md): an editor's answer to an
 * item a model parked with request_review (POST /v1/items/{item_id}/review) and the review
 * queue (GET /v1/reviews). One statement each, straight to the store; the question and the
 * answer are transitions, so they are audited like every other change. */
#include "http_internal.h"

#include <stdlib.h>
#include <string.h>

#include "verdict/machine.h"
#include "verdict/store.h"
#include "verdict/store/reviews.h"

/* "decision": retry -> available, processed, rejected. */
static vd_error review_decision(vd_ctx *ctx, vd_field f, vd_item_state *to)
{
    const char *word = NULL;
    vd_error rc = vd_get_string(f, "decision", true, 1, 40, &word);
    if (rc)
        return rc;
    if (strcmp(word, "retry") == 0)
        *to = VD_ITEM_AVAILABLE;
    else if (strcmp(word, "processed") == 0)
        *to = VD_ITEM_PROCESSED;
    else if (strcmp(word, "rejected") == 0)
        *to = VD_ITEM_REJECTED;
    else
        return vd_fail(ctx, VD_ERR_INVALID_FIELD, "decision",
                       "'decision' must be retry, processed or rejected");
    return VD_OK;
}

vd_error vd_h_item_review(vd_ctx *ctx)
{
    static const vd_member members[] = {{"decision", VD_J_STRING}, {"answer", VD_J_STRING}};
    vd_target t;
    vd_item_state to = VD_ITEM_AVAILABLE;
    char *out = NULL, *answer = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_target_read(ctx, "item", &t);
    /* retry needs an answer: the next attempt acts on it */
    if (rc || (rc = VD_MEMBERS_CHECK(t.f, members)) || (rc = review_decision(ctx, t.f, &to)) ||
        (rc = vd_get_redacted(t.f, "answer", to == VD_ITEM_AVAILABLE, 1, VD_REVIEW_ANSWER_MAX,
                              &answer)) ||
        (rc = vd_ctx_db(ctx, &c))) {
        free(answer);
        return rc;
    }
    rc = vd_store_review_one(c, t.id, to, answer, ctx->actor, &out);
    free(answer);
    if (rc == VD_ERR_INVALID_TRANSITION)
        return vd_fail(ctx, rc, NULL,
                       "%s is not in manual_review: only an item waiting for a person can be "
                       "reviewed",
                       t.what);
    return rc ? vd_store_fail(ctx, rc, t.what) : vd_respond_owned(ctx, out);
}

vd_error vd_h_reviews_list(vd_ctx *ctx)
{
    const char *flow_step = NULL;
    int64_t limit = 0;
    char *out = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_query_int(ctx, "limit", 1, 500, 100, &limit);
    if (rc || (rc = vd_query_str(ctx, "flow_step_id", 200, &flow_step)) ||
        (rc = vd_ctx_db(ctx, &c)))
        return rc;
    rc = vd_store_reviews_list(c, flow_step, limit, &out);
    return rc ? vd_store_fail(ctx, rc, NULL) : vd_respond_owned(ctx, out);
}
