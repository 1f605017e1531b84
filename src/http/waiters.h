/* waiters.h - the registry of parked long-poll claims (waiters.c). A claim with wait_seconds
 * that found nothing is parked here with its connection still suspended and no thread held;
 * it is woken (handed back to the worker pool by the server's wake callback) when a
 * notification names its flow step, by the periodic retry, at its deadline, when its client
 * hangs up, and at shutdown. Only src/http/ includes this. */
#ifndef VERDICT_HTTP_WAITERS_H
#define VERDICT_HTTP_WAITERS_H

#include <stdbool.h>
#include <stdint.h>

#define VD_WAITER_FLOW_STEP_MAX 200

typedef enum vd_wake {
    VD_WAKE_RETRY = 0, /* claim again; park again when there is still nothing */
    VD_WAKE_FINAL,     /* the deadline passed or the server stops: claim once more, answer */
    VD_WAKE_GONE,      /* the client hung up: answer at once, without claiming */
} vd_wake;

/* One parked request; embedded in the server's request, filled in before vd_waiters_park. */
typedef struct vd_waiter {
    struct vd_waiter *prev, *next; /* the FIFO (the registry's) */
    char flow_step[VD_WAITER_FLOW_STEP_MAX + 1];
    uint64_t hash; /* of flow_step (set by vd_waiters_park) */
    double until;  /* vd_monotonic() deadline */
    int fd;        /* the client's socket, watched for a hang-up; -1: none */
    bool by_tick;  /* last woken by the periodic retry (not by a notification) */
    bool owed;     /* a wake found the worker queue full (or it never ran): every tick retries */
} vd_waiter;

/* Hand w back to the server. RETRY and FINAL: true when queued to a worker (false: the queue
 * is full; it stays parked and is tried again on the next tick). GONE: always answered. Runs
 * under the registry's lock: it must not call back into the registry. */
typedef bool (*vd_wake_fn)(void *cls, vd_waiter *w, vd_wake why);

typedef struct vd_waiters vd_waiters;

typedef enum vd_park {
    VD_PARKED = 0,   /* parked: the caller must not touch the request any more */
    VD_PARK_RETRY,   /* a notification arrived since `seq`: claim again at once */
    VD_PARK_REFUSED, /* full or stopping: the caller answers now */
} vd_park;

/* At most max waiters; every waiter is retried at least every retry_ms (the oldest waiter of
 * each flow step is woken; one that then claims wakes the next). Starts the tick thread. */
vd_waiters *vd_waiters_start(int max, int retry_ms, vd_wake_fn wake, void *cls);
/* The notification counter: read it before claiming, pass it to vd_waiters_park. */
uint64_t vd_waiters_seq(vd_waiters *ws);
/* Park w (its flow_step, until and fd set). may_retry: VD_PARK_RETRY is allowed. */
vd_park vd_waiters_park(vd_waiters *ws, vd_waiter *w, uint64_t seq, bool may_retry);
/* A notification: wake up to count (0: all) waiters of flow_step, oldest first. by_tick: the
 * woken ones wake the next in turn when they claim (the chain of the periodic retry). One the
 * worker queue cannot take now is owed the wake: every tick (100 ms) tries it again. */
void vd_waiters_notify(vd_waiters *ws, const char *flow_step, long count, bool by_tick);
/* How many are parked. */
int vd_waiters_count(vd_waiters *ws);
/* Refuse new waiters, wake every parked one with FINAL (retrying a full queue for up to 5 s;
 * those still parked then are woken GONE: answered with no claim) and join the tick thread. The
 * registry stays valid for vd_waiters_park (REFUSED). */
void vd_waiters_drain(vd_waiters *ws);
/* Free (after drain, once no worker can call in). NULL is a no-op. */
void vd_waiters_free(vd_waiters *ws);

#endif
