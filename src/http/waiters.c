/* waiters.c - the registry of parked long-poll claims: one FIFO list under a mutex. A
 * notification wakes the oldest waiters of its flow step (as many as items were announced); a
 * tick thread, every 100 ms, answers the waiters whose deadline passed or whose client hung up
 * (poll for POLLRDHUP on the suspended socket), wakes the waiters owed a wake (a notification
 * or an arrival that found the worker queue full: a burst is spread over the ticks instead of
 * refused), and every retry period wakes the oldest waiter of each flow step (deferred items
 * become claimable by time, without a notification). */
#define _GNU_SOURCE /* POLLRDHUP */
#include "waiters.h"

#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics.h"
#include "verdict/util.h"

#define TICK_MS 100
#define MAX_HEADS 64 /* distinct flow steps retried per tick; the rest on the next ones */

struct vd_waiters {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vd_waiter *head, *tail;
    int count, max, retry_ms;
    uint64_t seq;
    bool stopping;
    double next_retry;
    vd_wake_fn wake;
    void *cls;
    pthread_t thread;
    bool started;
};

static uint64_t hash_of(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void unlink_waiter(vd_waiters *ws, vd_waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        ws->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        ws->tail = w->prev;
    w->prev = w->next = NULL;
    ws->count--;
    vd_metrics_waiters_add(-1);
}

/* Put w back between prev and next (where it was). */
static void relink(vd_waiters *ws, vd_waiter *w, vd_waiter *prev, vd_waiter *next)
{
    w->prev = prev;
    w->next = next;
    if (prev)
        prev->next = w;
    else
        ws->head = w;
    if (next)
        next->prev = w;
    else
        ws->tail = w;
    ws->count++;
    vd_metrics_waiters_add(1);
}

/* Wake w, under the lock. It is unlinked first: once the server has it, a worker may answer
 * it and libmicrohttpd free it at any moment, so nothing here may touch it after a successful
 * wake. When the server cannot take it (its queue is full) it goes back where it was. */
static bool wake_one(vd_waiters *ws, vd_waiter *w, vd_wake why)
{
    vd_waiter *prev = w->prev, *next = w->next;
    unlink_waiter(ws, w);
    if (ws->wake(ws->cls, w, why))
        return true;
    relink(ws, w, prev, next);
    return false;
}

static bool hung_up(int fd)
{
    struct pollfd p = {fd, POLLRDHUP, 0};
    return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static bool seen_step(const uint64_t *heads, int n, uint64_t h)
{
    for (int i = 0; i < n; i++) {
        if (heads[i] == h)
            return true;
    }
    return false;
}

/* One tick, under the lock: deadlines, hang-ups, and the periodic retry when due. */
static void tick(vd_waiters *ws, double now)
{
    uint64_t heads[MAX_HEADS];
    int nheads = 0;
    bool retry = now >= ws->next_retry;
    vd_waiter *w = ws->head;
    if (retry)
        ws->next_retry = now + ws->retry_ms / 1000.0;
    while (w) {
        vd_waiter *next = w->next;
        if (w->until <= now) {
            wake_one(ws, w, VD_WAKE_FINAL);
        } else if (hung_up(w->fd)) {
            wake_one(ws, w, VD_WAKE_GONE);
        } else if (w->owed) {
            w->owed = false;
            if (!wake_one(ws, w, VD_WAKE_RETRY))
                w->owed = true;
        } else if (retry && nheads < MAX_HEADS && !seen_step(heads, nheads, w->hash)) {
            heads[nheads++] = w->hash; /* the oldest of its flow step */
            w->by_tick = true;
            if (!wake_one(ws, w, VD_WAKE_RETRY))
                w->by_tick = false;
        }
        w = next;
    }
}

static void *tick_main(void *arg)
{
    vd_waiters *ws = arg;
    pthread_mutex_lock(&ws->mu);
    while (!ws->stopping) {
        vd_cond_wait_until(&ws->cv, &ws->mu, vd_monotonic() + TICK_MS / 1000.0);
        if (!ws->stopping)
            tick(ws, vd_monotonic());
    }
    pthread_mutex_unlock(&ws->mu);
    return NULL;
}

vd_waiters *vd_waiters_start(int max, int retry_ms, vd_wake_fn wake, void *cls)
{
    vd_waiters *ws = calloc(1, sizeof(*ws));
    if (!ws)
        return NULL;
    ws->max = max;
    ws->retry_ms = retry_ms;
    ws->wake = wake;
    ws->cls = cls;
    pthread_mutex_init(&ws->mu, NULL);
    vd_cond_init(&ws->cv);
    if (pthread_create(&ws->thread, NULL, tick_main, ws) != 0) {
        vd_waiters_free(ws);
        return NULL;
    }
    ws->started = true;
    return ws;
}

uint64_t vd_waiters_seq(vd_waiters *ws)
{
    uint64_t s;
    pthread_mutex_lock(&ws->mu);
    s = ws->seq;
    pthread_mutex_unlock(&ws->mu);
    return s;
}

vd_park vd_waiters_park(vd_waiters *ws, vd_waiter *w, uint64_t seq, bool may_retry)
{
    vd_park rc = VD_PARKED;
    pthread_mutex_lock(&ws->mu);
    if (ws->stopping || ws->count >= ws->max) {
        rc = VD_PARK_REFUSED;
    } else if (may_retry && ws->seq != seq) {
        rc = VD_PARK_RETRY; /* something was announced while it claimed */
    } else {
        w->hash = hash_of(w->flow_step);
        w->next = NULL;
        w->prev = ws->tail;
        if (ws->tail)
            ws->tail->next = w;
        else
            ws->head = w;
        ws->tail = w;
        ws->count++;
        vd_metrics_waiters_add(1);
    }
    pthread_mutex_unlock(&ws->mu);
    return rc;
}

void vd_waiters_notify(vd_waiters *ws, const char *flow_step, long count, bool by_tick)
{
    uint64_t h = hash_of(flow_step);
    long woken = 0;
    pthread_mutex_lock(&ws->mu);
    ws->seq++;
    for (vd_waiter *w = ws->head; w && (count <= 0 || woken < count);) {
        vd_waiter *next = w->next;
        if (w->hash == h && strcmp(w->flow_step, flow_step) == 0) {
            bool was = w->by_tick;
            w->by_tick = by_tick;
            w->owed = false;
            if (!wake_one(ws, w, VD_WAKE_RETRY)) {
                w->by_tick = was;
                w->owed = true; /* the queue is full: the next ticks try it again */
            }
            woken++;
        }
        w = next;
    }
    pthread_mutex_unlock(&ws->mu);
}

int vd_waiters_count(vd_waiters *ws)
{
    int n;
    pthread_mutex_lock(&ws->mu);
    n = ws->count;
    pthread_mutex_unlock(&ws->mu);
    return n;
}

void vd_waiters_drain(vd_waiters *ws)
{
    if (!ws)
        return;
    pthread_mutex_lock(&ws->mu);
    ws->stopping = true;
    pthread_cond_broadcast(&ws->cv);
    for (int i = 0; i < 500 && ws->head; i++) {
        for (vd_waiter *w = ws->head; w;) {
            vd_waiter *next = w->next;
            wake_one(ws, w, VD_WAKE_FINAL);
            w = next;
        }
        if (ws->head) { /* the worker queue is full: give it 10 ms */
            struct timespec ts = {0, 10 * 1000 * 1000};
            pthread_mutex_unlock(&ws->mu);
            nanosleep(&ts, NULL);
            pthread_mutex_lock(&ws->mu);
        }
    }
    if (ws->head) { /* answered without a claim: nothing may stay suspended at the stop */
        vd_logf(VD_LOG_WARN, "%d long-poll claims answered empty at the stop (no worker free)",
                ws->count);
        while (ws->head)
            wake_one(ws, ws->head, VD_WAKE_GONE);
    }
    pthread_mutex_unlock(&ws->mu);
    if (ws->started)
        pthread_join(ws->thread, NULL);
    ws->started = false;
}

void vd_waiters_free(vd_waiters *ws)
{
    if (!ws)
        return;
    if (ws->started)
        vd_waiters_drain(ws);
    pthread_mutex_destroy(&ws->mu);
    pthread_cond_destroy(&ws->cv);
    free(ws);
}
