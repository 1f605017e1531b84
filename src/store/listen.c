/* listen.c - the one LISTEN connection of the long-poll claims: a thread connects (without
 * blocking: every wait is a poll that a stop request also wakes), runs LISTEN
 * verdict_claimable, then sleeps in poll() on the socket and hands every notification to the
 * callback. A dropped connection (the database restarted) is opened again after a backoff
 * of 0.1 s doubling to 5 s; while it is down the registry's periodic retry keeps waiters right. */
#include "store_internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verdict/store/listen.h"
#include "verdict/util.h"

struct vd_listener {
    char *url;
    vd_listen_fn fn;
    void *arg;
    int wake[2]; /* a byte on wake[1]: stop */
    pthread_t thread;
    int connected; /* atomic */
};

bool vd_listen_parse(const char *payload, long *count, const char **flow_step_id)
{
    char *end = NULL;
    long n;
    if (!payload || payload[0] < '0' || payload[0] > '9')
        return false;
    errno = 0;
    n = strtol(payload, &end, 10);
    if (errno || *end != ' ' || end[1] == '\0')
        return false;
    *count = n;
    *flow_step_id = end + 1;
    return true;
}

static bool stopping(const vd_listener *l)
{
    struct pollfd p = {l->wake[0], POLLIN, 0};
    return poll(&p, 1, 0) > 0;
}

/* Wait until fd is ready for ev, the stop byte arrives, or timeout_ms passes (-1: no bound).
 * 1: ready; 0: timed out; -1: stop (or a poll failure). */
static int wait_for(const vd_listener *l, int fd, short ev, int timeout_ms)
{
    struct pollfd p[2] = {{l->wake[0], POLLIN, 0}, {fd, ev, 0}};
    int n = poll(p, fd >= 0 ? 2 : 1, timeout_ms);
    if (n < 0 && errno == EINTR)
        return 0;
    if (n < 0 || p[0].revents)
        return -1;
    return n > 0 ? 1 : 0;
}

/* Connect without blocking, under a 10 s bound; NULL on failure or stop. */
static PGconn *open_conn(const vd_listener *l)
{
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    double until = vd_monotonic() + 10.0;
    PGconn *pg = vd_pg_connect_start(l->url, "verdictd-listen", "10", "10000");
    while (pg && PQstatus(pg) != CONNECTION_BAD && st != PGRES_POLLING_OK &&
           st != PGRES_POLLING_FAILED) {
        int ms = (int)((until - vd_monotonic()) * 1000.0);
        if (ms <= 0 ||
            wait_for(l, PQsocket(pg), st == PGRES_POLLING_READING ? POLLIN : POLLOUT, ms) != 1)
            break;
        st = PQconnectPoll(pg);
    }
    if (pg && st == PGRES_POLLING_OK && PQsetnonblocking(pg, 1) == 0)
        return pg;
    PQfinish(pg);
    return NULL;
}

/* Send LISTEN and wait (bounded, stoppable) for its result; false when it failed. */
static bool subscribe(const vd_listener *l, PGconn *pg)
{
    bool ok = false;
    PGresult *res = NULL;
    double until = vd_monotonic() + 10.0;
    if (!PQsendQuery(pg, "LISTEN verdict_claimable"))
        return false;
    while (PQflush(pg) == 1) {
        if (wait_for(l, PQsocket(pg), POLLOUT, 1000) < 0 || vd_monotonic() > until)
            return false;
    }
    for (;;) {
        while (PQisBusy(pg)) {
            int ms = (int)((until - vd_monotonic()) * 1000.0);
            if (ms <= 0 || wait_for(l, PQsocket(pg), POLLIN, ms) != 1 || !PQconsumeInput(pg))
                return false;
        }
        res = PQgetResult(pg);
        if (!res)
            return ok;
        ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        PQclear(res);
    }
}

/* Hand every notification that has arrived to the callback. */
static void deliver(vd_listener *l, PGconn *pg)
{
    PGnotify *n = PQnotifies(pg);
    while (n) {
        long count = 0;
        const char *fs = NULL;
        if (vd_listen_parse(n->extra, &count, &fs))
            l->fn(l->arg, fs, count);
        else
            vd_logf(VD_LOG_WARN, "listen: ignored a malformed notification '%.80s'", n->extra);
        PQfreemem(n);
        n = PQnotifies(pg);
    }
}

/* Wait for notifications until the connection drops or a stop is asked for. */
static void serve(vd_listener *l, PGconn *pg)
{
    for (;;) {
        int w = wait_for(l, PQsocket(pg), POLLIN, -1);
        if (w < 0)
            return;
        if (w == 0)
            continue;
        if (!PQconsumeInput(pg) || PQstatus(pg) != CONNECTION_OK)
            return;
        deliver(l, pg);
    }
}

static void *listen_main(void *arg)
{
    vd_listener *l = arg;
    int backoff_ms = 100;
    bool warned = false;
    while (!stopping(l)) {
        PGconn *pg = open_conn(l);
        if (pg && subscribe(l, pg)) {
            __atomic_store_n(&l->connected, 1, __ATOMIC_SEQ_CST);
            vd_logf(VD_LOG_INFO, "listen: waiting for verdict_claimable notifications");
            backoff_ms = 100;
            warned = false;
            deliver(l, pg); /* anything that came with the LISTEN's answer */
            serve(l, pg);
            __atomic_store_n(&l->connected, 0, __ATOMIC_SEQ_CST);
        } else if (!warned && !stopping(l)) {
            vd_logf(VD_LOG_WARN,
                    "listen: cannot LISTEN (%s); long-poll claims rely on their "
                    "periodic retry until it is back",
                    pg ? PQerrorMessage(pg) : "no connection");
            warned = true;
        }
        PQfinish(pg);
        if (wait_for(l, -1, 0, backoff_ms) < 0)
            break;
        backoff_ms = backoff_ms * 2 > 5000 ? 5000 : backoff_ms * 2;
    }
    return NULL;
}

vd_listener *vd_store_listen_start(const char *url, vd_listen_fn fn, void *arg)
{
    vd_listener *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->fn = fn;
    l->arg = arg;
    l->url = strdup(url);
    if (!l->url || pipe(l->wake) != 0) {
        free(l->url);
        free(l);
        return NULL;
    }
    if (pthread_create(&l->thread, NULL, listen_main, l) != 0) {
        close(l->wake[0]);
        close(l->wake[1]);
        free(l->url);
        free(l);
        return NULL;
    }
    return l;
}

bool vd_store_listen_connected(vd_listener *l)
{
    return l && __atomic_load_n(&l->connected, __ATOMIC_SEQ_CST) == 1;
}

void vd_store_listen_stop(vd_listener *l)
{
    char b = 1;
    if (!l)
        return;
    while (write(l->wake[1], &b, 1) < 0 && errno == EINTR) {
    }
    pthread_join(l->thread, NULL);
    close(l->wake[0]);
    close(l->wake[1]);
    free(l->url);
    free(l);
}
