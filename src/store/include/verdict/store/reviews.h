/* store/reviews.h - the review queue and an editor's answer (src/store/items.c). Every function
 * takes a borrowed connection (vd_db_acquire), runs parameterised prepared statements and returns
 * VD_OK or an error of the one table; strings returned are malloc'd JSON text the caller frees. */
#ifndef VERDICT_STORE_REVIEWS_H
#define VERDICT_STORE_REVIEWS_H

#include <stdbool.h>
#include <stdint.h>
#include "verdict/domain.h"
#include "verdict/error.h"
#include "verdict/store.h"

/* An editor's answer to an item in manual_review (one statement): to available (retry),
 * processed or rejected, with a transition of cause review whose reason is `answer`
 * (redacted by the caller; may be NULL). *out {"item", "transition"} (malloc'd).
 * VD_ERR_NOT_FOUND; VD_ERR_INVALID_TRANSITION when the item is not in manual_review. */
VD_MUST_USE vd_error vd_store_review_one(vd_conn *c, int64_t id, vd_item_state to,
                                         const char *answer, const char *actor, char **out);
/* The review queue: {"flow_steps": [{flow_step_id, waiting, questions,
 * oldest_question_age_seconds}], "reviews": [up to limit, oldest question first]}. */
VD_MUST_USE vd_error vd_store_reviews_list(vd_conn *c, const char *flow_step_id, int64_t limit,
                                           char **out);

#endif
