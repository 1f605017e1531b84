/* sweeper.c - every VERDICT_SWEEP_INTERVAL_SECONDS, close passed leases in batches and purge
 * stale idempotency records. The store statements use SKIP LOCKED, so replicas running this
 * at once never double-apply. */
#include "verdict/sweeper.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "verdict/store.h"
#include "verdict/store/idempotency.h"
#include "verdict/store/sweep.h"
#include "verdict/util.h"

#define SWEEP_BATCH 500

/* Process-wide pass counters; written only at the end of a pass, read by /metrics. */
static pthread_mutex_t totals_mu = PTHREAD_MUTEX_INITIALIZER;
static vd_sweeper_counts totals;

void vd_sweeper_totals(vd_sweeper_counts *out)
{
    pthread_mutex_lock(&totals_mu);
    *out = totals;
    pthread_mutex_unlock(&totals_mu);
}

static void count_pass(vd_error rc, long expired, long purged, long deleted)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    pthread_mutex_lock(&totals_mu);
    totals.runs++;
    totals.failed_runs += rc != VD_OK;
    totals.leases_closed += (unsigned long long)expired;
    totals.idempotency_purged += (unsigned long long)purged;
    totals.retention_deleted += (unsigned long long)deleted;
    totals.last_run_unix = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
    pthread_mutex_unlock(&totals_mu);
}

struct vd_sweeper {
    const vd_config *cfg;
    vd_db *db;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
};

/* When the next retention pass is due (vd_monotonic seconds; 0: the first pass). Only the
 * sweeper thread runs passes. */
static double retention_due;

/* Retention: up to 10 batches; the next pass comes VERDICT_RETENTION_INTERVAL_SECONDS later,
 * or at the next sweep when this one stopped with rows still to delete (a backlog drains at
 * the sweep's pace). Finding nothing old costs a few index blocks, but it needs no doing every
 * few seconds. */
static vd_error retention_pass(const vd_config *cfg, vd_conn *conn, long *deleted_total)
{
    vd_error rc = VD_OK;
    double now = vd_monotonic();
    int batches = 0;
    long deleted = 0;
    if (now < retention_due)
        return VD_OK;
    /* in small batches: a few per pass, so a backlog never holds locks for long */
    do {
        deleted = 0;
        rc = vd_store_retention(conn, cfg->retention_days, SWEEP_BATCH, &deleted);
        *deleted_total += deleted;
    } while (rc == VD_OK && deleted > 0 && ++batches < 10);
    retention_due = rc == VD_OK && deleted > 0 ? now : now + cfg->retention_interval_seconds;
    return rc;
}

vd_error vd_sweeper_run_once(const vd_config *cfg, vd_db *db, long *expired, long *purged)
{
    vd_conn *conn = NULL;
    vd_error rc = vd_db_acquire(db, &conn);
    long n = 0, deleted_total = 0;
    *expired = *purged = 0;
    if (rc) {
        count_pass(rc, 0, 0, 0);
        return rc;
    }
    do {
        rc = vd_store_sweep_leases(conn, SWEEP_BATCH, &n);
        *expired += n;
    } while (rc == VD_OK && n == SWEEP_BATCH);
    if (rc == VD_OK)
        rc = vd_store_purge_idempotency(conn, purged);
    if (rc == VD_OK)
        rc = vd_store_compact_counts(conn);
    if (rc == VD_OK)
        rc = retention_pass(cfg, conn, &deleted_total);
    vd_db_release(db, conn);
    count_pass(rc, *expired, *purged, deleted_total);
    return rc;
}

static void *sweeper_main(void *arg)
{
    vd_sweeper *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        long expired = 0, purged = 0;
        double until;
        pthread_mutex_unlock(&s->mu);
        if (vd_sweeper_run_once(s->cfg, s->db, &expired, &purged) == VD_OK && (expired || purged))
            vd_logf(VD_LOG_INFO, "sweeper: %ld leases closed, %ld idempotency records purged",
                    expired, purged);
        pthread_mutex_lock(&s->mu);
        until = vd_monotonic() + s->cfg->sweep_interval_seconds;
        while (!s->stop && vd_cond_wait_until(&s->cv, &s->mu, until))
            ;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

vd_sweeper *vd_sweeper_start(const vd_config *cfg, vd_db *db)
{
    vd_sweeper *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->cfg = cfg;
    s->db = db;
    pthread_mutex_init(&s->mu, NULL);
    vd_cond_init(&s->cv);
    if (pthread_create(&s->thread, NULL, sweeper_main, s) != 0) {
        vd_logf(VD_LOG_ERROR, "cannot start the sweeper thread");
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        free(s);
        return NULL;
    }
    return s;
}

void vd_sweeper_stop(vd_sweeper *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}
