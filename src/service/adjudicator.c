/* adjudicator.c - the session-outcome adjudicator of session-outcome.md, §2-§5.
 *
 * Parses the agent's stdout (§2), then runs the procedure of §4 on plain C structs. Pure: no
 * I/O, no mutable globals, every allocation belongs to one call. This is the one service file
 * that includes cJSON, the exception to "only http includes cJSON": the agent's stdout is
 * domain data (NDJSON stream-json), not a request body. Each stdout line is checked against
 * strict RFC 8259 first (by the scanner request bodies use too, json_scan.h), because cJSON alone would accept `01`, raw control characters and
 * `\u0000`. Regexes are PCRE2 (UTF|UCP), compiled once per call.
 */
#define _GNU_SOURCE /* memmem: linear-time substring search (glibc two-way) */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "verdict/adjudicator.h"
#include "verdict/json_scan.h"
#include "verdict/util.h"

#include <cjson/cJSON.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds every PCRE2 match: a pathological caller pattern fails (counts as "no match") in
 * milliseconds instead of backtracking for hours or taking gigabytes of heap. PCRE2 counts
 * the match limit afresh at every start position, so a search is run a window of start
 * positions at a time (pcre2_set_offset_limit) and the call's matching budget is checked
 * between windows: a window costs at most MATCH_WINDOW x VD_ADJ_MATCH_LIMIT steps. */
#define MATCH_HEAP_LIMIT_KIB 65536u
#define MATCH_WINDOW 32u
/* Same nesting limit as cJSON's parser, so the strict check and cJSON agree. */
#define JSON_MAX_DEPTH 1000

/* Needle of the context-exhaustion checks; compared ASCII-case-insensitively, which equals
 * Python's lower() for this needle (no non-ASCII code point lowers into these letters except
 * U+0130, whose lowering adds a combining dot and so cannot complete "is"). */
#define PROMPT_TOO_LONG "prompt is too long"

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

/* ---- per-call state ---- */

/* A growable NUL-terminated string; p == NULL reads as "". */
struct sbuf {
    char *p;
    size_t len, cap;
};

/* An owning list of heap strings. */
struct strv {
    char **v;
    size_t n, cap;
};

/* A borrowed slice of text; p is never NULL. */
struct span {
    const char *p;
    size_t len;
};

/* The caller's regexes of one field, compiled; code[i] is NULL when pattern i is invalid. */
struct rxlist {
    pcre2_code **code;
    size_t n;
};

/* The session `s` of the spec, owned by the call. */
struct sess {
    vd_cli_subtype subtype;
    bool is_error;
    struct sbuf result;
    struct strv errors;
    struct strv messages; /* assistant_messages */
    size_t write_calls;
    bool thinking_only;
    bool ctx_flag; /* s.context_exhausted */
    bool blank_stdout;
};

/* One adjudication call: the report, its compiled regexes, and a sticky out-of-memory flag
 * (helpers become no-ops once it is set; the entry point turns it into VD_ERR_INTERNAL). */
struct adj {
    const vd_session_report *r;
    struct span marker;
    struct rxlist pats; /* expected_output_patterns */
    struct rxlist when; /* write_behavior.expected_when */
    pcre2_code *bold;   /* the **key** = normalisation of patterns_ok */
    pcre2_code *api;    /* the API-error stderr regexes, as one alternation */
    pcre2_match_data *md;
    pcre2_match_data *bold_md;
    pcre2_match_context *mctx;
    struct strv warnings;
    bool oom;
    double budget_end;    /* vd_monotonic() time the call's matching must end by */
    bool budget_exhausted; /* a search was cut off by it: the call fails */
};

/* The running verdict of §4. */
struct verdict {
    bool success;
    bool retry;
    vd_retry_reason reason;
    vd_subtype_label label;
};

/* ---- text helpers ---- */

static const struct rxlist no_patterns = {NULL, 0};

static void sb_append(struct adj *a, struct sbuf *b, const char *s, size_t n)
{
    if (a->oom)
        return;
    if (n > SIZE_MAX / 2 - b->len) {
        a->oom = true;
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        char *p;
        while (cap < b->len + n + 1)
            cap *= 2;
        p = realloc(b->p, cap);
        if (p == NULL) {
            a->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n > 0)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_free(struct sbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

static struct span sb_span(const struct sbuf *b)
{
    struct span s = {b->p ? b->p : "", b->len};
    return s;
}

/* Replaces *dst by *src (taking its storage). */
static void sb_move(struct sbuf *dst, struct sbuf *src)
{
    sb_free(dst);
    *dst = *src;
    src->p = NULL;
    src->len = src->cap = 0;
}

static void strv_push(struct adj *a, struct strv *v, const char *s, size_t n)
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

static void strv_free(struct strv *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->v[i]);
    free(v->v);
    v->v = NULL;
    v->n = v->cap = 0;
}

static struct span span_of(const char *s)
{
    struct span sp = {s ? s : "", s ? strlen(s) : 0};
    return sp;
}

static bool is_ascii_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* The spec's trim: ASCII whitespace only. */
static struct span trim(struct span s)
{
    while (s.len > 0 && is_ascii_ws((unsigned char)s.p[0])) {
        s.p++;
        s.len--;
    }
    while (s.len > 0 && is_ascii_ws((unsigned char)s.p[s.len - 1]))
        s.len--;
    return s;
}

static bool blank(struct span s)
{
    return trim(s).len == 0;
}

static bool span_eq(struct span x, struct span y)
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

static bool contains(struct span hay, struct span needle)
{
    return find(hay, 0, needle) != NULL;
}

/* Whether text is blank once every (non-overlapping, left to right) marker is removed. */
static bool blank_without(struct span text, struct span marker)
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
static void append_without(struct adj *a, struct sbuf *out, struct span text, struct span marker)
{
    size_t i = 0;
    while (i < text.len) {
        const char *hit = find(text, i, marker);
        size_t stop = hit ? (size_t)(hit - text.p) : text.len;
        sb_append(a, out, text.p + i, stop - i);
        i = hit ? stop + marker.len : text.len;
    }
}

/* Whether hay contains needle (lower-case ASCII) ignoring ASCII case. */
static bool contains_ci(struct span hay, const char *needle)
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
static void append_joined(struct adj *a, struct sbuf *out, const struct strv *v, const char *sep)
{
    for (size_t i = 0; i < v->n; i++) {
        if (i > 0)
            sb_append(a, out, sep, strlen(sep));
        sb_append(a, out, v->v[i], strlen(v->v[i]));
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
static bool rx_search(struct adj *a, const pcre2_code *re, struct span text)
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
    strv_push(a, &a->warnings, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
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
static void adj_init(struct adj *a, const vd_session_report *r)
{
    int err = 0;
    memset(a, 0, sizeof *a);
    a->r = r;
    a->marker = span_of(r->completion_marker);
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

static void adj_free(struct adj *a)
{
    free_list(&a->pats);
    free_list(&a->when);
    pcre2_code_free(a->bold);
    pcre2_code_free(a->api);
    pcre2_match_data_free(a->md);
    pcre2_match_data_free(a->bold_md);
    pcre2_match_context_free(a->mctx);
    strv_free(&a->warnings);
}

/* Rewrites `**key** =` to `key =` (spec §3, patterns_ok) into out. A match error leaves the
 * text unchanged, as "no match". */
static void normalize(struct adj *a, struct span text, struct sbuf *out)
{
    PCRE2_SIZE outlen;
    int rc;
    out->len = 0;
    /* The rewrite only deletes asterisks, so the input length (+ NUL) always suffices. */
    sb_append(a, out, text.p, text.len);
    if (a->oom)
        return;
    outlen = text.len + 1;
    rc = pcre2_substitute(a->bold, (PCRE2_SPTR)text.p, text.len, 0, PCRE2_SUBSTITUTE_GLOBAL,
                          a->bold_md, a->mctx, (PCRE2_SPTR) "$1$2", 4, (PCRE2_UCHAR *)out->p,
                          &outlen);
    if (rc < 0) {
        out->len = 0;
        sb_append(a, out, text.p, text.len);
        return;
    }
    out->len = outlen;
}

/* patterns_ok(text, P) of spec §3: every pattern matches the normalised text. */
static bool patterns_ok(struct adj *a, struct span text, const struct rxlist *l)
{
    struct sbuf norm = {0};
    bool ok = true;
    if (l->n == 0)
        return true;
    normalize(a, text, &norm);
    for (size_t i = 0; ok && i < l->n; i++)
        ok = rx_search(a, l->code[i], sb_span(&norm));
    sb_free(&norm);
    return ok && !a->oom;
}

/* ---- strict JSON check: the shared scanner (src/common/json_scan.c) ---- */

/* Whether text is exactly one JSON object (NaN, Infinity, trailing garbage: not JSON). */
static bool is_json_object(struct span text)
{
    return vd_json_check(text.p, text.len, JSON_MAX_DEPTH, VD_JSON_OBJECT_ONLY, NULL);
}

/* Parses text as one JSON object; NULL when it is not one. cJSON failing on text the strict
 * check accepted can only be a failed allocation. */
static cJSON *parse_object(struct adj *a, struct span text, struct sbuf *scratch)
{
    cJSON *obj;
    if (!is_json_object(text))
        return NULL;
    scratch->len = 0;
    sb_append(a, scratch, text.p, text.len);
    if (a->oom)
        return NULL;
    obj = cJSON_ParseWithOpts(scratch->p, NULL, 1);
    if (obj == NULL)
        a->oom = true;
    return obj;
}

/* ---- parsing stdout (§2) ---- */

/* The string value of key (first occurrence, case-sensitive), or NULL. */
static const char *str_item(const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(it) && it->valuestring != NULL ? it->valuestring : NULL;
}

static bool str_is(const cJSON *obj, const char *key, const char *want)
{
    const char *s = str_item(obj, key);
    return s != NULL && strcmp(s, want) == 0;
}

static void add_turn_text(struct adj *a, struct sess *s, struct span text)
{
    text = trim(text);
    if (text.len > 0)
        strv_push(a, &s->messages, text.p, text.len);
}

/* An assistant turn whose message.content is an array of blocks. */
static void read_blocks(struct adj *a, const cJSON *content, struct sess *s)
{
    struct sbuf text = {0};
    bool any_text = false, any_tool = false, any_thinking = false;
    const cJSON *block;
    cJSON_ArrayForEach(block, content)
    {
        const char *type = cJSON_IsObject(block) ? str_item(block, "type") : NULL;
        const char *t;
        if (type == NULL)
            continue;
        t = str_item(block, "text");
        if (strcmp(type, "text") == 0) {
            /* A non-string text counts as "": the block still exists. */
            if (any_text)
                sb_append(a, &text, "\n", 1);
            any_text = true;
            sb_append(a, &text, t ? t : "", t ? strlen(t) : 0);
        } else if (strcmp(type, "tool_use") == 0) {
            any_tool = true;
            if (str_is(block, "name", "Write") || str_is(block, "name", "Edit"))
                s->write_calls++;
        } else if (strcmp(type, "thinking") == 0 || strcmp(type, "redacted_thinking") == 0) {
            any_thinking = true;
        }
    }
    if (any_thinking && !any_text && !any_tool)
        s->thinking_only = true;
    add_turn_text(a, s, sb_span(&text));
    sb_free(&text);
}

/* A flat assistant record (no `message`) reporting output_tokens 0 and "prompt is too long". */
static void read_flat_exhaustion(const cJSON *obj, struct sess *s)
{
    const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(obj, "output_tokens");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(obj, "content");
    const cJSON *block;
    if (!cJSON_IsNumber(tokens) || tokens->valuedouble != 0.0 || !cJSON_IsArray(content))
        return;
    cJSON_ArrayForEach(block, content)
    {
        const char *t = cJSON_IsObject(block) ? str_item(block, "text") : NULL;
        if (t != NULL && str_is(block, "type", "text") && contains_ci(span_of(t), PROMPT_TOO_LONG))
            s->ctx_flag = true;
    }
}

static void read_assistant(struct adj *a, const cJSON *obj, struct sess *s)
{
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(obj, "message");
    const cJSON *content;
    if (msg == NULL) {
        read_flat_exhaustion(obj, s);
        return;
    }
    if (!cJSON_IsObject(msg))
        return;
    content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (cJSON_IsArray(content))
        read_blocks(a, content, s);
    else if (cJSON_IsString(content) && content->valuestring != NULL)
        add_turn_text(a, s, span_of(content->valuestring));
}

/* `result` of a result record: a string as is; an array: the text of its text blocks joined
 * by "\n"; anything else: "". */
static void append_result_field(struct adj *a, struct sbuf *out, const cJSON *res)
{
    const cJSON *el;
    bool first = true;
    if (cJSON_IsString(res) && res->valuestring != NULL) {
        sb_append(a, out, res->valuestring, strlen(res->valuestring));
        return;
    }
    if (!cJSON_IsArray(res))
        return;
    cJSON_ArrayForEach(el, res)
    {
        const char *t;
        if (!cJSON_IsObject(el) || !str_is(el, "type", "text"))
            continue;
        t = str_item(el, "text");
        if (!first)
            sb_append(a, out, "\n", 1);
        first = false;
        sb_append(a, out, t ? t : "", t ? strlen(t) : 0);
    }
}

static void read_result(struct adj *a, const cJSON *obj, struct sess *s)
{
    const cJSON *errors = cJSON_GetObjectItemCaseSensitive(obj, "errors");
    const cJSON *el;
    vd_cli_subtype sub = VD_CLI_SUBTYPE_UNKNOWN;
    s->subtype =
        vd_cli_subtype_parse(str_item(obj, "subtype"), &sub) ? sub : VD_CLI_SUBTYPE_UNKNOWN;
    s->is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, "is_error"));
    s->result.len = 0;
    append_result_field(a, &s->result, cJSON_GetObjectItemCaseSensitive(obj, "result"));
    if (!cJSON_IsArray(errors))
        return;
    cJSON_ArrayForEach(el, errors)
    {
        if (cJSON_IsString(el) && el->valuestring != NULL)
            strv_push(a, &s->errors, el->valuestring, strlen(el->valuestring));
    }
}

/* §2.2: reads every line; returns the last result record (the caller deletes it) or NULL. */
static cJSON *scan_lines(struct adj *a, struct span all, struct sess *s)
{
    struct sbuf scratch = {0};
    cJSON *last = NULL;
    size_t i = 0;
    while (i < all.len && !a->oom) {
        const char *nl = memchr(all.p + i, '\n', all.len - i);
        size_t end = nl ? (size_t)(nl - all.p) : all.len;
        struct span line = trim((struct span){all.p + i, end - i});
        cJSON *obj;
        i = end + 1;
        if (line.len == 0)
            continue;
        obj = parse_object(a, line, &scratch);
        if (str_is(obj, "type", "result")) {
            cJSON_Delete(last);
            last = obj;
            continue;
        }
        if (str_is(obj, "type", "assistant"))
            read_assistant(a, obj, s);
        cJSON_Delete(obj);
    }
    sb_free(&scratch);
    return last;
}

static void parse_stdout(struct adj *a, const char *text, struct sess *s)
{
    struct span all = span_of(text);
    struct sbuf scratch = {0};
    cJSON *res = NULL;
    if (blank(all)) {
        s->subtype = VD_CLI_SUBTYPE_EMPTY_OUTPUT;
        s->is_error = true;
        s->blank_stdout = true;
        return;
    }
    res = scan_lines(a, all, s);
    if (res == NULL && !a->oom) {
        /* §2.3: one (e.g. pretty-printed) JSON object for the whole output. */
        res = parse_object(a, trim(all), &scratch);
        if (!str_is(res, "type", "result")) {
            cJSON_Delete(res);
            res = NULL;
        }
    }
    if (res != NULL) {
        read_result(a, res, s);
    } else {
        s->subtype = s->ctx_flag ? VD_CLI_SUBTYPE_CONTEXT_EXHAUSTION : VD_CLI_SUBTYPE_UNPARSEABLE;
        s->is_error = true;
        sb_append(a, &s->result, all.p, all.len);
    }
    cJSON_Delete(res);
    sb_free(&scratch);
}

/* The `parsed` form, copied so that the procedure may rewrite it. */
static void load_parsed(struct adj *a, const vd_parsed_session *p, struct sess *s)
{
    struct span res = span_of(p->result);
    s->subtype = p->subtype;
    s->is_error = p->is_error;
    sb_append(a, &s->result, res.p, res.len);
    for (size_t i = 0; i < p->n_errors; i++) {
        struct span e = span_of(p->errors[i]);
        strv_push(a, &s->errors, e.p, e.len);
    }
    for (size_t i = 0; i < p->n_assistant_messages; i++) {
        struct span m = span_of(p->assistant_messages[i]);
        strv_push(a, &s->messages, m.p, m.len);
    }
    s->write_calls = p->write_call_count > 0 ? (size_t)p->write_call_count : 0;
    s->thinking_only = p->has_thinking_only_turn;
    s->ctx_flag = p->context_exhausted;
}

static void sess_free(struct sess *s)
{
    sb_free(&s->result);
    strv_free(&s->errors);
    strv_free(&s->messages);
}

/* ---- predicates (§3) ---- */

static struct span result_of(const struct sess *s)
{
    return sb_span(&s->result);
}

static bool marker_set(const struct adj *a)
{
    return a->marker.len > 0;
}

static bool failure_subtype(vd_cli_subtype t)
{
    return t == VD_CLI_SUBTYPE_UNKNOWN || t == VD_CLI_SUBTYPE_EMPTY_OUTPUT ||
           t == VD_CLI_SUBTYPE_UNPARSEABLE || t == VD_CLI_SUBTYPE_TIMEOUT ||
           t == VD_CLI_SUBTYPE_IDLE_STALL;
}

static bool session_complete(const struct sess *s)
{
    return !s->is_error && !failure_subtype(s->subtype);
}

static bool kill_anomaly(const struct sess *s)
{
    return s->subtype == VD_CLI_SUBTYPE_UNPARSEABLE || s->subtype == VD_CLI_SUBTYPE_EMPTY_OUTPUT ||
           s->subtype == VD_CLI_SUBTYPE_INTERRUPTED ||
           (s->subtype == VD_CLI_SUBTYPE_SUCCESS && blank(result_of(s)));
}

static bool context_exhausted(const struct sess *s)
{
    if (s->ctx_flag)
        return true;
    if (!s->is_error)
        return false;
    for (size_t i = 0; i < s->errors.n; i++) {
        if (contains_ci(span_of(s->errors.v[i]), PROMPT_TOO_LONG))
            return true;
    }
    return (s->subtype == VD_CLI_SUBTYPE_SUCCESS || s->subtype == VD_CLI_SUBTYPE_ERROR_MAX_TURNS) &&
           contains_ci(result_of(s), PROMPT_TOO_LONG);
}

static bool api_needs_retry(const struct sess *s)
{
    return s->subtype == VD_CLI_SUBTYPE_ERROR_MAX_TURNS || context_exhausted(s);
}

static bool content_ok(struct adj *a, const struct sess *s, const struct rxlist *p)
{
    struct span r = trim(result_of(s));
    if (s->is_error || r.len == 0 || failure_subtype(s->subtype))
        return false;
    if (marker_set(a) && (blank_without(r, a->marker) || !contains(r, a->marker)))
        return false;
    return patterns_ok(a, r, p);
}

static vd_content_state content_state(struct adj *a, const struct sess *s)
{
    struct span r = trim(result_of(s));
    if (s->is_error)
        return VD_CONTENT_STATE_SESSION_ERROR;
    if (r.len == 0)
        return VD_CONTENT_STATE_ABSENT;
    if (!marker_set(a) && a->pats.n == 0)
        return VD_CONTENT_STATE_COMPLETE;
    if (marker_set(a) && !contains(r, a->marker))
        return VD_CONTENT_STATE_ABSENT;
    if (!patterns_ok(a, r, &a->pats))
        return VD_CONTENT_STATE_CONTRACT_VIOLATION;
    return VD_CONTENT_STATE_COMPLETE;
}

/* Whether some assistant message has a "\n"-split line that trims to the marker. */
static bool marker_line(const struct adj *a, const struct sess *s)
{
    for (size_t m = 0; m < s->messages.n; m++) {
        struct span text = span_of(s->messages.v[m]);
        size_t i = 0;
        while (i <= text.len) {
            const char *nl = memchr(text.p + i, '\n', text.len - i);
            size_t end = nl ? (size_t)(nl - text.p) : text.len;
            if (span_eq(trim((struct span){text.p + i, end - i}), a->marker))
                return true;
            i = end + 1;
        }
    }
    return false;
}

/* separate_marker(s) of §3; when it holds, *joined holds the messages joined by "\n\n". */
static bool separate_marker(struct adj *a, const struct sess *s, struct sbuf *joined)
{
    joined->len = 0;
    if (!marker_set(a) || !marker_line(a, s))
        return false;
    append_joined(a, joined, &s->messages, "\n\n");
    return !blank_without(sb_span(joined), a->marker);
}

static vd_infra_exit infra_exit(struct adj *a, const struct sess *s)
{
    if (context_exhausted(s))
        return VD_INFRA_EXIT_CONTEXT_EXHAUSTED;
    if (rx_search(a, a->api, span_of(a->r->stderr_text)))
        return VD_INFRA_EXIT_API_ERROR;
    /* Only a reported returncode counts as killed: unknown is never a signal. */
    if (a->r->returncode_known && a->r->returncode < 0)
        return VD_INFRA_EXIT_PROCESS_KILLED;
    return VD_INFRA_EXIT_COMPLETED;
}

/* ---- the procedure (§4) ---- */

/* B, R3: with a confirmed channel, look for the output contract in the assistant messages. */
static void recover_patterns(struct adj *a, struct sess *s)
{
    struct sbuf joined = {0}, merged = {0};
    if (a->r->channel == VD_CHANNEL_UNMONITORED || a->pats.n == 0 ||
        patterns_ok(a, trim(result_of(s)), &a->pats))
        return;
    append_joined(a, &joined, &s->messages, "\n\n");
    if (joined.len > 0 && patterns_ok(a, sb_span(&joined), &a->pats)) {
        if (s->result.len > 0) {
            sb_append(a, &merged, s->result.p, s->result.len);
            sb_append(a, &merged, "\n\n", 2);
        }
        sb_append(a, &merged, joined.p, joined.len);
        sb_move(&s->result, &merged);
    }
    sb_free(&joined);
    sb_free(&merged);
}

/* B. RECOVERY: R1 (marker seen in a session log the stdout lost), R2, R3. */
static void recover(struct adj *a, struct sess *s)
{
    struct sbuf joined = {0};
    vd_channel ch = a->r->channel;
    if ((ch == VD_CHANNEL_B || ch == VD_CHANNEL_DIR_MISSING) &&
        (s->subtype == VD_CLI_SUBTYPE_UNPARSEABLE || s->subtype == VD_CLI_SUBTYPE_EMPTY_OUTPUT) &&
        separate_marker(a, s, &joined)) {
        sb_move(&s->result, &joined);
        s->subtype = VD_CLI_SUBTYPE_SUCCESS;
        s->is_error = false;
    }
    if (session_complete(s)) {
        if (separate_marker(a, s, &joined))
            sb_move(&s->result, &joined);
        recover_patterns(a, s);
    }
    sb_free(&joined);
}

/* C. compute_success(s, rc, term, channel, P). */
static bool compute_success(struct adj *a, const struct sess *s, int rc, vd_termination term,
                            const struct rxlist *p)
{
    struct span res = result_of(s);
    bool substantive = s->subtype == VD_CLI_SUBTYPE_SUCCESS && !blank(res);
    /* Channel B is authoritative, unless a contract exists and the session is incomplete. */
    if (a->r->channel == VD_CHANNEL_B && !(p->n > 0 && !session_complete(s)))
        return patterns_ok(a, trim(res), p);
    switch (term) {
    case VD_TERMINATION_COMPLETED:
        if (rc != 0 && !substantive)
            return false;
        return content_ok(a, s, p);
    case VD_TERMINATION_NATURAL_EXIT:
        if (rc != 0)
            return substantive && marker_set(a) && contains(res, a->marker) && content_ok(a, s, p);
        return content_ok(a, s, p);
    default:
        return false;
    }
}

/* D. compute_retry(s, rc, term, channel); the reason goes to *reason. */
static bool compute_retry(struct adj *a, const struct sess *s, int rc, vd_termination term,
                          vd_retry_reason *reason)
{
    vd_channel ch = a->r->channel;
    struct span res = result_of(s);
    *reason = VD_RETRY_REASON_NONE;
    if (api_needs_retry(s)) {
        *reason = VD_RETRY_REASON_RESUME;
        return true;
    }
    if (term == VD_TERMINATION_COMPLETED) {
        if (ch == VD_CHANNEL_B || !kill_anomaly(s))
            return false;
        *reason = VD_RETRY_REASON_RESUME;
        return true;
    }
    if (term != VD_TERMINATION_NATURAL_EXIT || ch == VD_CHANNEL_A || ch == VD_CHANNEL_B || rc != 0)
        return false;
    if (kill_anomaly(s)) {
        *reason = s->thinking_only       ? VD_RETRY_REASON_THINKING_STALL
                  : context_exhausted(s) ? VD_RETRY_REASON_RESUME
                                         : VD_RETRY_REASON_EMPTY_OUTPUT;
        return true;
    }
    if (s->subtype == VD_CLI_SUBTYPE_SUCCESS && !blank(res) && marker_set(a) &&
        !contains(res, a->marker)) {
        *reason = VD_RETRY_REASON_EARLY_STOP;
        return true;
    }
    return false;
}

/* The subtype label table of §4, read from s.subtype after A and B. */
static vd_subtype_label label_of(const struct adj *a, const struct sess *s, bool success)
{
    static const vd_subtype_label same_name[VD_CLI_SUBTYPE__MAX] = {
        [VD_CLI_SUBTYPE_SUCCESS] = VD_SUBTYPE_LABEL_SUCCESS,
        [VD_CLI_SUBTYPE_ERROR_MAX_TURNS] = VD_SUBTYPE_LABEL_ERROR_MAX_TURNS,
        [VD_CLI_SUBTYPE_ERROR_DURING_EXECUTION] = VD_SUBTYPE_LABEL_ERROR_DURING_EXECUTION,
        [VD_CLI_SUBTYPE_CONTEXT_EXHAUSTION] = VD_SUBTYPE_LABEL_CONTEXT_EXHAUSTION,
        [VD_CLI_SUBTYPE_UNKNOWN] = VD_SUBTYPE_LABEL_UNKNOWN,
        [VD_CLI_SUBTYPE_EMPTY_OUTPUT] = VD_SUBTYPE_LABEL_EMPTY_OUTPUT,
        [VD_CLI_SUBTYPE_UNPARSEABLE] = VD_SUBTYPE_LABEL_UNPARSEABLE,
        [VD_CLI_SUBTYPE_TIMEOUT] = VD_SUBTYPE_LABEL_TIMEOUT,
        [VD_CLI_SUBTYPE_INTERRUPTED] = VD_SUBTYPE_LABEL_INTERRUPTED,
        [VD_CLI_SUBTYPE_IDLE_STALL] = VD_SUBTYPE_LABEL_IDLE_STALL,
    };
    struct span res = result_of(s);
    if (success)
        return VD_SUBTYPE_LABEL_SUCCESS; /* verdict labels every success "success" */
    if (s->subtype != VD_CLI_SUBTYPE_SUCCESS)
        return same_name[s->subtype];
    if (blank(res))
        return VD_SUBTYPE_LABEL_EMPTY_RESULT;
    if (context_exhausted(s))
        return VD_SUBTYPE_LABEL_CONTEXT_EXHAUSTED;
    if (marker_set(a) && !contains(res, a->marker))
        return VD_SUBTYPE_LABEL_MISSING_COMPLETION_MARKER;
    return VD_SUBTYPE_LABEL_ADJUDICATED_FAILURE;
}

/* G1. */
static void budget_guard(const struct adj *a, struct verdict *v)
{
    if (v->retry && a->r->prior_consecutive_retries >= a->r->max_consecutive_retries) {
        v->retry = false;
        v->reason = VD_RETRY_REASON_BUDGET_EXHAUSTED;
    }
}

/* G3's condition: the skill was expected to write files. */
static bool writes_expected(struct adj *a, const struct sess *s)
{
    const vd_write_behavior *wb = &a->r->write_behavior;
    struct sbuf text = {0};
    bool expected;
    if (wb->mode == VD_WRITE_MODE_ALWAYS)
        return true;
    if (wb->mode != VD_WRITE_MODE_CONDITIONAL || a->when.n == 0)
        return false;
    append_without(a, &text, result_of(s), a->marker);
    expected = patterns_ok(a, trim(sb_span(&text)), &a->when);
    sb_free(&text);
    return expected;
}

/* G. POST-GATES, in order. */
static void post_gates(struct adj *a, const struct sess *s, bool evidence, struct verdict *v)
{
    budget_guard(a, v);
    if (!v->success && !v->retry && v->label == VD_SUBTYPE_LABEL_ADJUDICATED_FAILURE && evidence) {
        v->retry = true;
        v->reason = VD_RETRY_REASON_CONTRACT_RECOVERY;
        budget_guard(a, v);
    }
    if (v->success && !evidence && writes_expected(a, s)) {
        /* No budget guard: a zero-write success is retried regardless. */
        v->success = false;
        v->retry = true;
        v->reason = VD_RETRY_REASON_ZERO_WRITES;
        v->label = VD_SUBTYPE_LABEL_ZERO_WRITES;
    }
    if (v->retry && v->reason == VD_RETRY_REASON_EMPTY_OUTPUT && evidence) {
        v->reason = VD_RETRY_REASON_COMPLETED_NO_FLUSH;
        v->label = VD_SUBTYPE_LABEL_COMPLETED_NO_FLUSH;
        budget_guard(a, v);
    }
}

/* C-G for every termination but stale and idle_stall. */
static void decide(struct adj *a, const struct sess *s, int rc, vd_infra_exit infra, bool evidence,
                   struct verdict *v)
{
    vd_termination term = a->r->termination;
    vd_channel ch = a->r->channel;
    v->success = compute_success(a, s, rc, term, &a->pats);
    v->retry = compute_retry(a, s, rc, term, &v->reason);
    if (v->success && v->retry)
        v->success = false; /* E, contradiction: a retry signal wins */
    /* E, dead end: only absent content (a drain race) is worth another run. */
    if (!v->success && !v->retry && (ch == VD_CHANNEL_A || ch == VD_CHANNEL_B) &&
        content_state(a, s) == VD_CONTENT_STATE_ABSENT) {
        v->retry = true;
        v->reason = VD_RETRY_REASON_DRAIN_RACE;
    }
    if (!v->success && infra == VD_INFRA_EXIT_API_ERROR) {
        v->retry = true;
        v->reason = VD_RETRY_REASON_RESUME;
    }
    if (!v->success && !v->retry && infra == VD_INFRA_EXIT_PROCESS_KILLED &&
        a->r->kill_reason == VD_KILL_REASON_NATURAL_EXIT && term != VD_TERMINATION_TIMED_OUT) {
        v->retry = true; /* killed by someone else */
        v->reason = VD_RETRY_REASON_RESUME;
    }
    v->label = label_of(a, s, v->success);
    post_gates(a, s, evidence, v);
}

/* A, stale / idle_stall: recover a finished result or retry; only G1 follows. */
static void decide_stalled(struct adj *a, const struct sess *s, struct verdict *v)
{
    bool idle = a->r->termination == VD_TERMINATION_IDLE_STALL;
    int rc = a->r->returncode_known ? a->r->returncode : -1;
    if (s->subtype == VD_CLI_SUBTYPE_SUCCESS && !blank(result_of(s)) && !s->is_error &&
        compute_success(a, s, rc, VD_TERMINATION_COMPLETED, &no_patterns)) {
        v->success = true;
        v->label = idle ? VD_SUBTYPE_LABEL_RECOVERED_FROM_IDLE_STALL
                        : VD_SUBTYPE_LABEL_RECOVERED_FROM_STALE;
        return;
    }
    v->retry = true;
    v->reason = idle ? VD_RETRY_REASON_IDLE_STALL : VD_RETRY_REASON_STALE;
    v->label = idle ? VD_SUBTYPE_LABEL_IDLE_STALL : VD_SUBTYPE_LABEL_STALE;
    budget_guard(a, v);
}

/* A, timed_out: a success cut off by the timeout is a timeout. */
static void apply_timeout(struct sess *s)
{
    if (s->subtype == VD_CLI_SUBTYPE_SUCCESS || s->blank_stdout) {
        s->subtype = VD_CLI_SUBTYPE_TIMEOUT;
        s->is_error = true;
    }
}

/* ---- the answer (§5) ---- */

static size_t skip_chars(struct span t, size_t n)
{
    for (size_t i = 0; i < t.len; i++) {
        if (((unsigned char)t.p[i] & 0xC0) != 0x80) {
            if (n == 0)
                return i;
            n--;
        }
    }
    return t.len;
}

/* The result without markers, trimmed, cut to its last VD_RESULT_TEXT_MAX_CHARS code points.
 * Returns a heap string (NULL only when memory ran out). */
static char *result_text(struct adj *a, const struct sess *s)
{
    struct sbuf stripped = {0}, out = {0};
    struct span t;
    size_t chars;
    append_without(a, &stripped, result_of(s), a->marker);
    t = trim(sb_span(&stripped));
    chars = vd_utf8_count(t.p, t.len);
    if (chars > VD_RESULT_TEXT_MAX_CHARS) {
        size_t cut = chars - VD_RESULT_TEXT_MAX_CHARS, at = skip_chars(t, cut);
        char prefix[64];
        int n = snprintf(prefix, sizeof prefix, "...[truncated %zu chars]...\n", cut);
        sb_append(a, &out, prefix, n > 0 ? (size_t)n : 0);
        t.p += at;
        t.len -= at;
    }
    sb_append(a, &out, t.p, t.len);
    sb_free(&stripped);
    return out.p;
}

/* result_text as it may be stored and served to readers: bounded, then redacted. */
static char *redacted_result_text(struct adj *a, const struct sess *s)
{
    char *raw = result_text(a, s), *clean = raw ? vd_redact(raw) : NULL;
    free(raw);
    if (raw && !clean)
        a->oom = true;
    return clean;
}

static void fill_answer(struct adj *a, const struct sess *s, const struct verdict *v,
                        vd_infra_exit infra, bool evidence, vd_adjudication *out)
{
    out->success = v->success;
    out->needs_retry = v->retry;
    out->outcome = v->success ? VD_SESSION_OUTCOME_SUCCEEDED
                   : v->retry ? VD_SESSION_OUTCOME_RETRIABLE
                              : VD_SESSION_OUTCOME_FAILED;
    out->retry_reason = v->reason;
    out->subtype = v->label;
    out->content_state = content_state(a, s);
    out->cli_subtype = s->subtype;
    out->infra_exit = infra;
    out->write_evidence = evidence;
    out->result_text = redacted_result_text(a, s);
    out->warnings = a->warnings.v;
    out->n_warnings = a->warnings.n;
    a->warnings.v = NULL;
    a->warnings.n = a->warnings.cap = 0;
}

/* §4 on a parsed session, then the answer. */
static void run(struct adj *a, struct sess *s, vd_adjudication *out)
{
    const vd_session_report *r = a->r;
    struct verdict v = {false, false, VD_RETRY_REASON_NONE, VD_SUBTYPE_LABEL_SUCCESS};
    bool evidence = s->write_calls >= 1 || r->fs_writes_detected;
    int rc = r->returncode_known ? r->returncode : -1;
    vd_infra_exit infra;
    if (r->termination == VD_TERMINATION_STALE || r->termination == VD_TERMINATION_IDLE_STALL) {
        infra = infra_exit(a, s);
        decide_stalled(a, s, &v);
    } else {
        if (r->termination == VD_TERMINATION_TIMED_OUT) {
            apply_timeout(s);
            rc = -1;
        }
        recover(a, s);
        infra = infra_exit(a, s);
        decide(a, s, rc, infra, evidence, &v);
    }
    fill_answer(a, s, &v, infra, evidence, out);
}

/* ---- entry points ---- */

static bool text_ok(const char *s)
{
    return s == NULL || vd_utf8_valid(s, strlen(s));
}

static bool texts_ok(const char **v, size_t n)
{
    if (n > 0 && v == NULL)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!text_ok(v[i]))
            return false;
    }
    return true;
}

static bool in_range(int v, int max)
{
    return v >= 0 && v < max;
}

/* The report's own contract (see vd_adjudicate), so that the procedure can trust it. */
static bool report_ok(const vd_session_report *r)
{
    const vd_parsed_session *p = &r->parsed;
    if (!in_range((int)r->termination, VD_TERMINATION__MAX) ||
        !in_range((int)r->channel, VD_CHANNEL__MAX) ||
        !in_range((int)r->kill_reason, VD_KILL_REASON__MAX) ||
        !in_range((int)r->write_behavior.mode, VD_WRITE_MODE__MAX) ||
        r->prior_consecutive_retries < 0 || r->max_consecutive_retries < 1)
        return false;
    if (!text_ok(r->stderr_text) || !text_ok(r->completion_marker) ||
        !texts_ok(r->expected_output_patterns, r->n_expected_output_patterns) ||
        !texts_ok(r->write_behavior.expected_when, r->write_behavior.n_expected_when))
        return false;
    if (!r->has_parsed)
        return text_ok(r->stdout_text);
    return in_range((int)p->subtype, VD_CLI_SUBTYPE__MAX) && text_ok(p->result) &&
           texts_ok(p->errors, p->n_errors) &&
           texts_ok(p->assistant_messages, p->n_assistant_messages);
}

void vd_session_report_init(vd_session_report *r)
{
    memset(r, 0, sizeof *r);
    r->max_consecutive_retries = VD_DEFAULT_MAX_CONSECUTIVE_RETRIES;
    r->stdout_text = "";
    r->parsed.subtype = VD_CLI_SUBTYPE_UNKNOWN;
}

vd_error vd_adjudicate(const vd_session_report *r, vd_adjudication *out)
{
    struct adj a;
    struct sess s;
    vd_error err = VD_OK;
    memset(out, 0, sizeof *out);
    memset(&s, 0, sizeof s);
    if (r == NULL || !report_ok(r))
        return VD_ERR_INVALID_FIELD;
    adj_init(&a, r);
    if (a.oom)
        goto out;
    if (r->has_parsed)
        load_parsed(&a, &r->parsed, &s);
    else
        parse_stdout(&a, r->stdout_text, &s);
    if (a.oom)
        goto out;
    run(&a, &s, out);
out:
    if (a.oom || a.budget_exhausted) {
        vd_adjudication_cleanup(out);
        err = a.oom ? VD_ERR_INTERNAL : VD_ERR_MATCH_BUDGET_EXHAUSTED;
    }
    sess_free(&s);
    adj_free(&a);
    return err;
}

void vd_adjudication_cleanup(vd_adjudication *a)
{
    if (a == NULL)
        return;
    free(a->result_text);
    for (size_t i = 0; i < a->n_warnings; i++)
        free(a->warnings[i]);
    free(a->warnings);
    memset(a, 0, sizeof *a);
}
