/* guard.c - a total deadline on reading a request. libmicrohttpd's connection timeout is an
 * idle timeout that every received byte resets, so a caller trickling a byte a second holds
 * a connection (and its slot) forever. Each connection is registered at accept; a thread
 * shuts down the socket of any connection still reading its request after the deadline. */
#include "workers.h"

#include "metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "verdict/util.h"

typedef struct link {
    struct link *prev, *next;
    vd_guard *g;
    int fd;
    double since; /* when the current request's read (or idle) window opened */
    bool busy;    /* the request is read: being handled or answered */
    bool kept;    /* answered once: kept alive, idle until a request line arrives */
    bool reading; /* a request line arrived: the read window applies */
    bool shut;
} link_t;

struct vd_guard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    link_t head; /* circular list sentinel */
    double timeout;
    double idle;  /* a kept-alive connection's wait for its next request line */
    int cap;      /* connections in all (0: no eviction) */
    int slow_cap; /* of them, with no request answered yet */
    bool stop;
};

/* Shut down every connection past its deadline; called with the mutex held. */
static void reap(vd_guard *g, double now)
{
    for (link_t *l = g->head.next; l != &g->head; l = l->next) {
        double limit = l->kept && !l->reading ? g->idle : g->timeout;
        if (!l->busy && !l->shut && now - l->since > limit) {
            shutdown(l->fd, SHUT_RDWR); /* the fd stays open (MHD closes it): no reuse race */
            l->shut = true;
        }
    }
}

static void *guard_main(void *arg)
{
    vd_guard *g = arg;
    double period = g->timeout / 4 < 0.25 ? g->timeout / 4 : 0.25;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        vd_cond_wait_until(&g->cv, &g->mu, vd_monotonic() + period);
        reap(g, vd_monotonic());
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

vd_guard *vd_guard_start(int read_timeout_ms, int idle_ms)
{
    vd_guard *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->head.next = g->head.prev = &g->head;
    g->timeout = read_timeout_ms / 1000.0;
    g->idle = idle_ms / 1000.0;
    pthread_mutex_init(&g->mu, NULL);
    vd_cond_init(&g->cv);
    if (pthread_create(&g->thread, NULL, guard_main, g) != 0) {
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->cv);
        free(g);
        return NULL;
    }
    return g;
}

void vd_guard_stop(vd_guard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    while (g->head.next != &g->head) { /* MHD reported every close before; defensive */
        link_t *l = g->head.next;
        l->prev->next = l->next;
        l->next->prev = l->prev;
        free(l);
    }
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}

void vd_guard_set_cap(vd_guard *g, int cap, int reserve_percent)
{
    g->cap = cap;
    g->slow_cap = cap - cap * reserve_percent / 100;
}

/* Which connection goes first (lower first); -1: never (being handled, or shut already). */
static int evict_rank(const link_t *l)
{
    if (l->busy || l->shut)
        return -1;
    if (!l->kept)
        return l->reading ? 1 : 0; /* an incomplete request: no request line first */
    return l->reading ? 1 : 2;     /* kept alive: its next request incomplete, or idle */
}

/* The victim (lowest rank, oldest within it), not counting skip; unproven: only among those
 * with no request answered yet. NULL when none. */
static link_t *pick(vd_guard *g, const link_t *skip, bool unproven)
{
    link_t *best = NULL;
    int best_rank = 3;
    for (link_t *l = g->head.next; l != &g->head; l = l->next) {
        int r = evict_rank(l);
        if (l == skip || r < 0 || (unproven && l->kept))
            continue;
        if (!best || r < best_rank || (r == best_rank && l->since < best->since)) {
            best = l;
            best_rank = r;
        }
    }
    return best;
}

/* A connection arrived (newest, linked already): keep the cap and the reserve; under the
 * mutex. */
static void make_room(vd_guard *g, link_t *newest)
{
    int total = 0, unproven = 0;
    link_t *victim = NULL;
    for (link_t *l = g->head.next; l != &g->head; l = l->next) {
        total += !l->shut;
        unproven += !l->shut && !l->kept && !l->busy;
    }
    if (g->cap > 0 && unproven > g->slow_cap)
        victim = pick(g, newest, true);
    else if (g->cap > 0 && total > g->cap)
        victim = pick(g, newest, false);
    else
        return;
    if (!victim)
        victim = newest;
    shutdown(victim->fd, SHUT_RDWR); /* libmicrohttpd closes it, as for a late one */
    victim->shut = true;
    vd_metrics_connection_evicted();
}

static void link_add(vd_guard *g, struct MHD_Connection *c, void **socket_context)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    link_t *l = calloc(1, sizeof(*l));
    if (!l || !ci) {
        free(l);
        return; /* unguarded: the idle timeout still applies */
    }
    l->fd = ci->connect_fd;
    l->g = g;
    l->since = vd_monotonic();
    pthread_mutex_lock(&g->mu);
    l->next = g->head.next;
    l->prev = &g->head;
    g->head.next->prev = l;
    g->head.next = l;
    make_room(g, l);
    pthread_mutex_unlock(&g->mu);
    *socket_context = l;
}

void vd_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                     enum MHD_ConnectionNotificationCode code)
{
    vd_guard *g = cls;
    link_t *l = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        link_add(g, c, socket_context);
        return;
    }
    if (!l)
        return;
    pthread_mutex_lock(&g->mu); /* the fd is closed after this returns */
    l->prev->next = l->next;
    l->next->prev = l->prev;
    pthread_mutex_unlock(&g->mu);
    free(l);
    *socket_context = NULL;
}

void vd_guard_busy(struct MHD_Connection *c, bool busy)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    link_t *l = ci ? ci->socket_context : NULL;
    if (!l)
        return;
    pthread_mutex_lock(&l->g->mu);
    l->busy = busy;
    if (!busy) {
        l->since = vd_monotonic();
        l->kept = true;
        l->reading = false;
    }
    pthread_mutex_unlock(&l->g->mu);
}

void vd_guard_reading(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    link_t *l = ci ? ci->socket_context : NULL;
    if (!l)
        return;
    pthread_mutex_lock(&l->g->mu);
    if (l->kept && !l->reading)
        l->since = vd_monotonic();
    l->reading = true;
    pthread_mutex_unlock(&l->g->mu);
}
