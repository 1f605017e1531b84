/* workers.h - the bounded handler pool (workers.c) and the connection guard (guard.c) of
 * the HTTP server. Only src/http/ includes this. */
#ifndef VERDICT_HTTP_WORKERS_H
#define VERDICT_HTTP_WORKERS_H

#include <microhttpd.h>
#include <stdbool.h>

typedef struct vd_workers vd_workers;
typedef void (*vd_work_fn)(void *item);

/* Start `threads` workers that run fn(item) for every pushed item, in order; at most `depth`
 * items wait. NULL when no thread could be started. */
vd_workers *vd_workers_start(int threads, int depth, vd_work_fn fn);
/* Queue item; false (nothing queued) when the queue is full or the pool is stopping. When
 * there is room, accepted(item) runs first, before any worker can take the item. */
bool vd_workers_push(vd_workers *w, void *item, vd_work_fn accepted);
/* Refuse new items (vd_workers_push answers false from now on), run what is queued and join
 * the workers. The pool stays valid for vd_workers_push until vd_workers_free. NULL: no-op. */
void vd_workers_stop(vd_workers *w);
/* Stop (when not stopped yet) and free the pool. NULL is a no-op. */
void vd_workers_free(vd_workers *w);

/* The connection guard: every connection must deliver a request's headers and body within
 * read_timeout_ms of its accept, or, on a kept-alive connection, of the moment its next
 * request line arrived; trickling bytes does not extend it. A kept-alive connection may wait
 * idle_ms after an answer for that request line. A thread checks a few times per read timeout
 * and shuts the socket of a late connection down (libmicrohttpd then closes it as usual). */
typedef struct vd_guard vd_guard;
vd_guard *vd_guard_start(int read_timeout_ms, int idle_ms);
/* The global connection cap, kept by eviction rather than by refusing the newcomer
 * (libmicrohttpd's own limit is set a little above it). When a connection arrives and more
 * than cap are open, one is shut down: the oldest that has not delivered a complete request
 * (no request line first, then incomplete headers), else the longest-idle kept-alive one,
 * else the newcomer itself; a connection being handled is never chosen. Connections that
 * have not had a request answered may hold at most (100 - reserve_percent)% of cap: past it
 * the oldest of them is shut down, so that share of slots stays for connections that
 * complete requests. Call before the daemon starts. */
void vd_guard_set_cap(vd_guard *g, int cap, int reserve_percent);
/* Join the checking thread and free the guard (after the daemon is stopped). */
void vd_guard_stop(vd_guard *g);
/* MHD_OPTION_NOTIFY_CONNECTION callback; cls is the guard. */
void vd_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                     enum MHD_ConnectionNotificationCode code);
/* busy: the request was read (the guard leaves it alone); !busy: it was answered, and the
 * next request's read window starts now. */
void vd_guard_busy(struct MHD_Connection *c, bool busy);
/* The request line of the connection's next request arrived (MHD_OPTION_URI_LOG_CALLBACK):
 * on a kept-alive connection the read window starts now. */
void vd_guard_reading(struct MHD_Connection *c);

#endif
