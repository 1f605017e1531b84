/* tool_failures.c - SPEC §6 (see tool_failures.h): classify, count the same call, decide
 * `retryable`, write the hint, and record it fenced by the claim token. A deterministic
 * failure is never worth a retry; a transient one is, until the loop threshold. */
#include "verdict/tool_failures.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/jobs.h"
#include "verdict/model_text.h"
#include "verdict/store_ops.h"
#include "verdict/util.h"

const char *vd_tool_kind_name(vd_tool_kind k)
{
    static const char *names[VD_TOOL_KIND__MAX] = {"unknown", "deterministic", "transient"};
    return (int)k >= 0 && k < VD_TOOL_KIND__MAX ? names[k] : "unknown";
}

static bool contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    }
    return false;
}

/* A status code standing alone ("HTTP 503", "503 Service"), not inside a longer number. */
static bool has_code(const char *s, const char *code)
{
    size_t n = strlen(code);
    for (const char *p = strstr(s, code); p; p = strstr(p + 1, code)) {
        bool before = p == s || !isdigit((unsigned char)p[-1]);
        bool after = !isdigit((unsigned char)p[n]);
        if (before && after)
            return true;
    }
    return false;
}

static bool any_ci(const char *hay, const char *const *needles, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (contains_ci(hay, needles[i]))
            return true;
    }
    return false;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

vd_tool_kind vd_tool_kind_classify(const char *error)
{
    /* the network refused a connection: try again later */
    static const char *const network[] = {"connection refused", "econnrefused", "connection reset",
                                          "econnreset"};
    /* the provider refused this request: the same request is refused again */
    static const char *const refusal[] = {
        "refused",          "refusal",   "content policy", "content_policy", "usage polic",
        "policy violation", "violates",  "content filter", "content_filter", "safety system",
        "moderation",       "forbidden", "not permitted",  "blocked by",     "declined"};
    static const char *const words[] = {"timeout",           "timed out",   "time out",
                                        "rate limit",        "ratelimit",   "rate-limit",
                                        "too many requests", "temporarily", "overloaded"};
    static const char *const codes[] = {"429", "502", "503", "504"};
    if (any_ci(error, network, COUNT(network)))
        return VD_TOOL_KIND_TRANSIENT;
    if (any_ci(error, refusal, COUNT(refusal)) || has_code(error, "403"))
        return VD_TOOL_KIND_DETERMINISTIC;
    if (any_ci(error, words, COUNT(words)))
        return VD_TOOL_KIND_TRANSIENT;
    for (size_t i = 0; i < COUNT(codes); i++) {
        if (has_code(error, codes[i]))
            return VD_TOOL_KIND_TRANSIENT;
    }
    return VD_TOOL_KIND_DETERMINISTIC;
}

void vd_tool_verdict_decide(vd_tool_kind kind, const char *tool, bool required, long repeat_count,
                            int loop_threshold, vd_tool_verdict *out)
{
    /* a required tool that will not be called again leaves the task unfinishable; the texts
     * keep model_text.h's rules (one next tool, at most 280 characters with the tool_result
     * prefix: test_model_text walks them) */
    static const char required_tail[] =
        " It is required, so the item cannot be finished now: call defer_item with reason_code "
        "tool_error.";
    static const char optional_tail[] = " If the item cannot be finished without it, call "
                                        "defer_item.";
    char name[VD_MODEL_QUOTE_TOOL + 8];
    const char *tail = required ? required_tail : optional_tail;
    vd_model_quote(tool, VD_MODEL_QUOTE_TOOL, name, sizeof(name));
    out->kind = kind;
    out->repeat_count = repeat_count;
    out->retryable = kind != VD_TOOL_KIND_DETERMINISTIC && repeat_count < loop_threshold;
    if (kind == VD_TOOL_KIND_DETERMINISTIC) {
        snprintf(out->hint, sizeof(out->hint),
                 "Do not call '%s' again in this job: the same input gives the same result.%s",
                 name, tail);
    } else if (out->retryable) {
        snprintf(out->hint, sizeof(out->hint),
                 "'%s' failed for a transient reason (network, rate limit or provider); calling "
                 "it again may succeed.",
                 name);
    } else {
        snprintf(out->hint, sizeof(out->hint),
                 "Stop calling '%s': it failed %ld times in this job.%s", name, repeat_count, tail);
    }
}

bool vd_tool_guard_refuses(const vd_tool_guard_input *in)
{
    if (in->force)
        return false;
    if (in->rejects && in->required_failed)
        return true; /* a tooling failure is no reason to reject a source (SPEC §6) */
    return in->completes && in->required_blocked;
}

typedef struct record_ctx {
    const vd_config *cfg;
    const vd_tool_failure *f;
    vd_tool_verdict *out;
    char *redacted;
    char signature[VD_SIGNATURE_MAX + 1];
} record_ctx;

/* The incident part of the record: count the signature, and say so in the hint. */
static vd_error note_incident(vd_conn *c, record_ctx *r, vd_tool_kind kind)
{
    char *flow_step = NULL;
    int64_t item = 0;
    const vd_tool_failure *f = r->f;
    vd_error rc = vd_store_tool_failure_insert(
        c, f->job_id, f->tool, f->args, vd_tool_kind_name(kind), r->out->retryable, f->required,
        r->redacted, r->signature, &flow_step, &item);
    if (rc == VD_OK)
        rc = vd_incident_note(c, flow_step, item, f->tool, r->signature,
                              kind == VD_TOOL_KIND_DETERMINISTIC, r->redacted, &r->out->incident);
    if (rc == VD_OK && r->out->incident.id)
        vd_incident_hint(&r->out->incident, r->out->hint, sizeof(r->out->hint));
    free(flow_step);
    return rc;
}

static vd_error record_tx(vd_conn *c, void *arg)
{
    record_ctx *r = arg;
    const vd_tool_failure *f = r->f;
    vd_job_snapshot snap;
    long before = 0;
    vd_error rc = vd_store_job_lock(c, f->job_id, f->token, NULL, &snap);
    if (rc || (rc = vd_job_fence(&snap)) ||
        (rc = vd_store_tool_failure_count(c, f->job_id, f->tool, f->args, &before)))
        goto out;
    vd_tool_kind kind = f->kind == VD_TOOL_KIND_UNKNOWN ? vd_tool_kind_classify(f->error) : f->kind;
    vd_tool_verdict_decide(kind, f->tool, f->required, before + 1, r->cfg->loop_threshold, r->out);
    rc = note_incident(c, r, kind);
out:
    vd_job_snapshot_cleanup(&snap);
    return rc;
}

vd_error vd_tool_failure_record(vd_conn *conn, const vd_config *cfg, const vd_tool_failure *f,
                                vd_tool_verdict *out)
{
    record_ctx r = {cfg, f, out, vd_redact(f->error), ""};
    memset(&out->incident, 0, sizeof(out->incident));
    if (r.redacted) /* from the redacted text: no secret reaches a signature */
        vd_tool_signature(r.redacted, r.signature, sizeof(r.signature));
    vd_error rc = r.redacted ? vd_store_tx(conn, record_tx, &r) : VD_ERR_INTERNAL;
    free(r.redacted);
    return rc;
}
