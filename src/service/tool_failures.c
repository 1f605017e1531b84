/* tool_failures.c - SPEC §6 (see tool_failures.h): classify, count the same call, decide
 * `retryable`, write the hint, and record it fenced by the claim token. A deterministic
 * failure is never worth a retry; a transient one is, until the loop threshold. */
#include "verdict/tool_failures.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/jobs.h"
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

vd_tool_kind vd_tool_kind_classify(const char *error)
{
    static const char *words[] = {"timeout",          "timed out",  "time out",
                                  "rate limit",       "ratelimit",  "rate-limit",
                                  "too many requests", "connection reset", "econnreset",
                                  "connection refused", "econnrefused", "refused"};
    static const char *codes[] = {"429", "502", "503", "504"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (contains_ci(error, words[i]))
            return VD_TOOL_KIND_TRANSIENT;
    }
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        if (has_code(error, codes[i]))
            return VD_TOOL_KIND_TRANSIENT;
    }
    return VD_TOOL_KIND_DETERMINISTIC;
}

void vd_tool_verdict_decide(vd_tool_kind kind, const char *tool, long repeat_count,
                            int loop_threshold, vd_tool_verdict *out)
{
    out->kind = kind;
    out->repeat_count = repeat_count;
    if (kind == VD_TOOL_KIND_DETERMINISTIC) {
        out->retryable = false;
        snprintf(out->hint, sizeof(out->hint),
                 "Do not call '%s' again in this job: the same input gives the same result. "
                 "Continue without it and answer with what you already have.",
                 tool);
    } else if (repeat_count < loop_threshold) {
        out->retryable = true;
        snprintf(out->hint, sizeof(out->hint),
                 "'%s' failed for a transient reason (network, rate limit or provider); calling "
                 "it again may succeed.",
                 tool);
    } else {
        out->retryable = false;
        snprintf(out->hint, sizeof(out->hint),
                 "Stop calling '%s': this call has failed %ld times in this job. If the task "
                 "cannot be finished without it, call defer_item (the source is still usable), "
                 "not reject_source.",
                 tool, repeat_count);
    }
}

typedef struct record_ctx {
    const vd_config *cfg;
    const vd_tool_failure *f;
    vd_tool_verdict *out;
    char *redacted;
} record_ctx;

static vd_error record_tx(vd_conn *c, void *arg)
{
    record_ctx *r = arg;
    const vd_tool_failure *f = r->f;
    vd_job_snapshot snap;
    long before = 0;
    vd_error rc = vd_store_job_lock(c, f->job_id, f->token, NULL, &snap);
    if (rc)
        goto out;
    if (!snap.found)
        rc = VD_ERR_NOT_FOUND;
    else if (!snap.token_ok || vd_job_claim_taken(&snap))
        rc = VD_ERR_CLAIM_LOST;
    else if (strcmp(snap.status, "processing") != 0)
        rc = VD_ERR_JOB_FINALIZED;
    else if (!snap.holds)
        rc = VD_ERR_CLAIM_LOST;
    if (rc || (rc = vd_store_tool_failure_count(c, f->job_id, f->tool, f->args, &before)))
        goto out;
    vd_tool_kind kind = f->kind == VD_TOOL_KIND_UNKNOWN ? vd_tool_kind_classify(f->error)
                                                        : f->kind;
    vd_tool_verdict_decide(kind, f->tool, before + 1, r->cfg->loop_threshold, r->out);
    rc = vd_store_tool_failure_insert(c, f->job_id, f->tool, f->args, vd_tool_kind_name(kind),
                                      r->out->retryable, f->required, r->redacted);
out:
    vd_job_snapshot_cleanup(&snap);
    return rc;
}

vd_error vd_tool_failure_record(vd_conn *conn, const vd_config *cfg, const vd_tool_failure *f,
                                vd_tool_verdict *out)
{
    record_ctx r = {cfg, f, out, vd_redact(f->error)};
    vd_error rc = r.redacted ? vd_store_tx(conn, record_tx, &r) : VD_ERR_INTERNAL;
    free(r.redacted);
    return rc;
}
