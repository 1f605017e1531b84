/* adjudicator_text.c - the adjudicator's text and regex helpers (session-outcome.md §3-§4):
 * spans, growable strings and string lists owned by one call, trimming, marker removal,
 * ASCII-case-insensitive search, and the PCRE2 matching that bounds every caller pattern by
 * the call's budget; also the enum names of adjudicator.h. Pure: no I/O, no globals that
 * change. */
#define _GNU_SOURCE /* memmem: linear-time substring search (glibc two-way) */
#include "adjudicator_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/util.h"

/* ---- enum names ---- */

#define VD__ENUM_STRING(constant, string) [constant] = string,

static const char *enum_name(const char *const *names, int max, int v)
{
    if (v < 0 || v >= max)
        return "invalid";
    return names[v];
}

static bool enum_parse(const char *const *names, int max, const char *s, int *out)
{
    if (s == NULL)
        return false;
    for (int i = 0; i < max; i++) {
        if (strcmp(names[i], s) == 0) {
            *out = i;
            return true;
        }
    }
    return false;
}

/* Defines the *_name and *_parse pair declared by VD__DECLARE_ENUM in adjudicator.h. */
#define VD__DEFINE_ENUM(type, MAP, MAX)                                                            \
    static const char *const type##_names[MAX] = {MAP(VD__ENUM_STRING)};                           \
    const char *type##_name(type v)                                                                \
    {                                                                                              \
        return enum_name(type##_names, MAX, (int)v);                                               \
    }                                                                                              \
    bool type##_parse(const char *s, type *out)                                                    \
    {                                                                                              \
        int i = 0;                                                                                 \
        if (!enum_parse(type##_names, MAX, s, &i))                                                 \
            return false;                                                                          \
        *out = (type)i;                                                                            \
        return true;                                                                               \
    }

VD__DEFINE_ENUM(vd_termination, VD_TERMINATION_MAP, VD_TERMINATION__MAX)
VD__DEFINE_ENUM(vd_channel, VD_CHANNEL_MAP, VD_CHANNEL__MAX)
VD__DEFINE_ENUM(vd_kill_reason, VD_KILL_REASON_MAP, VD_KILL_REASON__MAX)
VD__DEFINE_ENUM(vd_write_mode, VD_WRITE_MODE_MAP, VD_WRITE_MODE__MAX)
VD__DEFINE_ENUM(vd_cli_subtype, VD_CLI_SUBTYPE_MAP, VD_CLI_SUBTYPE__MAX)
VD__DEFINE_ENUM(vd_session_outcome, VD_SESSION_OUTCOME_MAP, VD_SESSION_OUTCOME__MAX)
VD__DEFINE_ENUM(vd_retry_reason, VD_RETRY_REASON_MAP, VD_RETRY_REASON__MAX)
VD__DEFINE_ENUM(vd_content_state, VD_CONTENT_STATE_MAP, VD_CONTENT_STATE__MAX)
VD__DEFINE_ENUM(vd_infra_exit, VD_INFRA_EXIT_MAP, VD_INFRA_EXIT__MAX)
VD__DEFINE_ENUM(vd_subtype_label, VD_SUBTYPE_LABEL_MAP, VD_SUBTYPE_LABEL__MAX)

/* ---- text helpers ---- */

const struct rxlist vd__adj_no_patterns = {NULL, 0};

/* Appends to a buffer of the call; a failed allocation sets the call's sticky flag. */
void vd__adj_sb_append(struct adj *a, vd_buf *b, const char *s, size_t n)
{
    if (a->oom)
        return;
    vd_buf_append(b, s, n);
    if (b->failed)
        a->oom = true;
}

struct span vd__adj_sb_span(const vd_buf *b)
{
    struct span s = {b->data ? b->data : "", b->len};
    return s;
}

/* Replaces *dst by *src (taking its storage). */
void vd__adj_sb_move(vd_buf *dst, vd_buf *src)
{
    vd_buf_cleanup(dst);
    *dst = *src;
    memset(src, 0, sizeof(*src));
}

void vd__adj_strv_push(struct adj *a, struct strv *v, const char *s, size_t n)
{
    char *copy;
    if (a->oom)
        return;
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        char **grown = realloc(v->v, cap * sizeof *grown);
        if (grown == NULL) {
            a->oom = true;
            return;
        }
        v->v = grown;
        v->cap = cap;
    }
    copy = malloc(n + 1);
    if (copy == NULL) {
        a->oom = true;
        return;
    }
    if (n > 0)
        memcpy(copy, s, n);
    copy[n] = '\0';
    v->v[v->n++] = copy;
}

void vd__adj_strv_free(struct strv *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->v[i]);
    free(v->v);
    v->v = NULL;
    v->n = v->cap = 0;
}

struct span vd__adj_span_of(const char *s)
{
    struct span sp = {s ? s : "", s ? strlen(s) : 0};
    return sp;
}

static bool is_ascii_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* The spec's trim: ASCII whitespace only. */
struct span vd__adj_trim(struct span s)
{
    while (s.len > 0 && is_ascii_ws((unsigned char)s.p[0])) {
        s.p++;
        s.len--;
    }
    while (s.len > 0 && is_ascii_ws((unsigned char)s.p[s.len - 1]))
        s.len--;
    return s;
}

bool vd__adj_blank(struct span s)
{
    return vd__adj_trim(s).len == 0;
}

bool vd__adj_span_eq(struct span x, struct span y)
{
    return x.len == y.len && (x.len == 0 || memcmp(x.p, y.p, x.len) == 0);
}

/* The first occurrence of needle (non-empty) in hay at or after `from`, or NULL. Byte search
 * is code point search here: both sides are valid UTF-8, which is self-synchronising. */
static const char *find(struct span hay, size_t from, struct span needle)
{
    if (needle.len == 0 || from >= hay.len)
        return NULL;
    return memmem(hay.p + from, hay.len - from, needle.p, needle.len);
}

bool vd__adj_contains(struct span hay, struct span needle)
{
    return find(hay, 0, needle) != NULL;
}

/* Whether text is blank once every (non-overlapping, left to right) marker is removed. */
bool vd__adj_blank_without(struct span text, struct span marker)
{
    size_t i = 0;
    while (i < text.len) {
        const char *hit = find(text, i, marker);
        size_t stop = hit ? (size_t)(hit - text.p) : text.len;
        for (; i < stop; i++) {
            if (!is_ascii_ws((unsigned char)text.p[i]))
                return false;
        }
        i = hit ? stop + marker.len : text.len;
    }
    return true;
}

/* Appends text with every marker removed (Python's str.replace(marker, "")) to out. */
void vd__adj_append_without(struct adj *a, vd_buf *out, struct span text, struct span marker)
{
    size_t i = 0;
    while (i < text.len) {
        const char *hit = find(text, i, marker);
        size_t stop = hit ? (size_t)(hit - text.p) : text.len;
        vd__adj_sb_append(a, out, text.p + i, stop - i);
        i = hit ? stop + marker.len : text.len;
    }
}

/* Whether hay contains needle (lower-case ASCII) ignoring ASCII case. */
bool vd__adj_contains_ci(struct span hay, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; n <= hay.len && i <= hay.len - n; i++) {
        size_t k = 0;
        while (k < n) {
            unsigned char c = (unsigned char)hay.p[i + k];
            if (c >= 'A' && c <= 'Z')
                c = (unsigned char)(c - 'A' + 'a');
            if (c != (unsigned char)needle[k])
                break;
            k++;
        }
        if (k == n)
            return true;
    }
    return false;
}

/* Appends the items of v joined by sep to out. */
void vd__adj_append_joined(struct adj *a, vd_buf *out, const struct strv *v, const char *sep)
{
    for (size_t i = 0; i < v->n; i++) {
        if (i > 0)
            vd__adj_sb_append(a, out, sep, strlen(sep));
        vd__adj_sb_append(a, out, v->v[i], strlen(v->v[i]));
    }
}

/* ---- regexes ---- */

static pcre2_code *rx_compile(const char *pattern, int *err)
{
    PCRE2_SIZE off = 0;
    return pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                         PCRE2_UTF | PCRE2_UCP | PCRE2_USE_OFFSET_LIMIT, err, &off, NULL);
}

/* Whether the call's matching budget is spent (sticky). */
static bool over_budget(struct adj *a)
{
    if (!a->budget_exhausted && vd_monotonic() > a->budget_end)
        a->budget_exhausted = true;
    return a->budget_exhausted;
}

/* Unanchored search, one window of start positions per pcre2_match; a NULL (invalid) regex
 * and any match error (a limit) count as no match; a spent budget stops the search. */
bool vd__adj_rx_search(struct adj *a, const pcre2_code *re, struct span text)
{
    PCRE2_SIZE start = 0;
    uint32_t opts = 0;
    if (re == NULL || a->md == NULL)
        return false;
    while (start <= text.len && !over_budget(a)) {
        int rc;
        pcre2_set_offset_limit(a->mctx, start + MATCH_WINDOW - 1);
        rc = pcre2_match(re, (PCRE2_SPTR)text.p, text.len, start, opts, a->md, a->mctx);
        if (rc != PCRE2_ERROR_NOMATCH)
            return rc >= 0;
        opts = PCRE2_NO_UTF_CHECK; /* checked by the first call */
        start += MATCH_WINDOW;
        while (start < text.len && ((unsigned char)text.p[start] & 0xC0) == 0x80)
            start++; /* a start position is a character boundary */
    }
    return false;
}

static void warn_invalid(struct adj *a, const char *field, size_t i, int err)
{
    PCRE2_UCHAR msg[256];
    char line[512];
    int n;
    if (pcre2_get_error_message(err, msg, sizeof msg) < 0)
        snprintf((char *)msg, sizeof msg, "error %d", err);
    n = snprintf(line, sizeof line, "invalid regex in %s[%zu]: %s", field, i, (char *)msg);
    if (n < 0)
        n = 0;
    vd__adj_strv_push(a, &a->warnings, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* Compiles one field's patterns, in input order, warning about each invalid one. */
static void compile_list(struct adj *a, struct rxlist *l, const char **src, size_t n,
                         const char *field)
{
    if (n == 0)
        return;
    l->code = calloc(n, sizeof *l->code);
    if (l->code == NULL) {
        a->oom = true;
        return;
    }
    l->n = n;
    for (size_t i = 0; i < n; i++) {
        int err = 0;
        l->code[i] = rx_compile(src[i] ? src[i] : "", &err);
        if (l->code[i] == NULL && err == PCRE2_ERROR_NOMEMORY)
            a->oom = true;
        else if (l->code[i] == NULL)
            warn_invalid(a, field, i, err);
    }
}

static void free_list(struct rxlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        pcre2_code_free(l->code[i]);
    free(l->code);
    l->code = NULL;
    l->n = 0;
}

/* Compiles every regex of the call up front and sets up bounded matching. */
void vd__adj_init(struct adj *a, const vd_session_report *r)
{
    int err = 0;
    memset(a, 0, sizeof *a);
    a->r = r;
    a->marker = vd__adj_span_of(r->completion_marker);
    a->mctx = pcre2_match_context_create(NULL);
    a->md = pcre2_match_data_create(1, NULL);
    a->budget_end = vd_monotonic() + VD_ADJ_MATCH_BUDGET_MS / 1000.0;
    if (a->mctx == NULL || a->md == NULL ||
        pcre2_set_match_limit(a->mctx, VD_ADJ_MATCH_LIMIT) != 0 ||
        pcre2_set_depth_limit(a->mctx, VD_ADJ_DEPTH_LIMIT) != 0 ||
        pcre2_set_heap_limit(a->mctx, MATCH_HEAP_LIMIT_KIB) != 0)
        a->oom = true;
    a->bold = rx_compile("\\*{1,2}(\\w[\\w-]*)\\*{1,2}(\\s*=)", &err);
    /* The eight stderr regexes of infra_exit as one alternation: the leading (?i) reaches
     * every branch, which changes nothing for the two digit-only ones. */
    a->api = rx_compile("(?i)overloaded|\\b529\\b|\\b503\\b|ECONNRESET|ECONNREFUSED"
                        "|socket hang up|network error|connection reset",
                        &err);
    if (a->bold == NULL || a->api == NULL)
        a->oom = true; /* fixed patterns only fail to compile for lack of memory */
    else
        a->bold_md = pcre2_match_data_create_from_pattern(a->bold, NULL);
    if (a->bold_md == NULL)
        a->oom = true;
    compile_list(a, &a->pats, r->expected_output_patterns, r->n_expected_output_patterns,
                 "expected_output_patterns");
    compile_list(a, &a->when, r->write_behavior.expected_when, r->write_behavior.n_expected_when,
                 "write_behavior.expected_when");
}

void vd__adj_free(struct adj *a)
{
    free_list(&a->pats);
    free_list(&a->when);
    pcre2_code_free(a->bold);
    pcre2_code_free(a->api);
    pcre2_match_data_free(a->md);
    pcre2_match_data_free(a->bold_md);
    pcre2_match_context_free(a->mctx);
    vd__adj_strv_free(&a->warnings);
}

/* Rewrites `**key** =` to `key =` (spec §3, patterns_ok) into out. A match error leaves the
 * text unchanged, as "no match". */
static void normalize(struct adj *a, struct span text, vd_buf *out)
{
    PCRE2_SIZE outlen;
    int rc;
    out->len = 0;
    /* The rewrite only deletes asterisks, so the input length (+ NUL) always suffices. */
    vd__adj_sb_append(a, out, text.p, text.len);
    if (a->oom)
        return;
    outlen = text.len + 1;
    /* The context is shared with vd__adj_rx_search, which leaves its last window's offset
     * limit set: the rewrite covers the whole text. */
    pcre2_set_offset_limit(a->mctx, PCRE2_UNSET);
    rc = pcre2_substitute(a->bold, (PCRE2_SPTR)text.p, text.len, 0, PCRE2_SUBSTITUTE_GLOBAL,
                          a->bold_md, a->mctx, (PCRE2_SPTR) "$1$2", 4, (PCRE2_UCHAR *)out->data,
                          &outlen);
    if (rc < 0) {
        out->len = 0;
        vd__adj_sb_append(a, out, text.p, text.len);
        return;
    }
    out->len = outlen;
}

/* vd__adj_patterns_ok(text, P) of spec §3: every pattern matches the normalised text. */
bool vd__adj_patterns_ok(struct adj *a, struct span text, const struct rxlist *l)
{
    vd_buf norm = {0};
    bool ok = true;
    if (l->n == 0)
        return true;
    normalize(a, text, &norm);
    for (size_t i = 0; ok && i < l->n; i++)
        ok = vd__adj_rx_search(a, l->code[i], vd__adj_sb_span(&norm));
    vd_buf_cleanup(&norm);
    return ok && !a->oom;
}
