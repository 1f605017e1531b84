/* store/idempotency.h - an Idempotency-Key's scope and the answer it keeps (src/store/items.c,
 * run_idempotent), and their purge. every function takes a borrowed connection (vd_db_acquire),
 * runs parameterised prepared statements and returns VD_OK or an error of the one table; strings
 * returned are malloc'd JSON text the caller frees. */
#ifndef VERDICT_STORE_IDEMPOTENCY_H
#define VERDICT_STORE_IDEMPOTENCY_H

#include <stdbool.h>
#include <stdint.h>
#include "verdict/error.h"
#include "verdict/store.h"

/* Delete idempotency records older than 24 h. */
VD_MUST_USE vd_error vd_store_purge_idempotency(vd_conn *c, long *purged);

/* An Idempotency-Key scope (SPEC §2). key NULL: the call is not idempotent. body is the raw
 * request body; a repeat with the same key and another body is VD_ERR_IDEMPOTENCY_KEY_REUSED. */
typedef struct vd_idem {
    const char *route;
    const char *key_name;
    const char *key;
    const char *body;
} vd_idem;

/* A stored or fresh answer: JSON text (malloc'd, caller frees) and whether it was replayed. */
typedef struct vd_reply {
    char *body;
    bool replayed;
} vd_reply;

#endif
