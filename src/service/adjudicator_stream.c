/* adjudicator_stream.c - the adjudicator's parser of an agent's stdout (session-outcome.md §2):
 * NDJSON stream-json records into the session `s`. The agent's stdout is domain data, not a
 * request body, so this file includes cJSON; each line is first checked against strict RFC
 * 8259 by the scanner request bodies use too (json_scan.h), because cJSON alone would accept
 * `01`, raw control characters and `\u0000`. Pure: no I/O. */
#include "adjudicator_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/util.h"

#include <cjson/cJSON.h>

#include "verdict/json_scan.h"

/* ---- strict JSON check: the shared scanner (src/common/json_scan.c) ---- */

/* Whether text is exactly one JSON object (NaN, Infinity, trailing garbage: not JSON). */
static bool is_json_object(struct span text)
{
    return vd_json_check(text.p, text.len, JSON_MAX_DEPTH, VD_JSON_OBJECT_ONLY, NULL);
}

/* Parses text as one JSON object; NULL when it is not one. cJSON failing on text the strict
 * check accepted can only be a failed allocation. */
static cJSON *parse_object(struct adj *a, struct span text, vd_buf *scratch)
{
    cJSON *obj;
    if (!is_json_object(text))
        return NULL;
    scratch->len = 0;
    vd__adj_sb_append(a, scratch, text.p, text.len);
    if (a->oom)
        return NULL;
    obj = cJSON_ParseWithOpts(scratch->data, NULL, 1);
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
    text = vd__adj_trim(text);
    if (text.len > 0)
        vd__adj_strv_push(a, &s->messages, text.p, text.len);
}

/* An assistant turn whose message.content is an array of blocks. */
static void read_blocks(struct adj *a, const cJSON *content, struct sess *s)
{
    vd_buf text = {0};
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
                vd__adj_sb_append(a, &text, "\n", 1);
            any_text = true;
            vd__adj_sb_append(a, &text, t ? t : "", t ? strlen(t) : 0);
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
    add_turn_text(a, s, vd__adj_sb_span(&text));
    vd_buf_cleanup(&text);
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
        if (t != NULL && str_is(block, "type", "text") &&
            vd__adj_contains_ci(vd__adj_span_of(t), PROMPT_TOO_LONG))
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
        add_turn_text(a, s, vd__adj_span_of(content->valuestring));
}

/* `result` of a result record: a string as is; an array: the text of its text blocks joined
 * by "\n"; anything else: "". */
static void append_result_field(struct adj *a, vd_buf *out, const cJSON *res)
{
    const cJSON *el;
    bool first = true;
    if (cJSON_IsString(res) && res->valuestring != NULL) {
        vd__adj_sb_append(a, out, res->valuestring, strlen(res->valuestring));
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
            vd__adj_sb_append(a, out, "\n", 1);
        first = false;
        vd__adj_sb_append(a, out, t ? t : "", t ? strlen(t) : 0);
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
            vd__adj_strv_push(a, &s->errors, el->valuestring, strlen(el->valuestring));
    }
}

/* §2.2: reads every line; returns the last result record (the caller deletes it) or NULL. */
static cJSON *scan_lines(struct adj *a, struct span all, struct sess *s)
{
    vd_buf scratch = {0};
    cJSON *last = NULL;
    size_t i = 0;
    while (i < all.len && !a->oom) {
        const char *nl = memchr(all.p + i, '\n', all.len - i);
        size_t end = nl ? (size_t)(nl - all.p) : all.len;
        struct span line = vd__adj_trim((struct span){all.p + i, end - i});
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
    vd_buf_cleanup(&scratch);
    return last;
}

void vd__adj_parse_stdout(struct adj *a, const char *text, struct sess *s)
{
    struct span all = vd__adj_span_of(text);
    vd_buf scratch = {0};
    cJSON *res = NULL;
    if (vd__adj_blank(all)) {
        s->subtype = VD_CLI_SUBTYPE_EMPTY_OUTPUT;
        s->is_error = true;
        s->blank_stdout = true;
        return;
    }
    res = scan_lines(a, all, s);
    if (res == NULL && !a->oom) {
        /* §2.3: one (e.g. pretty-printed) JSON object for the whole output. */
        res = parse_object(a, vd__adj_trim(all), &scratch);
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
        vd__adj_sb_append(a, &s->result, all.p, all.len);
    }
    cJSON_Delete(res);
    vd_buf_cleanup(&scratch);
}

/* The `parsed` form, copied so that the procedure may rewrite it. */
void vd__adj_load_parsed(struct adj *a, const vd_parsed_session *p, struct sess *s)
{
    struct span res = vd__adj_span_of(p->result);
    s->subtype = p->subtype;
    s->is_error = p->is_error;
    vd__adj_sb_append(a, &s->result, res.p, res.len);
    for (size_t i = 0; i < p->n_errors; i++) {
        struct span e = vd__adj_span_of(p->errors[i]);
        vd__adj_strv_push(a, &s->errors, e.p, e.len);
    }
    for (size_t i = 0; i < p->n_assistant_messages; i++) {
        struct span m = vd__adj_span_of(p->assistant_messages[i]);
        vd__adj_strv_push(a, &s->messages, m.p, m.len);
    }
    s->write_calls = p->write_call_count > 0 ? (size_t)p->write_call_count : 0;
    s->thinking_only = p->has_thinking_only_turn;
    s->ctx_flag = p->context_exhausted;
}

void vd__adj_sess_free(struct sess *s)
{
    vd_buf_cleanup(&s->result);
    vd__adj_strv_free(&s->errors);
    vd__adj_strv_free(&s->messages);
}
