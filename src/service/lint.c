/* lint.c - the rejection lint (see lint.h): a classifier of reason texts that read like a
 * tooling failure, and the rule that refuses a suspect rejection unless forced. Pure: the
 * facts (tool failures, adjudication, strict mode, evidence found) are read by the caller
 * (service/jobs.c) inside the finishing transaction. */
#include "verdict/lint.h"

#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "template_internal.h"
#include "verdict/templates.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Lower case, '-' and '_' as spaces, runs of spaces as one; at most len - 1 bytes. */
static void normalise(const char *s, char *out, size_t len)
{
    size_t n = 0;
    for (; *s && n + 1 < len; s++) {
        char ch = (*s == '-' || *s == '_' || isspace((unsigned char)*s))
                      ? ' '
                      : (char)tolower((unsigned char)*s);
        if (ch == ' ' && (n == 0 || out[n - 1] == ' '))
            continue;
        out[n++] = ch;
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

/* A 5xx status standing alone ("503", "5xx", not inside a longer number) in s[0..n). */
static bool has_5xx(const char *s, size_t n)
{
    for (size_t i = 0; i + 3 <= n && s[i]; i++) {
        const char *p = s + i;
        bool before = i == 0 || !isalnum((unsigned char)p[-1]);
        if (before && p[0] == '5' && (isdigit((unsigned char)p[1]) || p[1] == 'x') &&
            (isdigit((unsigned char)p[2]) || p[2] == 'x') && !isalnum((unsigned char)p[3]))
            return true;
    }
    return false;
}

/* "http" or "status" followed closely by a 5xx status ("HTTP 503", "HTTP/1.1 502",
 * "status code 500"), not any number further on ("HTTP/1.1 article about 500 recipes"). */
static bool server_error(const char *s)
{
    static const char *const anchors[] = {"http", "status"};
    for (size_t a = 0; a < COUNT(anchors); a++) {
        size_t n = strlen(anchors[a]);
        for (const char *p = strstr(s, anchors[a]); p; p = strstr(p + 1, anchors[a])) {
            size_t rest = strlen(p + n);
            if (has_5xx(p + n, rest < 16 ? rest : 16))
                return true;
        }
    }
    return false;
}

/* phrase as whole words of s: ending a word (a plural "s" allowed), so "exception" does not
 * match "exceptional"; and at a word's start unless any_start ("RuntimeException"). */
static bool has_words(const char *s, const char *phrase, bool any_start)
{
    size_t n = strlen(phrase);
    for (const char *p = strstr(s, phrase); p; p = strstr(p + 1, phrase)) {
        const char *end = p + n;
        if (*end == 's')
            end++;
        if ((any_start || p == s || !isalnum((unsigned char)p[-1])) &&
            !isalnum((unsigned char)*end))
            return true;
    }
    return false;
}

/* phrases that name a failing tool, call, provider or transport, never the source */
static const char *const tooling_phrases[] = {
    "tool error",
    "tool failure",
    "tool failed",
    "tool call failed",
    "tool fail",
    "failed to call",
    "failed calling",
    "error calling",
    "could not call",
    "couldn't call",
    "unable to call",
    "failed to invoke",
    "timeout",
    "timed out",
    "time out",
    "exception",
    "traceback",
    "stack trace",
    "rate limit",
    "ratelimit",
    "too many requests",
    "connection refused",
    "connection reset",
    "econnrefused",
    "econnreset",
    "internal server error",
    "service unavailable",
    "bad gateway",
    "gateway timeout",
    "upsert failed",
    "failed to upsert",
    "failed to write",
    "write failed",
    "api error",
    "provider error",
    "overloaded",
    "http error",
    "permission denied",
    "segfault",
    "failed to fetch",
    "fetch failed",
    "network error",
    "dns error",
    "could not save",
    "couldn't save",
    "unable to save",
    "failed to save",
    "could not be saved",
    "quality gate",
    "api is down",
    "server is down",
    "service is down",
};

bool vd_lint_reads_like_tooling(const char *reason)
{
    /* a reason that is only one of these words says nothing about the source */
    static const char *const bare[] = {"error", "tool", "failed", "failure", "fail", "tool error"};
    char norm[2048];
    if (!reason || !*reason)
        return false;
    normalise(reason, norm, sizeof(norm));
    for (size_t i = 0; i < COUNT(bare); i++) {
        if (strcmp(norm, bare[i]) == 0)
            return true;
    }
    for (size_t i = 0; i < COUNT(tooling_phrases); i++) {
        if (has_words(norm, tooling_phrases[i], false))
            return true;
    }
    /* the tails of exception and error class names */
    if (has_words(norm, "exception", true) || has_words(norm, "timeout", true))
        return true;
    return server_error(norm) || has_words(norm, "5xx", false);
}

/* ---- shared runs of text ---- */

/* s lower-cased (ASCII), runs of whitespace as one space, trimmed (malloc'd; *n its length). */
static char *fold(const char *s, size_t *n)
{
    size_t len = strlen(s), k = 0;
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (isspace(ch)) {
            if (k > 0 && out[k - 1] != ' ')
                out[k++] = ' ';
            continue;
        }
        out[k++] = (char)(ch < 0x80 ? tolower(ch) : ch);
    }
    while (k > 0 && out[k - 1] == ' ')
        k--;
    out[k] = '\0';
    *n = k;
    return out;
}

typedef struct window {
    uint64_t h;
    size_t at;
} window;

static int window_cmp(const void *x, const void *y)
{
    uint64_t a = ((const window *)x)->h, b = ((const window *)y)->h;
    return a < b ? -1 : a > b;
}

#define HASH_BASE 1099511628211ull /* any odd constant; arithmetic mod 2^64 */

/* The rolling hashes of every k-byte window of s[0..n) (n >= k) into w[0..n-k]. */
static void hash_windows(const char *s, size_t n, size_t k, window *w)
{
    uint64_t h = 0, top = 1;
    for (size_t i = 1; i < k; i++)
        top *= HASH_BASE;
    for (size_t i = 0; i < k; i++)
        h = h * HASH_BASE + (unsigned char)s[i];
    w[0] = (window){h, 0};
    for (size_t i = k; i < n; i++) {
        h = (h - (unsigned char)s[i - k] * top) * HASH_BASE + (unsigned char)s[i];
        w[i - k + 1] = (window){h, i - k + 1};
    }
}

/* Whether a k-byte window of a occurs in b (both folded, both at least k long). */
static bool windows_meet(const char *a, size_t na, const char *b, size_t nb, size_t k)
{
    size_t mb = nb - k + 1, ma = na - k + 1;
    window *wb = malloc(mb * sizeof(*wb)), *wa = malloc(ma * sizeof(*wa));
    bool hit = false;
    if (wb && wa) {
        hash_windows(b, nb, k, wb);
        hash_windows(a, na, k, wa);
        qsort(wb, mb, sizeof(*wb), window_cmp);
        for (size_t i = 0; i < ma && !hit; i++) {
            size_t lo = 0, hi = mb;
            while (lo < hi) { /* the first window of b whose hash is not below a's */
                size_t mid = lo + (hi - lo) / 2;
                if (wb[mid].h < wa[i].h)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            for (; lo < mb && wb[lo].h == wa[i].h && !hit; lo++)
                hit = memcmp(a + wa[i].at, b + wb[lo].at, k) == 0;
        }
    }
    free(wb);
    free(wa);
    return hit;
}

bool vd_lint_shares_span(const char *a, const char *b, size_t min)
{
    size_t na = 0, nb = 0;
    char *fa = NULL, *fb = NULL;
    bool hit = false;
    if (!a || !b || min == 0 || strlen(a) < min || strlen(b) < min)
        return false;
    fa = fold(a, &na);
    fb = fold(b, &nb);
    if (fa && fb && na >= min && nb >= min)
        hit = windows_meet(fa, na, fb, nb, min);
    free(fa);
    free(fb);
    return hit;
}

/* The constant words of template text t (neither a mask nor a punctuation mark). */
static int constant_words(const char *t)
{
    int n = 0;
    while (*t) {
        size_t len = strcspn(t, " ");
        if (len > 0 && !vd_tpl_is_mask(t, len) && !vd_tpl_is_punct(t, len))
            n++;
        t += len;
        t += *t == ' ';
    }
    return n;
}

/* Whether w (a window of a text's tokens) mines to template t of shape `shape`, a template
 * specific enough to name one failure (VD_LINT_TEMPLATE_WORDS constant words). */
static bool joins(const char *t, const char *shape, const vd_tpl_msg *w)
{
    char wshape[VD_TPL_SHAPE_MAX + 1], merged[VD_TPL_TEXT_MAX + 1];
    vd_tpl_shape(w, wshape, sizeof(wshape));
    if (strcmp(shape, wshape) != 0)
        return false;
    return vd_tpl_choose(&t, 1, w, merged, sizeof(merged)) == 0 &&
           constant_words(merged) >= VD_LINT_TEMPLATE_WORDS;
}

/* The window of m's tokens [at, at + n) as a message of its own (pointers borrowed). */
static void window_of(const vd_tpl_msg *m, int at, int n, vd_tpl_msg *w)
{
    w->n = n;
    for (int i = 0; i < n; i++) {
        w->tok[i] = m->tok[at + i];
        w->raw[i] = m->raw[at + i];
        w->raw_len[i] = m->raw_len[at + i];
    }
    w->store[0] = '\0';
}

bool vd_lint_same_template(const char *text, const char *error)
{
    char t[VD_TPL_TEXT_MAX + 1], shape[VD_TPL_SHAPE_MAX + 1];
    const char *tp = t;
    bool hit = false;
    if (!text || !error || !*text || !*error)
        return false;
    vd_tpl_msg *me = malloc(3 * sizeof(*me)), *mt = me + 1, *w = me + 2;
    if (!me)
        return false;
    vd_tpl_parse(error, me);
    vd_tpl_parse(text, mt);
    vd_tpl_render(me, t, sizeof(t));
    vd_tpl_shape(me, shape, sizeof(shape));
    /* the text as a whole, or any run of it as long as the failure (the error quoted amid
     * other words), that joins the failure's template */
    for (int at = 0; !hit && me->n > 0 && at + me->n <= mt->n; at++) {
        window_of(mt, at, me->n, w);
        hit = joins(tp, shape, w);
    }
    free(me);
    return hit;
}

bool vd_lint_restates_failure(const char *text, const char *error)
{
    return vd_lint_shares_span(text, error, VD_LINT_SHARED_MIN) ||
           vd_lint_same_template(text, error);
}

/* ---- the judgement ---- */

/* The field (reason or evidence) that restates one of the item's tool failures, or NULL. */
static const char *restated(const vd_lint_input *in)
{
    for (size_t i = 0; i < in->n_failures; i++) {
        if (vd_lint_restates_failure(in->reason, in->failures[i]))
            return "reason";
        if (vd_lint_restates_failure(in->evidence, in->failures[i]))
            return "evidence";
    }
    return NULL;
}

/* Strict mode's refusals, which force does not override; rc VD_OK when none applies. */
static vd_lint_verdict strict_rules(const vd_lint_input *in)
{
    vd_lint_verdict v = {VD_OK, NULL, NULL, false, NULL};
    if (in->strict_evidence && !in->has_evidence)
        return (vd_lint_verdict){VD_ERR_MISSING_FIELD, "evidence",
                                 "this flow step is strict: a rejection quotes 'evidence' from "
                                 "the item's payload",
                                 false, NULL};
    if (in->strict_evidence && !in->evidence_found)
        return (vd_lint_verdict){VD_ERR_EVIDENCE_NOT_FOUND, "evidence",
                                 "'evidence' is not found in the item's payload", false, NULL};
    return v;
}

/* reason_code `other` without evidence quoted from the payload (force waives it). */
static vd_lint_verdict other_rule(const vd_lint_input *in)
{
    vd_lint_verdict v = {VD_OK, NULL, NULL, false, NULL};
    if (!in->code_other || in->force)
        return v;
    if (!in->has_evidence)
        return (vd_lint_verdict){VD_ERR_MISSING_FIELD, "evidence",
                                 "reason_code 'other' needs 'evidence' quoted from the item's "
                                 "payload",
                                 false, NULL};
    if (!in->evidence_found)
        return (vd_lint_verdict){VD_ERR_EVIDENCE_NOT_FOUND, "evidence",
                                 "'evidence' is not found in the item's payload", false, NULL};
    return v;
}

/* Structural evidence that the item's run met tooling trouble: a tool failure on its record
 * (this job or an earlier one) or an open tooling incident in its flow step. */
static bool tooling_on_record(const vd_lint_input *in)
{
    return in->n_failures > 0 || in->deterministic_failure || in->incident_open;
}

/* The first suspicion that applies (field and why set), or none. Tooling words alone never
 * refuse: without evidence on the record they are a signal (v.signal), counted and noted. */
static vd_lint_verdict suspicion(const vd_lint_input *in)
{
    vd_lint_verdict v = {VD_OK, NULL, NULL, false, NULL};
    const char *field = restated(in);
    bool words = vd_lint_reads_like_tooling(in->reason);
    if (field) {
        v.field = field;
        v.why = strcmp(field, "reason") == 0
                    ? "the reason repeats a tool failure of this item: a tooling failure is "
                      "not a reason to reject the source"
                    : "the evidence repeats a tool failure of this item, not the source";
    } else if (words && tooling_on_record(in)) {
        v.field = "reason";
        v.why = "the reason reads like a tooling failure and this item has a tool failure on "
                "record: a tooling failure is not a reason to reject the source";
    } else if (in->deterministic_failure) {
        v.field = "disposition";
        v.why = "a tool failed deterministically in this job: a tooling failure is not a "
                "reason to reject the source";
    } else if (in->retriable_adjudication) {
        v.field = "disposition";
        v.why = "this job's session was adjudicated retriable: the run failed, not the source";
    }
    if (!v.why && words)
        v.signal = VD_LINT_SIGNAL_WORDS;
    return v;
}

vd_lint_verdict vd_lint_judge(const vd_lint_input *in)
{
    vd_lint_verdict v = strict_rules(in);
    if (v.rc)
        return v;
    v = suspicion(in);
    if (v.why && !in->force) {
        v.rc = VD_ERR_REJECTION_SUSPECT;
        return v;
    }
    if (v.why)
        return (vd_lint_verdict){VD_OK, NULL, NULL, true, NULL};
    const char *signal = v.signal;
    v = other_rule(in);
    if (!v.rc)
        v.signal = signal;
    return v;
}
