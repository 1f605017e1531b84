/* coalesce.h - one statement for many concurrent requests (service/coalesce.c). Requests of
 * one group (e.g. single-item claims of one flow step) submitted while the group's statement
 * is in flight wait together and are served by its next statement, all of them at once; a
 * request that finds its group idle is handed to a runner at once. Runners are threads of the
 * coalescer's own; the caller's thread never waits on the database. Knows nothing of HTTP. */
#ifndef VERDICT_COALESCE_H
#define VERDICT_COALESCE_H

#include <stdbool.h>
#include <stddef.h>

/* The group key's longest length (longer keys are refused by vd_coalescer_submit). */
#define VD_COALESCE_GROUP_MAX 255

typedef struct vd_coalescer vd_coalescer;

/* Serve items[0..n) of group `group` (n >= 1, at most max_batch) with one statement and
 * answer each of them; runs on a runner thread, never twice at once for one group beyond
 * max_in_flight. It owns the items from here. */
typedef void (*vd_coalesce_fn)(void *arg, const char *group, void **items, size_t n);

/* Start `runners` runner threads; a group has at most max_in_flight statements in flight and
 * each takes at most max_batch items, oldest first. NULL when out of memory or threads. */
vd_coalescer *vd_coalescer_start(int runners, int max_batch, int max_in_flight, vd_coalesce_fn fn,
                                 void *arg);
/* How many groups may have a cap of their own (vd_coalescer_cap). */
#define VD_COALESCE_CAPS 4
/* From now on, each statement of group takes at most max_batch items (no more than the
 * coalescer's own max_batch): for a group whose statement costs more per item past some run.
 * False when max_batch is out of range, the key too long, or VD_COALESCE_CAPS groups have a
 * cap already. Call before submitting to the group. */
bool vd_coalescer_cap(vd_coalescer *c, const char *group, int max_batch);
/* Queue item in group: a runner takes it with the group's next statement. False (nothing
 * queued) when the coalescer is stopping or the key is too long. */
bool vd_coalescer_submit(vd_coalescer *c, const char *group, void *item);
/* Whether the caller may serve one item of group itself, now, on its own thread: true when the
 * group has nothing waiting and nothing in flight (it then counts as a statement in flight; the
 * caller must call vd_coalescer_led when done). A lone request so pays no hand-off; requests
 * that arrive meanwhile wait and go to a runner together once it is done. */
bool vd_coalescer_lead(vd_coalescer *c, const char *group);
/* The caller's statement of vd_coalescer_lead is done (it served one item). */
void vd_coalescer_led(vd_coalescer *c, const char *group);
/* Keep the statement the caller runs for group (inside the coalescer's fn, or between
 * vd_coalescer_lead and vd_coalescer_led) in flight beyond that call: it goes on elsewhere
 * (the non-blocking executor) and its slot stays taken, so max_in_flight still bounds the
 * group's statements, until vd_coalescer_done. Call before handing the statement on; false
 * (nothing kept) when the caller has no statement of group in flight. */
bool vd_coalescer_keep(vd_coalescer *c, const char *group);
/* The statement kept by vd_coalescer_keep is over: its slot is free. items[0..n) (n may be 0)
 * are items it gave back unserved: they go to the front of the group, oldest first, for a
 * runner (taken even while stopping). False only when they could not be queued (out of
 * memory): the caller then serves them itself. Any thread. */
bool vd_coalescer_done(vd_coalescer *c, const char *group, void **items, size_t n);
/* Refuse new items, serve every queued one, wait for the kept statements (and serve what they
 * give back) and join the runners. NULL: no-op. */
void vd_coalescer_stop(vd_coalescer *c);
/* Stop (when not stopped yet) and free. NULL: no-op. */
void vd_coalescer_free(vd_coalescer *c);

/* What the coalescer did so far: statements run, items served, and the largest group. */
typedef struct vd_coalesce_stats {
    long statements, items, largest;
} vd_coalesce_stats;
vd_coalesce_stats vd_coalescer_stats(vd_coalescer *c);

#endif
