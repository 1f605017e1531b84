/* briefing.c - the text of GET /v1/jobs/{id}/briefing (see briefing.h): the item's earlier
 * attempts told in a few sentences a model can act on, runs of attempts that ended the same
 * way told once, bounded to VD_BRIEFING_MAX bytes by leaving out the oldest. Pure. */
#include "verdict/briefing.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/buf.h"
#include "verdict/model_text.h"
#include "verdict/util.h"

#define QUOTE_MAX 161 /* bytes of a quoted text, with its NUL */

static bool same_str(const char *x, const char *y)
{
    return strcmp(x ? x : "", y ? y : "") == 0;
}

/* Whether two attempts ended the same way (status, code, reason, the same tool failures). */
static bool same_end(const vd_briefing_attempt *x, const vd_briefing_attempt *y)
{
    if (!same_str(x->status, y->status) || !same_str(x->reason_code, y->reason_code) ||
        x->n_tools != y->n_tools || (x->n_tools == 0 && !same_str(x->reason, y->reason)))
        return false;
    for (size_t i = 0; i < x->n_tools; i++) {
        if (!same_str(x->tools[i].tool, y->tools[i].tool) ||
            !same_str(x->tools[i].kind, y->tools[i].kind) ||
            !same_str(x->tools[i].last_error, y->tools[i].last_error))
            return false;
    }
    return true;
}

static const char *ended(const char *status)
{
    if (same_str(status, "expired"))
        return "ran out of time (the lease expired)";
    if (same_str(status, "released"))
        return "were given back unfinished";
    return status && *status ? status : "ended";
}

/* One run of attempts a[0..k) that ended the same way; quoted errors and reasons cut at
 * qmax bytes. */
static void tell_run(vd_buf *b, const vd_briefing_attempt *a, size_t k, size_t qmax)
{
    char q[QUOTE_MAX], quoted[QUOTE_MAX], name[VD_MODEL_QUOTE_TOOL + 8];
    if (k == 1)
        vd_buf_printf(b, " Attempt %d %s", a[0].attempt, ended(a[0].status));
    else
        vd_buf_printf(b, " Attempts %d\xe2\x80\x93%d %s", a[0].attempt, a[k - 1].attempt,
                      ended(a[0].status));
    if (a[0].reason_code && *a[0].reason_code)
        vd_buf_printf(b, " (%s)", a[0].reason_code);
    for (size_t i = 0; i < a[0].n_tools; i++) {
        const vd_briefing_tool *t = &a[0].tools[i];
        bool det = same_str(t->kind, "deterministic");
        vd_utf8_scrub(q, sizeof(q), t->last_error ? t->last_error : "");
        vd_model_quote(q, qmax, quoted, sizeof(quoted));
        vd_model_quote(t->tool ? t->tool : "", VD_MODEL_QUOTE_TOOL, name, sizeof(name));
        vd_buf_printf(b, "%s '%s' failed %s ('%s')", i ? ";" : ":", name,
                      det ? "deterministically" : "transiently", quoted);
    }
    if (a[0].n_tools == 0 && a[0].reason && *a[0].reason) {
        vd_utf8_scrub(q, sizeof(q), a[0].reason);
        vd_model_quote(q, qmax, quoted, sizeof(quoted));
        vd_buf_printf(b, ": '%s'", quoted);
    }
    vd_buf_append(b, ".", 1);
}

static bool any_kind(const vd_briefing_attempt *a, size_t n, const char *kind)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t t = 0; t < a[i].n_tools; t++) {
            if (same_str(a[i].tools[t].kind, kind))
                return true;
        }
    }
    return false;
}

/* The briefing told from attempt `from` on, quotes cut at qmax bytes. */
static char *render_from(int attempt, const vd_briefing_attempt *a, size_t n, size_t from,
                         size_t qmax)
{
    vd_buf b = {0};
    vd_buf_printf(&b, "Attempt %d.", attempt);
    if (n == 0)
        vd_buf_printf(&b, " No earlier attempts.");
    if (from > 0)
        vd_buf_printf(&b, " %zu earlier attempt%s left out.", from, from == 1 ? "" : "s");
    for (size_t i = from; i < n;) {
        size_t k = 1;
        while (i + k < n && same_end(&a[i], &a[i + k]))
            k++;
        tell_run(&b, &a[i], k, qmax);
        i += k;
    }
    if (any_kind(a + from, n - from, "deterministic"))
        vd_buf_printf(&b, " Do not reject the source for that; if the tool fails again, call "
                          "defer_item.");
    else if (any_kind(a + from, n - from, "transient"))
        vd_buf_printf(&b, " Those tool failures were transient: calling the tool again may "
                          "succeed.");
    return vd_buf_take(&b);
}

char *vd_briefing_render(int attempt, const vd_briefing_attempt *a, size_t n)
{
    /* shorter quotes first, then fewer attempts (the oldest left out) */
    static const size_t qmax[] = {VD_MODEL_QUOTE_ERROR, VD_MODEL_QUOTE_ERROR / 2, 16};
    for (size_t from = 0; from <= n; from++) {
        for (size_t q = 0; q < sizeof(qmax) / sizeof(qmax[0]); q++) {
            char *text = render_from(attempt, a, n, from, qmax[q]);
            if (!text || strlen(text) <= VD_BRIEFING_MAX || from == n)
                return text;
            free(text);
        }
    }
    return NULL;
}
