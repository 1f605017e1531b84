/* lint.c - the rejection lint (see lint.h): a classifier of reason texts that read like a
 * tooling failure, and the rule that refuses a suspect rejection unless forced. Pure: the
 * facts (tool failures, adjudication, strict mode, evidence found) are read by the caller
 * (service/jobs.c) inside the finishing transaction. */
#include "verdict/lint.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

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

vd_lint_verdict vd_lint_judge(const vd_lint_input *in)
{
    vd_lint_verdict v = {VD_OK, NULL, NULL, false};
    if (in->strict_evidence && !in->has_evidence)
        return (vd_lint_verdict){VD_ERR_MISSING_FIELD, "evidence",
                                 "this flow step is strict: a rejection quotes 'evidence' from "
                                 "the item's payload",
                                 false};
    if (in->strict_evidence && !in->evidence_found)
        return (vd_lint_verdict){VD_ERR_EVIDENCE_NOT_FOUND, "evidence",
                                 "'evidence' is not found in the item's payload", false};
    if (vd_lint_reads_like_tooling(in->reason)) {
        v.field = "reason";
        v.why = "the reason reads like a tooling failure, not a judgement of the source";
    } else if (in->deterministic_failure) {
        v.field = "disposition";
        v.why = "a tool failed deterministically in this job: a tooling failure is not a "
                "reason to reject the source";
    } else if (in->retriable_adjudication) {
        v.field = "disposition";
        v.why = "this job's session was adjudicated retriable: the run failed, not the source";
    }
    if (!v.why)
        return v;
    if (in->force) {
        v.overridden = true;
        v.field = NULL;
        v.why = NULL;
        return v;
    }
    v.rc = VD_ERR_REJECTION_SUSPECT;
    return v;
}
