/* listen.h - the store's one LISTEN connection (store/listen.c): a thread that waits for the
 * notifications statements send on the channel verdict_claimable when they make items
 * claimable now (statements.c, VD_SQL_NOTIFY_FROM), and hands each to a callback. It
 * reconnects with a backoff when the connection drops; what was announced meanwhile is lost
 * (the long-poll registry's periodic retry covers it).
 */
#ifndef VERDICT_LISTEN_H
#define VERDICT_LISTEN_H

#include <stdbool.h>

/* One notification: items of flow_step_id may have become claimable; count of them, or 0
 * when unknown (a resumed flow step). Runs on the listener's thread. */
typedef void (*vd_listen_fn)(void *arg, const char *flow_step_id, long count);

typedef struct vd_listener vd_listener;

/* Start the thread: connect to url (borrowed; copied), LISTEN verdict_claimable, call
 * fn(arg, ...) for every notification. NULL when the thread cannot be started. */
vd_listener *vd_store_listen_start(const char *url, vd_listen_fn fn, void *arg);
/* Whether the LISTEN connection is up right now. */
bool vd_store_listen_connected(vd_listener *l);
/* Stop and join the thread, close the connection, free. NULL is a no-op. */
void vd_store_listen_stop(vd_listener *l);

/* Parse a payload "<count> <flow_step_id>" (statements.c); false when malformed. */
bool vd_listen_parse(const char *payload, long *count, const char **flow_step_id);

#endif
