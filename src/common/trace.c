/* trace.c - W3C Trace Context: the traceparent a request brings, and the ids of the span
 * verdictd makes for it. A malformed header is ignored (a new trace begins), never refused:
 * the spec asks a receiver to restart the trace, not to fail the request. No HTTP, no I/O. */
#include <stdio.h>
#include <string.h>

#include "verdict/trace.h"
#include "verdict/util.h"

static bool lower_hex(const char *s, size_t n)
{
    bool nonzero = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
        nonzero = nonzero || c != '0';
    }
    return nonzero;
}

static unsigned hex_byte(const char *s)
{
    unsigned v = 0;
    for (int i = 0; i < 2; i++) {
        char c = s[i];
        v = v * 16 + (unsigned)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    return v;
}

bool vd_trace_parse(const char *value, vd_trace *t)
{
    size_t n = value ? strlen(value) : 0;
    /* version "-" trace-id "-" parent-id "-" flags: 2+1+32+1+16+1+2 = 55 bytes */
    if (n < 55 || value[2] != '-' || value[35] != '-' || value[52] != '-')
        return false;
    if (!lower_hex(value, 2) && strncmp(value, "00", 2) != 0)
        return false;
    if (strncmp(value, "ff", 2) == 0 || !lower_hex(value + 3, 32) || !lower_hex(value + 36, 16))
        return false;
    if (!lower_hex(value + 53, 2) && strncmp(value + 53, "00", 2) != 0)
        return false;
    /* version 00 is exactly 55 bytes; a later version may add fields after a '-' */
    if (strncmp(value, "00", 2) == 0 ? n != 55 : (n > 55 && value[55] != '-'))
        return false;
    memcpy(t->trace_id, value + 3, 32);
    t->trace_id[32] = '\0';
    memcpy(t->parent_span_id, value + 36, 16);
    t->parent_span_id[16] = '\0';
    t->flags = hex_byte(value + 53);
    return true;
}

static bool printable(const char *s)
{
    for (; *s; s++) {
        if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
            return false;
    }
    return true;
}

void vd_trace_begin(vd_trace *t, const char *traceparent, const char *tracestate)
{
    memset(t, 0, sizeof(*t));
    t->remote = vd_trace_parse(traceparent, t);
    if (!t->remote) {
        do
            vd_random_hex(t->trace_id, 16);
        while (!lower_hex(t->trace_id, 32));
        t->flags = 1; /* verdictd records every request it starts a trace for */
    } else if (tracestate && strlen(tracestate) <= VD_TRACESTATE_MAX && printable(tracestate)) {
        snprintf(t->tracestate, sizeof(t->tracestate), "%s", tracestate);
    }
    do
        vd_random_hex(t->span_id, 8);
    while (!lower_hex(t->span_id, 16));
}

void vd_trace_format(const vd_trace *t, char out[56])
{
    snprintf(out, 56, "00-%s-%s-%02x", t->trace_id, t->span_id, t->flags & 0xffu);
}

bool vd_trace_id_valid(const char *s)
{
    return s && strlen(s) == 32 && lower_hex(s, 32);
}
