/* trace.h - W3C Trace Context (https://www.w3.org/TR/trace-context/): reading a request's
 * `traceparent` and `tracestate`, and the ids of the span verdictd makes for each request.
 * Pure and thread-safe; no HTTP, no database. */
#ifndef VERDICT_TRACE_H
#define VERDICT_TRACE_H

#include <stdbool.h>
#include <stddef.h>

#define VD_TRACESTATE_MAX 512 /* the W3C limit is 32 members; longer is dropped, not refused */

typedef struct vd_trace {
    char trace_id[33];       /* 32 lower-case hex digits, never all zero */
    char span_id[17];        /* this request's span: 16 lower-case hex digits */
    char parent_span_id[17]; /* the caller's span ("" when the request had no traceparent) */
    unsigned flags;          /* trace-flags; bit 0: sampled */
    bool remote;             /* trace_id came from the request's traceparent */
    char tracestate[VD_TRACESTATE_MAX + 1]; /* the request's tracestate, kept as is ("" none) */
} vd_trace;

/* Parse a traceparent header value (version 00, or a later version read as its first four
 * fields, as the spec says). On success fills trace_id, parent_span_id and flags of t and
 * returns true; a malformed value (wrong length, upper-case hex, all-zero ids, version ff)
 * returns false and leaves t alone. Pure. */
bool vd_trace_parse(const char *value, vd_trace *t);

/* The trace of a request: its traceparent when valid (remote), else a new random trace id;
 * always a new random span id. tracestate is kept only with a valid traceparent and when it
 * has no control bytes and fits VD_TRACESTATE_MAX. Either header may be NULL. */
void vd_trace_begin(vd_trace *t, const char *traceparent, const char *tracestate);

/* The traceparent to answer with: "00-<trace_id>-<span_id>-<flags>" (56 bytes + NUL). */
void vd_trace_format(const vd_trace *t, char out[56]);

/* Whether s is 32 lower-case hex digits, not all zero (a trace id a query may name). */
bool vd_trace_id_valid(const char *s);

#endif
