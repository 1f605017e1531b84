/* store/coalesce.h - the store's statements for coalesced requests (store/coalesce.c): many
 * single-item claims of one flow step (and one set of limit keys) in one statement. */
#ifndef VERDICT_STORE_COALESCE_H
#define VERDICT_STORE_COALESCE_H

#include <stddef.h>
#include <stdint.h>

#include "verdict/error.h"
#include "verdict/store.h"

/* How claim_many answered a request with an Idempotency-Key (vd_claim_one.idem). */
typedef enum vd_claim_idem {
    VD_CLAIM_OWN = 0,    /* its own claim (or no key) */
    VD_CLAIM_REPLAYED,   /* body: the key's stored answer (or its first request's) */
    VD_CLAIM_REUSED,     /* the key's answer is of another body (VD_ERR_IDEMPOTENCY_KEY_REUSED) */
    VD_CLAIM_UNANSWERED, /* the key is stored without an answer (VD_ERR_DATABASE_UNAVAILABLE) */
} vd_claim_idem;

/* One request's claim of one item: what it asks for, and its answer. */
typedef struct vd_claim_one {
    const char *worker_id, *worker_version, *actor; /* worker_version: or NULL */
    const char *trace_id, *span_id;                 /* the request's trace, or NULL */
    int64_t lease_seconds;
    char *body; /* out: the claim's answer {"claims":[...]} (malloc'd); NULL in a keyed flow step */
    const char *flow_step_id; /* its flow step (claim_many), or NULL: the call's */
    /* claim_many_limited: the request's limit keys (a JSON array) and token estimate (>= 0),
     * or NULL / -1: the call's */
    const char *limit_keys;
    int64_t estimated_tokens;
    /* claim_many: the request's Idempotency-Key and raw body (its scope: route "claims", key
     * name actor), or NULL; and how it was answered (out) */
    const char *idem_key, *idem_body;
    vd_claim_idem idem;
} vd_claim_one;

/* Claim one item for each of reqs[0..n), each in its own flow step (reqs[i].flow_step_id, or
 * flow_step_id when NULL), in one statement, in a transaction of its own or in the caller's open
 * one (claim_many): a flow step's request k gets its k-th claimable item in claim order, or an
 * answer without claims. A keyed flow step's requests claim nothing and keep their body NULL
 * (the caller claims them with limits, or alone with their Idempotency-Key). A request with an
 * Idempotency-Key answers as vd_store_claim would (reqs[i].idem): a stored key its stored
 * answer, a new one its claim, kept with it in the same transaction. On an error no body is
 * set. */
VD_MUST_USE vd_error vd_store_claim_many(vd_conn *c, const char *flow_step_id, vd_claim_one *reqs,
                                         size_t n);

/* The same with limits (claim_many_limited): for requests that name limit keys or a token
 * estimate, each its own (reqs[i].limit_keys and estimated_tokens, or the call's keys_json, a
 * JSON array, or NULL, and estimated_tokens, or -1), or claim in a keyed flow step. One
 * statement picks per flow step, key set and estimate and takes the limit room of every item
 * it hands out; a request left without an item gets an answer without claims. Every body is
 * set. */
VD_MUST_USE vd_error vd_store_claim_many_limited(vd_conn *c, const char *flow_step_id,
                                                 const char *keys_json, int64_t estimated_tokens,
                                                 vd_claim_one *reqs, size_t n);

/* Claim with limits (vd_store_claim_many_limited) those of reqs whose body is NULL and that
 * carry no Idempotency-Key: the requests of keyed flow steps that vd_store_claim_many left.
 * A request with a key that it left keeps its NULL body: the caller claims it alone, where
 * its key's record is written in the claim's own transaction (decision 0100). */
VD_MUST_USE vd_error vd_store_claim_many_rest(vd_conn *c, const char *flow_step_id,
                                              vd_claim_one *reqs, size_t n);

/* The usual limited claims: when every request names the same limit keys and estimate, one
 * statement claims and takes their room (claim_many_take), and only the requests it leaves
 * (in keyed, paused or fair flow steps) claim with vd_store_claim_many_limited, which also
 * takes every other group. Every body is set. */
VD_MUST_USE vd_error vd_store_claim_many_take(vd_conn *c, const char *flow_step_id,
                                              vd_claim_one *reqs, size_t n);

#endif
