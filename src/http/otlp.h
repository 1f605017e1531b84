/* otlp.h - optional export of one span per request as OTLP/HTTP JSON
 * (VERDICT_OTLP_ENDPOINT). Recording never blocks a request: spans go to a bounded queue that
 * one background thread sends; a full queue drops the span and counts it. Inside src/http. */
#ifndef VERDICT_OTLP_H
#define VERDICT_OTLP_H

#include <stdbool.h>
#include <stdint.h>

#define VD_OTLP_QUEUE 4096 /* spans waiting to be sent, at most */
#define VD_SPAN_LINKS 8    /* links of one span, at most */

typedef struct vd_span {
    char trace_id[33], span_id[17], parent_span_id[17]; /* parent "" when none */
    unsigned flags;
    char method[12];
    char route[128];     /* the route's pattern, or "" when unmatched */
    char name[64];       /* the route's metrics name */
    char op[12];         /* messaging.operation.type: send, receive, settle, or "" */
    char error_type[48]; /* error.type: the error code of a refusal, or "" */
    char request_id[80];
    int status;
    uint64_t start_ns, end_ns;     /* Unix epoch nanoseconds */
    int n_links;                   /* links: a claim's to its items' earlier claims */
    char links[VD_SPAN_LINKS][49]; /* trace id (32 hex digits) then span id (16) */
} vd_span;

typedef struct vd_otlp vd_otlp;

/* Start the exporter for endpoint ("http://host:port[/path]"; without a path /v1/traces).
 * NULL when endpoint is NULL or cannot be parsed (logged) or the thread cannot start. */
vd_otlp *vd_otlp_start(const char *endpoint);
/* Queue a copy of span; never waits for the network. Thread-safe; x may be NULL (no export). */
void vd_otlp_record(vd_otlp *x, const vd_span *span);
/* Send what is queued for up to 2 s (and the send in flight: its timeouts bound it to 4 s),
 * drop the rest (counted), stop the thread, free x. NULL is fine. */
void vd_otlp_stop(vd_otlp *x);
/* The process's counts since start: spans sent, dropped (queue full), and lost to failed
 * sends. Thread-safe. */
void vd_otlp_counts(uint64_t *exported, uint64_t *dropped, uint64_t *failed);
/* The messaging.operation.type of a route by its metrics name: "send" (register), "receive"
 * (claims), "settle" (dispositions, session outcomes, the holder's release), else "". Pure. */
const char *vd_otlp_operation(const char *route_name);
/* The OTLP/JSON export request for spans[0..n) (malloc'd; NULL when out of memory). Pure. */
char *vd_otlp_json(const vd_span *spans, int n);

#endif
