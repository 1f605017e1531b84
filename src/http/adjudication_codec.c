/* adjudication_codec.c - the JSON edge of the adjudicator (session-outcome.md §1): decodes a
 * request's `session` object into a vd_session_report, validating every field (type, enum
 * string, integer range) and naming the offending one. Knows cJSON and the adjudicator's
 * plain structs, nothing of HTTP or storage. Decoded strings are borrowed from the cJSON
 * tree. (The §5 encoder of the answer is the service's: service/outcomes.c.) */
#include "verdict/adjudication_codec.h"
#include "verdict/util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Records the offending field name in r->invalid_field and returns err. */
static vd_error fail(vd_session_report *r, vd_error err, const char *field)
{
    snprintf(r->invalid_field, sizeof r->invalid_field, "%s", field);
    return err;
}

#define VD__STR2(x) #x
#define VD__STR(x) VD__STR2(x)

static vd_error fail_at(vd_session_report *r, vd_error err, const char *field, size_t i)
{
    snprintf(r->invalid_field, sizeof r->invalid_field, "%s[%zu]", field, i);
    return err;
}

/* The value of key, or NULL when it is absent or JSON null: as everywhere in the API, an
 * optional field set to null reads as absent. */
static const cJSON *item(const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNull(it) ? NULL : it;
}

static bool is_text(const cJSON *it)
{
    return cJSON_IsString(it) && it->valuestring != NULL &&
           vd_utf8_valid(it->valuestring, strlen(it->valuestring));
}

/* Optional string field; absent leaves *dst as it is. */
static vd_error get_string(const cJSON *obj, const char *key, const char *field,
                           vd_session_report *r, const char **dst)
{
    const cJSON *it = item(obj, key);
    if (it == NULL)
        return VD_OK;
    if (!is_text(it))
        return fail(r, VD_ERR_INVALID_FIELD, field);
    *dst = it->valuestring;
    return VD_OK;
}

static vd_error get_bool(const cJSON *obj, const char *key, const char *field, vd_session_report *r,
                         bool *dst)
{
    const cJSON *it = item(obj, key);
    if (it == NULL)
        return VD_OK;
    if (!cJSON_IsBool(it))
        return fail(r, VD_ERR_INVALID_FIELD, field);
    *dst = cJSON_IsTrue(it);
    return VD_OK;
}

/* Whether it is a JSON number holding a whole value in [min, INT_MAX]. */
static bool whole_int(const cJSON *it, int min, int *dst)
{
    double d;
    if (!cJSON_IsNumber(it))
        return false;
    d = it->valuedouble;
    if (!(d >= (double)min && d <= (double)INT_MAX) || d != (double)(int)d)
        return false;
    *dst = (int)d;
    return true;
}

static vd_error get_int(const cJSON *obj, const char *key, const char *field, int min,
                        vd_session_report *r, int *dst)
{
    const cJSON *it = item(obj, key);
    if (it == NULL)
        return VD_OK;
    if (!whole_int(it, min, dst))
        return fail(r, VD_ERR_INVALID_FIELD, field);
    return VD_OK;
}

/* Optional array of strings; on VD_OK *dst is a malloc'd array of *n borrowed strings (NULL
 * when empty) that the caller frees. */
static vd_error get_strings(const cJSON *obj, const char *key, const char *field,
                            vd_session_report *r, const char ***dst, size_t *n)
{
    const cJSON *arr = item(obj, key), *el;
    const char **v;
    size_t count, i = 0;
    if (arr == NULL)
        return VD_OK;
    if (!cJSON_IsArray(arr))
        return fail(r, VD_ERR_INVALID_FIELD, field);
    count = (size_t)cJSON_GetArraySize(arr);
    if (count == 0)
        return VD_OK;
    v = calloc(count, sizeof *v);
    if (v == NULL)
        return fail(r, VD_ERR_INTERNAL, field);
    cJSON_ArrayForEach(el, arr)
    {
        if (!is_text(el)) {
            free(v);
            return fail_at(r, VD_ERR_INVALID_FIELD, field, i);
        }
        v[i++] = el->valuestring;
    }
    *dst = v;
    *n = i;
    return VD_OK;
}

/* A list of the caller's regexes: get_strings under the pattern caps. */
static vd_error get_patterns(const cJSON *obj, const char *key, const char *field,
                             vd_session_report *r, const char ***dst, size_t *n)
{
    const cJSON *arr = item(obj, key), *el;
    const cJSON *list = cJSON_IsArray(arr) ? arr : NULL;
    size_t i = 0;
    if (list && cJSON_GetArraySize(list) > VD_ADJ_MAX_PATTERNS) {
        r->invalid_reason = "more patterns than the limit of " VD__STR(VD_ADJ_MAX_PATTERNS);
        return fail(r, VD_ERR_INVALID_FIELD, field);
    }
    cJSON_ArrayForEach(el, list)
    {
        if (cJSON_IsString(el) && strlen(el->valuestring) > VD_ADJ_MAX_PATTERN_BYTES) {
            r->invalid_reason =
                "a pattern longer than the limit of " VD__STR(VD_ADJ_MAX_PATTERN_BYTES) " bytes";
            return fail_at(r, VD_ERR_INVALID_FIELD, field, i);
        }
        i++;
    }
    return get_strings(obj, key, field, r, dst, n);
}

/* returncode, termination, channel, kill_reason. */
static vd_error decode_process(const cJSON *session, vd_session_report *r)
{
    const cJSON *rc = item(session, "returncode");
    const char *term = NULL, *channel = NULL, *kill = NULL;
    vd_error err;
    if (rc != NULL) {
        if (!whole_int(rc, INT_MIN, &r->returncode))
            return fail(r, VD_ERR_INVALID_FIELD, "session.returncode");
        r->returncode_known = true;
    }
    err = get_string(session, "termination", "session.termination", r, &term);
    if (err == VD_OK && term != NULL && !vd_termination_parse(term, &r->termination))
        err = fail(r, VD_ERR_INVALID_FIELD, "session.termination");
    if (err == VD_OK)
        err = get_string(session, "channel", "session.channel", r, &channel);
    if (err == VD_OK && channel != NULL && !vd_channel_parse(channel, &r->channel))
        err = fail(r, VD_ERR_INVALID_FIELD, "session.channel");
    if (err == VD_OK)
        err = get_string(session, "kill_reason", "session.kill_reason", r, &kill);
    if (err == VD_OK && kill != NULL && !vd_kill_reason_parse(kill, &r->kill_reason))
        err = fail(r, VD_ERR_INVALID_FIELD, "session.kill_reason");
    return err;
}

static vd_error decode_write_behavior(const cJSON *session, vd_session_report *r)
{
    const cJSON *wb = item(session, "write_behavior");
    const char *mode = NULL;
    vd_error err;
    if (wb == NULL)
        return VD_OK;
    if (!cJSON_IsObject(wb))
        return fail(r, VD_ERR_INVALID_FIELD, "session.write_behavior");
    err = get_string(wb, "mode", "session.write_behavior.mode", r, &mode);
    if (err == VD_OK && mode != NULL && !vd_write_mode_parse(mode, &r->write_behavior.mode))
        err = fail(r, VD_ERR_INVALID_FIELD, "session.write_behavior.mode");
    if (err == VD_OK)
        err = get_patterns(wb, "expected_when", "session.write_behavior.expected_when", r,
                           &r->write_behavior.expected_when, &r->write_behavior.n_expected_when);
    return err;
}

/* stderr, completion_marker, the output contract, fs_writes_detected and the retry budget. */
static vd_error decode_contract(const cJSON *session, vd_session_report *r)
{
    vd_error err = get_string(session, "stderr", "session.stderr", r, &r->stderr_text);
    if (err == VD_OK)
        err = get_string(session, "completion_marker", "session.completion_marker", r,
                         &r->completion_marker);
    if (err == VD_OK)
        err = get_patterns(session, "expected_output_patterns", "session.expected_output_patterns",
                           r, &r->expected_output_patterns, &r->n_expected_output_patterns);
    if (err == VD_OK)
        err = decode_write_behavior(session, r);
    if (err == VD_OK)
        err = get_bool(session, "fs_writes_detected", "session.fs_writes_detected", r,
                       &r->fs_writes_detected);
    if (err == VD_OK)
        err = get_int(session, "prior_consecutive_retries", "session.prior_consecutive_retries", 0,
                      r, &r->prior_consecutive_retries);
    if (err == VD_OK)
        err = get_int(session, "max_consecutive_retries", "session.max_consecutive_retries", 1, r,
                      &r->max_consecutive_retries);
    return err;
}

/* Adds the text of one {type:"text"} element of an array `result` to *len (buf NULL) or to
 * buf at *len. */
static bool result_block(const cJSON *el, char *buf, size_t *len, bool *first)
{
    const cJSON *text = item(el, "text");
    const char *t = "";
    size_t n;
    if (!cJSON_IsObject(el) || !cJSON_IsString(item(el, "type")) ||
        strcmp(item(el, "type")->valuestring, "text") != 0)
        return true;
    if (text != NULL && cJSON_IsString(text)) {
        if (!is_text(text))
            return false;
        t = text->valuestring;
    }
    n = strlen(t);
    if (!*first && buf != NULL)
        buf[*len] = '\n';
    *len += *first ? 0 : 1;
    if (buf != NULL)
        memcpy(buf + *len, t, n);
    *len += n;
    *first = false;
    return true;
}

/* parsed.result as in §2.4: a string as is; an array: its text blocks joined by "\n";
 * anything else "". The joined form is malloc'd into parsed.result_buf. */
static vd_error decode_parsed_result(const cJSON *res, vd_session_report *r)
{
    const char *field = "session.parsed.result";
    const cJSON *el;
    size_t len = 0;
    bool first = true;
    if (cJSON_IsString(res)) {
        if (!is_text(res))
            return fail(r, VD_ERR_INVALID_FIELD, field);
        r->parsed.result = res->valuestring;
        return VD_OK;
    }
    if (!cJSON_IsArray(res))
        return VD_OK;
    cJSON_ArrayForEach(el, res)
    {
        if (!result_block(el, NULL, &len, &first))
            return fail(r, VD_ERR_INVALID_FIELD, field);
    }
    r->parsed.result_buf = malloc(len + 1);
    if (r->parsed.result_buf == NULL)
        return fail(r, VD_ERR_INTERNAL, field);
    len = 0;
    first = true;
    cJSON_ArrayForEach(el, res)
    {
        (void)result_block(el, r->parsed.result_buf, &len, &first);
    }
    r->parsed.result_buf[len] = '\0';
    r->parsed.result = r->parsed.result_buf;
    return VD_OK;
}

static vd_error decode_parsed(const cJSON *p, vd_session_report *r)
{
    vd_parsed_session *ps = &r->parsed;
    const char *subtype = NULL;
    vd_error err;
    if (!cJSON_IsObject(p))
        return fail(r, VD_ERR_INVALID_FIELD, "session.parsed");
    err = get_string(p, "subtype", "session.parsed.subtype", r, &subtype);
    if (err == VD_OK && subtype != NULL && !vd_cli_subtype_parse(subtype, &ps->subtype))
        err = fail(r, VD_ERR_INVALID_FIELD, "session.parsed.subtype");
    if (err == VD_OK)
        err = get_bool(p, "is_error", "session.parsed.is_error", r, &ps->is_error);
    if (err == VD_OK)
        err = decode_parsed_result(item(p, "result"), r);
    if (err == VD_OK)
        err = get_strings(p, "errors", "session.parsed.errors", r, &ps->errors, &ps->n_errors);
    if (err == VD_OK)
        err = get_strings(p, "assistant_messages", "session.parsed.assistant_messages", r,
                          &ps->assistant_messages, &ps->n_assistant_messages);
    if (err == VD_OK)
        err = get_int(p, "write_call_count", "session.parsed.write_call_count", 0, r,
                      &ps->write_call_count);
    if (err == VD_OK)
        err = get_bool(p, "has_thinking_only_turn", "session.parsed.has_thinking_only_turn", r,
                       &ps->has_thinking_only_turn);
    if (err == VD_OK)
        err = get_bool(p, "context_exhausted", "session.parsed.context_exhausted", r,
                       &ps->context_exhausted);
    return err;
}

/* Exactly one of stdout / parsed. */
static vd_error decode_output(const cJSON *session, vd_session_report *r)
{
    const cJSON *so = item(session, "stdout"), *po = item(session, "parsed");
    if (so == NULL && po == NULL)
        return fail(r, VD_ERR_MISSING_FIELD, "session.stdout");
    if (so != NULL && po != NULL)
        return fail(r, VD_ERR_INVALID_FIELD, "session.parsed");
    if (po != NULL) {
        r->has_parsed = true;
        return decode_parsed(po, r);
    }
    return get_string(session, "stdout", "session.stdout", r, &r->stdout_text);
}

static size_t texts_bytes(const char *const *v, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += v[i] ? strlen(v[i]) : 0;
    return total;
}

/* The bytes of text the adjudicator may match the caller's regexes against. */
static size_t report_text_bytes(const vd_session_report *r)
{
    const vd_parsed_session *p = &r->parsed;
    size_t total = (r->stdout_text ? strlen(r->stdout_text) : 0) +
                   (r->stderr_text ? strlen(r->stderr_text) : 0);
    if (r->has_parsed)
        total += (p->result ? strlen(p->result) : 0) + texts_bytes(p->errors, p->n_errors) +
                 texts_bytes(p->assistant_messages, p->n_assistant_messages);
    return total;
}

vd_error vd_session_report_from_json(const cJSON *session, int default_max_retries,
                                     vd_session_report *out, const char **field_out)
{
    char field[sizeof out->invalid_field];
    vd_error err;
    vd_session_report_init(out);
    out->max_consecutive_retries = default_max_retries < 1 ? 1 : default_max_retries;
    if (session == NULL) {
        err = fail(out, VD_ERR_MISSING_FIELD, "session");
        goto out;
    }
    if (!cJSON_IsObject(session)) {
        err = fail(out, VD_ERR_INVALID_FIELD, "session");
        goto out;
    }
    err = decode_process(session, out);
    if (err == VD_OK)
        err = decode_contract(session, out);
    if (err == VD_OK)
        err = decode_output(session, out);
    if (err == VD_OK && report_text_bytes(out) > VD_ADJ_MAX_TEXT_BYTES) {
        out->invalid_reason = "more text (stdout, stderr, result, errors and messages together) "
                              "than the limit of " VD__STR(VD_ADJ_MAX_TEXT_BYTES) " bytes";
        err = fail(out, VD_ERR_PAYLOAD_TOO_LARGE, "session");
    }
out:
    if (err != VD_OK) {
        /* Free the partial report but keep the field name for the caller. */
        const char *reason = out->invalid_reason;
        memcpy(field, out->invalid_field, sizeof field);
        vd_session_report_cleanup(out);
        memcpy(out->invalid_field, field, sizeof field);
        out->invalid_reason = reason;
        if (field_out != NULL)
            *field_out = out->invalid_field;
    }
    return err;
}

void vd_session_report_cleanup(vd_session_report *r)
{
    if (r == NULL)
        return;
    free(r->expected_output_patterns);
    free(r->write_behavior.expected_when);
    free(r->parsed.errors);
    free(r->parsed.assistant_messages);
    free(r->parsed.result_buf);
    vd_session_report_init(r);
}
