/* workers.c - the handler thread pool: libmicrohttpd's thread only reads and writes sockets;
 * a complete request is queued here (its connection suspended) and run by one of a fixed
 * number of workers. The queue is bounded: a full one refuses at once (the caller answers
 * 503) instead of letting requests wait behind a stuck database or a slow handler. */
#include "workers.h"

#include <pthread.h>
#include <stdlib.h>

#include "verdict/util.h"

struct vd_workers {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void **ring;
    int cap, head, count;
    bool stopping;
    vd_work_fn fn;
    int nthreads;
    pthread_t *threads;
};

static void *worker_main(void *arg)
{
    vd_workers *w = arg;
    for (;;) {
        void *item = NULL;
        pthread_mutex_lock(&w->mu);
        while (w->count == 0 && !w->stopping)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->count == 0) { /* stopping and drained */
            pthread_mutex_unlock(&w->mu);
            return NULL;
        }
        item = w->ring[w->head];
        w->head = (w->head + 1) % w->cap;
        w->count--;
        pthread_mutex_unlock(&w->mu);
        w->fn(item);
    }
}

vd_workers *vd_workers_start(int threads, int depth, vd_work_fn fn)
{
    vd_workers *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->ring = calloc((size_t)depth, sizeof(*w->ring));
    w->threads = calloc((size_t)threads, sizeof(*w->threads));
    if (!w->ring || !w->threads) {
        free(w->ring);
        free(w->threads);
        free(w);
        return NULL;
    }
    w->cap = depth;
    w->fn = fn;
    pthread_mutex_init(&w->mu, NULL);
    vd_cond_init(&w->cv); /* untimed waits; monotonic like every condition variable */
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&w->threads[i], NULL, worker_main, w) != 0)
            break;
        w->nthreads++;
    }
    if (w->nthreads == 0) {
        vd_workers_free(w);
        return NULL;
    }
    return w;
}

bool vd_workers_push(vd_workers *w, void *item, vd_work_fn accepted)
{
    bool ok = false;
    pthread_mutex_lock(&w->mu);
    if (!w->stopping && w->count < w->cap) {
        accepted(item); /* before any worker can see it */
        w->ring[(w->head + w->count) % w->cap] = item;
        w->count++;
        ok = true;
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return ok;
}

void vd_workers_stop(vd_workers *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->nthreads; i++)
        pthread_join(w->threads[i], NULL);
    w->nthreads = 0;
}

void vd_workers_free(vd_workers *w)
{
    if (!w)
        return;
    vd_workers_stop(w);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->ring);
    free(w->threads);
    free(w);
}
