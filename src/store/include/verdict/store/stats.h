/* store/stats.h - /v1/stats and the database-derived /metrics families (src/store/sweep.c).
 * Every function takes a borrowed connection (vd_db_acquire), runs parameterised
 * prepared statements and returns VD_OK or an error of the one table; strings returned are
 * malloc'd JSON text the caller frees. */
#ifndef VERDICT_STORE_STATS_H
#define VERDICT_STORE_STATS_H

#include <stddef.h>
#include "verdict/error.h"
#include "verdict/store.h"

/* SPEC §8 /v1/stats (flow_step_id may be NULL for all). */
VD_MUST_USE vd_error vd_store_stats(vd_conn *c, const char *flow_step_id, char **out);
/* The database-derived /metrics families, as samples (rendered by the http layer). */
typedef enum vd_db_family {
    VD_DB_ITEMS,            /* a: flow_step_id, b: state */
    VD_DB_TRANSITIONS,      /* a: cause, b: to_state */
    VD_DB_STUCK_CLAIMS,     /* a: flow_step_id */
    VD_DB_OLDEST_CLAIMABLE, /* a: flow_step_id; seconds */
    VD_DB_INCIDENTS_OPEN,   /* a: flow_step_id, b: tool; open tooling incidents */
    VD_DB_LIMIT_IN_FLIGHT,  /* a: limit key; jobs holding a concurrency slot */
    VD_DB_LIMIT_THROTTLED,  /* a: limit key; 1 while a backoff holds it closed */
    VD_DB_LIMIT_TOKENS,     /* a: limit key; usage reported on its token shards */
    VD_DB_ITEM_USAGE,       /* a: flow_step_id; model tokens reported (input + output) */
    VD_DB_REVIEW_QUESTIONS, /* a: flow_step_id; items waiting on a model's question */
    VD_DB_REVIEW_OLDEST,    /* a: flow_step_id; seconds the oldest question waits (0: none) */
    VD_DB__MAX
} vd_db_family;
typedef struct vd_db_sample {
    vd_db_family family;
    const char *a, *b; /* label values (b may be NULL), owned by the vd_db_metrics */
    long long value;
} vd_db_sample;
typedef struct vd_db_metrics {
    vd_db_sample *s; /* in family order, then by labels */
    size_t n;
    void *owner; /* the result the labels point into */
} vd_db_metrics;
VD_MUST_USE vd_error vd_store_metrics(vd_conn *c, vd_db_metrics *out);
void vd_db_metrics_cleanup(vd_db_metrics *m);

#endif
