/* adjudicator_internal.h - what the three files of the adjudicator share (adjudicator.c: the
 * procedure of §3-§5 and the entry points; adjudicator_text.c: text and regex helpers and the
 * enum names; adjudicator_stream.c: the strict stream-json parser of §2): the per-call state
 * and the helpers one file lends another (prefix vd__adj_). Only src/service/adjudicator*.c
 * include it. */
#ifndef VERDICT_ADJUDICATOR_INTERNAL_H
#define VERDICT_ADJUDICATOR_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "verdict/adjudicator.h"
#include "verdict/buf.h"

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

/* ---- per-call state ---- */

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
    vd_buf result;
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
    double budget_end;     /* vd_monotonic() time the call's matching must end by */
    bool budget_exhausted; /* a search was cut off by it: the call fails */
};

/* The running verdict of §4. */
struct verdict {
    bool success;
    bool retry;
    vd_retry_reason reason;
    vd_subtype_label label;
};

/* ---- lent between the files ---- */

extern const struct rxlist vd__adj_no_patterns;
void vd__adj_free(struct adj *a);
void vd__adj_init(struct adj *a, const vd_session_report *r);
void vd__adj_append_joined(struct adj *a, vd_buf *out, const struct strv *v, const char *sep);
void vd__adj_append_without(struct adj *a, vd_buf *out, struct span text, struct span marker);
bool vd__adj_blank(struct span s);
bool vd__adj_blank_without(struct span text, struct span marker);
bool vd__adj_contains(struct span hay, struct span needle);
bool vd__adj_contains_ci(struct span hay, const char *needle);
void vd__adj_load_parsed(struct adj *a, const vd_parsed_session *p, struct sess *s);
void vd__adj_parse_stdout(struct adj *a, const char *text, struct sess *s);
bool vd__adj_patterns_ok(struct adj *a, struct span text, const struct rxlist *l);
bool vd__adj_rx_search(struct adj *a, const pcre2_code *re, struct span text);
void vd__adj_sb_append(struct adj *a, vd_buf *b, const char *s, size_t n);
void vd__adj_sb_move(vd_buf *dst, vd_buf *src);
struct span vd__adj_sb_span(const vd_buf *b);
void vd__adj_sess_free(struct sess *s);
bool vd__adj_span_eq(struct span x, struct span y);
struct span vd__adj_span_of(const char *s);
void vd__adj_strv_free(struct strv *v);
void vd__adj_strv_push(struct adj *a, struct strv *v, const char *s, size_t n);
struct span vd__adj_trim(struct span s);

#endif
