/* test_adjudicator.c - the session-outcome adjudicator and its JSON codec.
 *
 * (a) every vector of tests/vectors/adjudication.jsonl, through codec, adjudicator and
 * encoder; (b) the §5 invariants as properties over generated reports (fixed seed; the count
 * comes from VERDICT_PROPERTY_ITERATIONS, default 100000); (c) codec rejections with the
 * right error and field; (d) stdout parser details. Needs no server and no database.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/adjudication_codec.h"
#include "verdict/adjudicator.h"

#define VECTORS_PATH VERDICT_TEST_DATA_DIR "/vectors/adjudication.jsonl"
#define VECTOR_COUNT 61

/* ---- helpers ---- */

/* Adjudicates a decoded session and returns the §5 answer (caller deletes), or NULL with
 * *err set when decoding or adjudication failed. */
static cJSON *answer_for(const cJSON *session, vd_error *err, const char **field)
{
    vd_session_report r;
    vd_adjudication a;
    cJSON *json = NULL;
    *err = vd_session_report_from_json(session, VD_DEFAULT_MAX_CONSECUTIVE_RETRIES, &r, field);
    if (*err != VD_OK)
        return NULL;
    *err = vd_adjudicate(&r, &a);
    if (*err == VD_OK)
        json = vd_adjudication_to_json(&a);
    vd_adjudication_cleanup(&a);
    vd_session_report_cleanup(&r);
    return json;
}

/* The answer for a session given as JSON text. */
static cJSON *answer_for_text(const char *session_json)
{
    cJSON *session = cJSON_Parse(session_json);
    vd_error err = VD_OK;
    const char *field = NULL;
    cJSON *answer;
    assert_non_null(session);
    answer = answer_for(session, &err, &field);
    if (err != VD_OK)
        fail_msg("session %s: error %s field %s", session_json, vd_error_code(err),
                 field ? field : "-");
    cJSON_Delete(session);
    return answer;
}

static const char *str_of(const cJSON *answer, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(answer, key);
    assert_true(cJSON_IsString(it));
    return it->valuestring;
}

/* The answer for a bare stdout (other fields at their defaults, optional marker). */
static cJSON *answer_for_stdout(const char *out, const char *marker)
{
    vd_session_report r;
    vd_adjudication a;
    cJSON *json;
    vd_session_report_init(&r);
    r.returncode_known = true;
    r.stdout_text = out;
    r.completion_marker = marker;
    assert_int_equal(vd_adjudicate(&r, &a), VD_OK);
    json = vd_adjudication_to_json(&a);
    assert_non_null(json);
    vd_adjudication_cleanup(&a);
    return json;
}

/* ---- (a) test vectors ---- */

/* Compares every key of `expect` with the answer; prints each mismatch. Returns the count. */
static int check_vector(const cJSON *vector)
{
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(vector, "name"));
    const cJSON *expect = cJSON_GetObjectItemCaseSensitive(vector, "expect"), *want;
    const char *field = NULL;
    vd_error err = VD_OK;
    cJSON *got = answer_for(cJSON_GetObjectItemCaseSensitive(vector, "session"), &err, &field);
    int bad = 0;
    if (got == NULL) {
        print_error("%s: error %s (field %s)\n", name, vd_error_code(err), field ? field : "-");
        return 1;
    }
    cJSON_ArrayForEach(want, expect)
    {
        const cJSON *have = cJSON_GetObjectItemCaseSensitive(got, want->string);
        if (have == NULL || !cJSON_Compare(want, have, 1)) {
            char *w = cJSON_PrintUnformatted(want), *h = have ? cJSON_PrintUnformatted(have) : NULL;
            print_error("%s: %s expected %.200s, got %.200s\n", name, want->string, w,
                        h ? h : "(missing)");
            free(w);
            free(h);
            bad++;
        }
    }
    cJSON_Delete(got);
    return bad;
}

static void test_adjudicator_vectors(void **state)
{
    FILE *f = fopen(VECTORS_PATH, "r");
    char *line = NULL;
    size_t cap = 0;
    int count = 0, failed = 0;
    (void)state;
    assert_non_null(f);
    while (getline(&line, &cap, f) > 0) {
        cJSON *vector = cJSON_Parse(line);
        assert_non_null(vector);
        count++;
        failed += check_vector(vector) > 0;
        cJSON_Delete(vector);
    }
    free(line);
    fclose(f);
    assert_int_equal(count, VECTOR_COUNT);
    assert_int_equal(failed, 0);
}

/* ---- (b) properties over generated reports ---- */

struct rng {
    uint64_t s;
};

static uint64_t rng_next(struct rng *g)
{
    /* splitmix64: fixed seed, same sequence on every platform. */
    uint64_t z = (g->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static size_t pick(struct rng *g, size_t n)
{
    return (size_t)(rng_next(g) % n);
}

#define PICK(g, arr) ((arr)[pick((g), sizeof(arr) / sizeof((arr)[0]))])

static const char *const markers[] = {"", "", "%%ORDER_UP%%", "%%ORDER_UP%%", "DONE", "✓ fin", " "};
static const char *const patterns[] = {"verdict\\s*=\\s*(GO|NO GO)",
                                       "plan_path\\s*=\\s*/.+",
                                       "\\w+",
                                       "^done",
                                       "(?i)DONE$",
                                       "---result---",
                                       "é",
                                       "(",
                                       "[a-",
                                       "*x",
                                       "a{2,1}",
                                       "(?<=a+)b",
                                       "(a+)+$",
                                       "\\bGO\\b"};
static const char *const stderrs[] = {"",
                                      "",
                                      "Error: API is overloaded",
                                      "HTTP 503",
                                      "x529y",
                                      "read ECONNRESET",
                                      "Socket hang up",
                                      "fine",
                                      "529"};
static const char *const texts[] = {"",
                                    "   ",
                                    "done",
                                    "%%ORDER_UP%%",
                                    "done %%ORDER_UP%%",
                                    "**verdict** = GO\n%%ORDER_UP%%",
                                    "verdict = NO GO",
                                    "plan_path = /tmp/p.md\nDONE",
                                    "Prompt is too long",
                                    "✓ fin",
                                    "%%ORDER_UP%%\n%%ORDER_UP%%",
                                    "---result---\n{}",
                                    "\t\n",
                                    "émoji 🎉 done",
                                    "GO",
                                    " DONE "};
static const char *const subtypes[] = {"success",
                                       "success",
                                       "success",
                                       "error_max_turns",
                                       "error_during_execution",
                                       "context_exhaustion",
                                       "unknown",
                                       "empty_output",
                                       "unparseable",
                                       "timeout",
                                       "interrupted",
                                       "idle_stall",
                                       "future_thing",
                                       "error"};
static const char *const garbage[] = {"garbled not json",
                                      "{\"type\":\"result\"",
                                      "[1,2]",
                                      "{\"type\":\"result\",\"cost\":NaN}",
                                      "null",
                                      "ü∑ß",
                                      "{\"a\":01}",
                                      "\"str\"",
                                      "{}",
                                      "{\"type\":1}"};

/* One generated report; strings point into the static pools or into the buffers below. */
struct gen {
    vd_session_report r;
    const char *pats[3];
    const char *when[2];
    const char *errors[2];
    const char *msgs[3];
    char *out; /* generated stdout, malloc'd */
    size_t len, cap;
};

static void gen_append(struct gen *g, const char *s)
{
    size_t n = strlen(s);
    if (g->len + n + 1 > g->cap) {
        g->cap = (g->len + n + 1) * 2;
        g->out = realloc(g->out, g->cap);
        assert_non_null(g->out);
    }
    memcpy(g->out + g->len, s, n + 1);
    g->len += n;
}

/* Appends obj as one NDJSON line (takes obj). */
static void gen_line(struct gen *g, cJSON *obj, bool crlf)
{
    char *s = cJSON_PrintUnformatted(obj);
    assert_non_null(s);
    gen_append(g, s);
    gen_append(g, crlf ? "\r\n" : "\n");
    free(s);
    cJSON_Delete(obj);
}

static cJSON *gen_result(struct rng *g)
{
    cJSON *o = cJSON_CreateObject(), *arr;
    cJSON_AddStringToObject(o, "type", "result");
    if (pick(g, 8))
        cJSON_AddStringToObject(o, "subtype", PICK(g, subtypes));
    cJSON_AddBoolToObject(o, "is_error", pick(g, 4) == 0);
    switch (pick(g, 6)) {
    case 0:
        arr = cJSON_AddArrayToObject(o, "result");
        cJSON_AddItemToArray(arr, cJSON_CreateString("x"));
        cJSON_AddItemToArray(arr, cJSON_CreateObject());
        cJSON_AddStringToObject(cJSON_GetArrayItem(arr, 1), "type", "text");
        cJSON_AddStringToObject(cJSON_GetArrayItem(arr, 1), "text", PICK(g, texts));
        break;
    case 1:
        cJSON_AddNullToObject(o, "result");
        break;
    default:
        cJSON_AddStringToObject(o, "result", PICK(g, texts));
    }
    if (pick(g, 3) == 0) {
        arr = cJSON_AddArrayToObject(o, "errors");
        cJSON_AddItemToArray(arr, cJSON_CreateString(PICK(g, texts)));
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(3));
    }
    return o;
}

static cJSON *gen_assistant(struct rng *g)
{
    static const char *const kinds[] = {"text",     "thinking", "redacted_thinking",
                                        "tool_use", "image",    "text"};
    static const char *const tools[] = {"Write", "Edit", "Read", "Bash"};
    cJSON *o = cJSON_CreateObject(), *msg, *content;
    size_t blocks = pick(g, 4);
    cJSON_AddStringToObject(o, "type", "assistant");
    msg = cJSON_AddObjectToObject(o, "message");
    if (pick(g, 5) == 0) {
        cJSON_AddStringToObject(msg, "content", PICK(g, texts));
        return o;
    }
    content = cJSON_AddArrayToObject(msg, "content");
    for (size_t i = 0; i < blocks; i++) {
        cJSON *b = cJSON_CreateObject();
        const char *kind = PICK(g, kinds);
        cJSON_AddStringToObject(b, "type", kind);
        if (strcmp(kind, "text") == 0)
            cJSON_AddStringToObject(b, "text", PICK(g, texts));
        if (strcmp(kind, "tool_use") == 0)
            cJSON_AddStringToObject(b, "name", PICK(g, tools));
        cJSON_AddItemToArray(content, b);
    }
    return o;
}

static cJSON *gen_flat_exhaustion(struct rng *g)
{
    cJSON *o = cJSON_CreateObject(), *content, *b;
    cJSON_AddStringToObject(o, "type", "assistant");
    cJSON_AddNumberToObject(o, "output_tokens", (double)pick(g, 2));
    content = cJSON_AddArrayToObject(o, "content");
    b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "text");
    cJSON_AddStringToObject(b, "text", pick(g, 2) ? "Prompt is too long" : "fine");
    cJSON_AddItemToArray(content, b);
    return o;
}

/* Random stdout: blank, garbage, one result object, or NDJSON lines of every kind. */
static void gen_stdout(struct rng *g, struct gen *x)
{
    size_t shape = pick(g, 10), lines = 1 + pick(g, 5);
    bool crlf = pick(g, 6) == 0;
    x->len = 0;
    gen_append(x, "");
    if (shape == 0) {
        gen_append(x, pick(g, 2) ? "" : " \n\t ");
    } else if (shape == 1) {
        gen_append(x, PICK(g, garbage));
    } else if (shape == 2) {
        gen_line(x, gen_result(g), false);
    } else {
        for (size_t i = 0; i < lines; i++) {
            size_t kind = pick(g, 8);
            if (kind < 3)
                gen_line(x, gen_assistant(g), crlf);
            else if (kind == 3)
                gen_line(x, gen_flat_exhaustion(g), crlf);
            else if (kind == 4) {
                gen_append(x, PICK(g, garbage));
                gen_append(x, "\n");
            } else if (kind == 5)
                gen_append(x, "{\"type\":\"user\",\"message\":{}}\n");
        }
        if (pick(g, 4))
            gen_line(x, gen_result(g), crlf);
    }
    x->r.stdout_text = x->out;
}

static void gen_parsed(struct rng *g, struct gen *x)
{
    vd_parsed_session *p = &x->r.parsed;
    x->r.has_parsed = true;
    p->subtype = (vd_cli_subtype)pick(g, VD_CLI_SUBTYPE__MAX);
    p->is_error = pick(g, 4) == 0;
    p->result = PICK(g, texts);
    p->n_errors = pick(g, 3);
    for (size_t i = 0; i < p->n_errors; i++)
        x->errors[i] = PICK(g, texts);
    p->errors = x->errors;
    p->n_assistant_messages = pick(g, 4);
    for (size_t i = 0; i < p->n_assistant_messages; i++)
        x->msgs[i] = PICK(g, texts);
    p->assistant_messages = x->msgs;
    p->write_call_count = (int)pick(g, 3) - 1;
    p->has_thinking_only_turn = pick(g, 4) == 0;
    p->context_exhausted = pick(g, 8) == 0;
}

/* Report number i: the four enums cycle through all 300 combinations; the rest is random. */
static void gen_report(struct rng *g, struct gen *x, size_t i)
{
    static const int codes[] = {0, 0, 0, 1, -1, -9, -15, 137, -2147483647 - 1, 2147483647};
    vd_session_report *r = &x->r;
    vd_session_report_init(r);
    r->termination = (vd_termination)(i % VD_TERMINATION__MAX);
    r->channel = (vd_channel)(i / VD_TERMINATION__MAX % VD_CHANNEL__MAX);
    r->kill_reason = (vd_kill_reason)(i / 20 % VD_KILL_REASON__MAX);
    r->write_behavior.mode = (vd_write_mode)(i / 100 % VD_WRITE_MODE__MAX);
    r->returncode_known = pick(g, 5) != 0;
    r->returncode = PICK(g, codes);
    r->stderr_text = PICK(g, stderrs);
    r->completion_marker = PICK(g, markers);
    r->n_expected_output_patterns = pick(g, 4) == 0 ? 1 + pick(g, 3) : 0;
    for (size_t k = 0; k < r->n_expected_output_patterns; k++)
        x->pats[k] = PICK(g, patterns);
    r->expected_output_patterns = x->pats;
    r->write_behavior.n_expected_when = pick(g, 3);
    for (size_t k = 0; k < r->write_behavior.n_expected_when; k++)
        x->when[k] = PICK(g, patterns);
    r->write_behavior.expected_when = x->when;
    r->fs_writes_detected = pick(g, 4) == 0;
    /* Mostly within budget, so budget_exhausted does not hide the other reasons. */
    r->prior_consecutive_retries = pick(g, 3) == 0 ? (int)pick(g, 5) : 0;
    r->max_consecutive_retries = 1 + (int)pick(g, 4);
    if (pick(g, 4) == 0)
        gen_parsed(g, x);
    else
        gen_stdout(g, x);
}

/* The §5 invariants of one answer; returns a description of the first broken one or NULL. */
static const char *broken_invariant(const vd_adjudication *a)
{
    if (a->success && a->needs_retry)
        return "success and needs_retry";
    if (a->outcome != (a->success       ? VD_SESSION_OUTCOME_SUCCEEDED
                       : a->needs_retry ? VD_SESSION_OUTCOME_RETRIABLE
                                        : VD_SESSION_OUTCOME_FAILED))
        return "outcome is not a function of (success, needs_retry)";
    if (a->subtype == VD_SUBTYPE_LABEL_SUCCESS && !a->success)
        return "subtype success without success";
    if (a->success && a->subtype != VD_SUBTYPE_LABEL_SUCCESS &&
        a->subtype != VD_SUBTYPE_LABEL_RECOVERED_FROM_STALE &&
        a->subtype != VD_SUBTYPE_LABEL_RECOVERED_FROM_IDLE_STALL)
        return "success with a non-success subtype";
    if ((a->retry_reason == VD_RETRY_REASON_NONE) != (a->outcome != VD_SESSION_OUTCOME_RETRIABLE) &&
        !(a->retry_reason == VD_RETRY_REASON_BUDGET_EXHAUSTED &&
          a->outcome == VD_SESSION_OUTCOME_FAILED))
        return "retry_reason none does not match the outcome";
    if ((a->content_state == VD_CONTENT_STATE_CONTRACT_VIOLATION ||
         a->content_state == VD_CONTENT_STATE_SESSION_ERROR) &&
        a->retry_reason == VD_RETRY_REASON_DRAIN_RACE)
        return "dead-end guard promoted a terminal content state";
    if (a->result_text == NULL)
        return "no result_text";
    return NULL;
}

static char *serialise(const vd_adjudication *a)
{
    cJSON *json = vd_adjudication_to_json(a);
    char *s;
    assert_non_null(json);
    s = cJSON_PrintUnformatted(json);
    cJSON_Delete(json);
    assert_non_null(s);
    return s;
}

static size_t property_iterations(void)
{
    const char *env = getenv("VERDICT_PROPERTY_ITERATIONS");
    char *end = NULL;
    unsigned long long n;
    if (env == NULL || *env == '\0')
        return 100000;
    n = strtoull(env, &end, 10);
    return end != NULL && *end == '\0' && n > 0 ? (size_t)n : 100000;
}

static void check_one(struct gen *x, size_t i, size_t *seen_outcomes)
{
    vd_adjudication a1, a2;
    const char *why;
    char *j1, *j2;
    assert_int_equal(vd_adjudicate(&x->r, &a1), VD_OK);
    assert_int_equal(vd_adjudicate(&x->r, &a2), VD_OK);
    j1 = serialise(&a1);
    j2 = serialise(&a2);
    why = broken_invariant(&a1);
    if (why != NULL || strcmp(j1, j2) != 0)
        fail_msg("report %zu: %s; answer %s; stdout %.300s", i, why ? why : "not deterministic", j1,
                 x->r.has_parsed ? "(parsed)" : x->r.stdout_text);
    seen_outcomes[a1.outcome]++;
    free(j1);
    free(j2);
    vd_adjudication_cleanup(&a1);
    vd_adjudication_cleanup(&a2);
}

static void test_adjudicator_properties(void **state)
{
    struct rng g = {20240601u};
    struct gen x;
    size_t n = property_iterations(), seen[VD_SESSION_OUTCOME__MAX] = {0};
    (void)state;
    memset(&x, 0, sizeof x);
    for (size_t i = 0; i < n; i++) {
        gen_report(&g, &x, i);
        check_one(&x, i, seen);
    }
    free(x.out);
    /* The generator must reach every outcome, or the properties prove little. */
    for (int o = 0; o < VD_SESSION_OUTCOME__MAX && n >= 1000; o++)
        assert_true(seen[o] > 0);
}

/* ---- (c) codec rejections ---- */

struct bad_case {
    const char *session;
    vd_error err;
    const char *field;
};

static void test_adjudicator_codec_errors(void **state)
{
    static const struct bad_case cases[] = {
        {"{}", VD_ERR_MISSING_FIELD, "session.stdout"},
        {"{\"stdout\":\"\",\"parsed\":{}}", VD_ERR_INVALID_FIELD, "session.parsed"},
        {"{\"stdout\":1}", VD_ERR_INVALID_FIELD, "session.stdout"},
        {"{\"stdout\":null}", VD_ERR_MISSING_FIELD, "session.stdout"},
        {"{\"stdout\":\"\",\"returncode\":\"0\"}", VD_ERR_INVALID_FIELD, "session.returncode"},
        {"{\"stdout\":\"\",\"returncode\":1.5}", VD_ERR_INVALID_FIELD, "session.returncode"},
        {"{\"stdout\":\"\",\"returncode\":3e9}", VD_ERR_INVALID_FIELD, "session.returncode"},
        {"{\"stdout\":\"\",\"termination\":\"killed\"}", VD_ERR_INVALID_FIELD,
         "session.termination"},
        {"{\"stdout\":\"\",\"termination\":1}", VD_ERR_INVALID_FIELD, "session.termination"},
        {"{\"stdout\":\"\",\"channel\":\"CHANNEL_A\"}", VD_ERR_INVALID_FIELD, "session.channel"},
        {"{\"stdout\":\"\",\"kill_reason\":\"\"}", VD_ERR_INVALID_FIELD, "session.kill_reason"},
        {"{\"stdout\":\"\",\"stderr\":[]}", VD_ERR_INVALID_FIELD, "session.stderr"},
        {"{\"stdout\":\"\",\"completion_marker\":false}", VD_ERR_INVALID_FIELD,
         "session.completion_marker"},
        {"{\"stdout\":\"\",\"expected_output_patterns\":\"x\"}", VD_ERR_INVALID_FIELD,
         "session.expected_output_patterns"},
        {"{\"stdout\":\"\",\"expected_output_patterns\":[\"a\",\"b\",3]}", VD_ERR_INVALID_FIELD,
         "session.expected_output_patterns[2]"},
        {"{\"stdout\":\"\",\"write_behavior\":\"always\"}", VD_ERR_INVALID_FIELD,
         "session.write_behavior"},
        {"{\"stdout\":\"\",\"write_behavior\":{\"mode\":\"sometimes\"}}", VD_ERR_INVALID_FIELD,
         "session.write_behavior.mode"},
        {"{\"stdout\":\"\",\"write_behavior\":{\"expected_when\":[null]}}", VD_ERR_INVALID_FIELD,
         "session.write_behavior.expected_when[0]"},
        {"{\"stdout\":\"\",\"fs_writes_detected\":1}", VD_ERR_INVALID_FIELD,
         "session.fs_writes_detected"},
        {"{\"stdout\":\"\",\"prior_consecutive_retries\":-1}", VD_ERR_INVALID_FIELD,
         "session.prior_consecutive_retries"},
        {"{\"stdout\":\"\",\"prior_consecutive_retries\":1.5}", VD_ERR_INVALID_FIELD,
         "session.prior_consecutive_retries"},
        {"{\"stdout\":\"\",\"max_consecutive_retries\":0}", VD_ERR_INVALID_FIELD,
         "session.max_consecutive_retries"},
        {"{\"stdout\":\"\",\"max_consecutive_retries\":true}", VD_ERR_INVALID_FIELD,
         "session.max_consecutive_retries"},
        {"{\"parsed\":[]}", VD_ERR_INVALID_FIELD, "session.parsed"},
        {"{\"parsed\":{\"subtype\":\"error\"}}", VD_ERR_INVALID_FIELD, "session.parsed.subtype"},
        {"{\"parsed\":{\"is_error\":\"true\"}}", VD_ERR_INVALID_FIELD, "session.parsed.is_error"},
        {"{\"parsed\":{\"errors\":[1]}}", VD_ERR_INVALID_FIELD, "session.parsed.errors[0]"},
        {"{\"parsed\":{\"assistant_messages\":{}}}", VD_ERR_INVALID_FIELD,
         "session.parsed.assistant_messages"},
        {"{\"parsed\":{\"write_call_count\":-1}}", VD_ERR_INVALID_FIELD,
         "session.parsed.write_call_count"},
        {"{\"parsed\":{\"context_exhausted\":\"no\"}}", VD_ERR_INVALID_FIELD,
         "session.parsed.context_exhausted"},
        {"{\"parsed\":{\"has_thinking_only_turn\":0}}", VD_ERR_INVALID_FIELD,
         "session.parsed.has_thinking_only_turn"},
        {"[]", VD_ERR_INVALID_FIELD, "session"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *session = cJSON_Parse(cases[i].session);
        vd_session_report r;
        const char *field = NULL;
        vd_error err;
        assert_non_null(session);
        err = vd_session_report_from_json(session, 3, &r, &field);
        if (err != cases[i].err || field == NULL || strcmp(field, cases[i].field) != 0)
            fail_msg("%s: got %s %s, want %s %s", cases[i].session, vd_error_code(err),
                     field ? field : "-", vd_error_code(cases[i].err), cases[i].field);
        vd_session_report_cleanup(&r);
        cJSON_Delete(session);
    }
}

static void test_adjudicator_codec_defaults(void **state)
{
    cJSON *session = cJSON_Parse("{\"stdout\":\"x\",\"returncode\":null,\"extra\":[1]}");
    vd_session_report r;
    const char *field = NULL;
    (void)state;
    assert_int_equal(vd_session_report_from_json(session, 5, &r, &field), VD_OK);
    assert_false(r.returncode_known);
    assert_int_equal(r.termination, VD_TERMINATION_NATURAL_EXIT);
    assert_int_equal(r.channel, VD_CHANNEL_UNMONITORED);
    assert_int_equal(r.max_consecutive_retries, 5);
    assert_int_equal(r.prior_consecutive_retries, 0);
    assert_string_equal(r.stdout_text, "x");
    vd_session_report_cleanup(&r);
    cJSON_Delete(session);
    /* null reads as absent: stdout null beside parsed is the parsed form. */
    session = cJSON_Parse("{\"stdout\":null,\"parsed\":{\"is_error\":null},\"channel\":null}");
    assert_int_equal(vd_session_report_from_json(session, 3, &r, &field), VD_OK);
    assert_true(r.has_parsed);
    assert_false(r.parsed.is_error);
    assert_int_equal(r.parsed.subtype, VD_CLI_SUBTYPE_UNKNOWN);
    assert_int_equal(r.channel, VD_CHANNEL_UNMONITORED);
    vd_session_report_cleanup(&r);
    cJSON_Delete(session);
    /* NULL session: missing. */
    assert_int_equal(vd_session_report_from_json(NULL, 3, &r, &field), VD_ERR_MISSING_FIELD);
    assert_string_equal(field, "session");
    vd_session_report_cleanup(&r);
}

static void test_adjudicator_codec_parsed_result_array(void **state)
{
    cJSON *answer = answer_for_text(
        "{\"returncode\":0,\"parsed\":{\"subtype\":\"success\",\"result\":[{\"type\":\"text\","
        "\"text\":\"a\"},{\"type\":\"image\"},{\"type\":\"text\",\"text\":\"b\"}]}}");
    (void)state;
    assert_string_equal(str_of(answer, "result_text"), "a\nb");
    assert_string_equal(str_of(answer, "outcome"), "succeeded");
    cJSON_Delete(answer);
}

/* ---- (d) stdout parser details ---- */

static void test_adjudicator_duplicate_keys_first_wins(void **state)
{
    cJSON *answer = answer_for_stdout(
        "{\"type\":\"result\",\"subtype\":\"success\",\"subtype\":\"error_max_turns\","
        "\"is_error\":false,\"result\":\"first\",\"result\":\"second\"}",
        NULL);
    (void)state;
    assert_string_equal(str_of(answer, "cli_subtype"), "success");
    assert_string_equal(str_of(answer, "result_text"), "first");
    assert_string_equal(str_of(answer, "outcome"), "succeeded");
    cJSON_Delete(answer);
    /* A first "type" that is not "result" hides a later one. */
    answer = answer_for_stdout("{\"type\":\"system\",\"type\":\"result\",\"subtype\":\"success\","
                               "\"result\":\"x\"}",
                               NULL);
    assert_string_equal(str_of(answer, "cli_subtype"), "unparseable");
    cJSON_Delete(answer);
}

static void test_adjudicator_thinking_only_turn(void **state)
{
    cJSON *answer = answer_for_stdout(
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"thinking\",\"thinking\":"
        "\"hm\"}]}}\n{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"\"}",
        NULL);
    (void)state;
    assert_string_equal(str_of(answer, "retry_reason"), "thinking_stall");
    cJSON_Delete(answer);
    /* An empty text block beside the thinking block: not thinking-only. */
    answer = answer_for_stdout(
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"redacted_thinking\"},"
        "{\"type\":\"text\",\"text\":\"\"}]}}\n"
        "{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"\"}",
        NULL);
    assert_string_equal(str_of(answer, "retry_reason"), "empty_output");
    cJSON_Delete(answer);
}

static void test_adjudicator_prompt_too_long(void **state)
{
    const char *flat = "{\"type\":\"assistant\",\"output_tokens\":0,\"content\":[{\"type\":"
                       "\"text\",\"text\":\"Error: PROMPT IS TOO LONG\"}]}";
    cJSON *answer = answer_for_stdout(flat, NULL);
    (void)state;
    assert_string_equal(str_of(answer, "cli_subtype"), "context_exhaustion");
    assert_string_equal(str_of(answer, "infra_exit"), "context_exhausted");
    assert_string_equal(str_of(answer, "retry_reason"), "resume");
    cJSON_Delete(answer);
    /* output_tokens 1, or a `message` present: not exhaustion. */
    answer = answer_for_stdout("{\"type\":\"assistant\",\"output_tokens\":1,\"content\":[{\"type\":"
                               "\"text\",\"text\":\"prompt is too long\"}]}",
                               NULL);
    assert_string_equal(str_of(answer, "cli_subtype"), "unparseable");
    cJSON_Delete(answer);
    answer = answer_for_stdout("{\"type\":\"assistant\",\"message\":null,\"output_tokens\":0,"
                               "\"content\":[{\"type\":\"text\",\"text\":\"prompt is too long\"}]}",
                               NULL);
    assert_string_equal(str_of(answer, "cli_subtype"), "unparseable");
    cJSON_Delete(answer);
}

static void test_adjudicator_result_array_form(void **state)
{
    cJSON *answer = answer_for_stdout(
        "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":[{\"type\":"
        "\"text\",\"text\":\"part one\"},\"skip\",{\"type\":\"tool_use\"},{\"type\":\"text\","
        "\"text\":\"part two %%M%%\"}]}",
        "%%M%%");
    (void)state;
    assert_string_equal(str_of(answer, "result_text"), "part one\npart two");
    assert_string_equal(str_of(answer, "outcome"), "succeeded");
    cJSON_Delete(answer);
}

static void test_adjudicator_trailing_garbage_ignored(void **state)
{
    cJSON *answer = answer_for_stdout(
        "{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"early\"}\n"
        "{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"ok\"}\n"
        "{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"late\"} trailing\n"
        "{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"lead0\",\"n\":01}\n"
        "{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"nul\\u0000\"}\n"
        "garbage {",
        NULL);
    (void)state;
    /* The last *valid* result record wins. */
    assert_string_equal(str_of(answer, "result_text"), "ok");
    assert_string_equal(str_of(answer, "outcome"), "succeeded");
    cJSON_Delete(answer);
}

static void test_adjudicator_truncation_counts_code_points(void **state)
{
    size_t n = VD_RESULT_TEXT_MAX_CHARS + 3;
    char *out = malloc(64 + 2 * n), *want;
    cJSON *answer;
    size_t len = 0;
    (void)state;
    assert_non_null(out);
    len += (size_t)snprintf(out, 64, "{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"");
    for (size_t i = 0; i < n; i++, len += 2)
        memcpy(out + len, "\xc3\xa9", 2); /* é */
    memcpy(out + len, "\"}", 3);
    answer = answer_for_stdout(out, NULL);
    want = strstr(str_of(answer, "result_text"), "]...\n");
    assert_true(strncmp(str_of(answer, "result_text"), "...[truncated 3 chars]...\n", 26) == 0);
    assert_non_null(want);
    assert_int_equal(strlen(want + 5), 2 * VD_RESULT_TEXT_MAX_CHARS);
    cJSON_Delete(answer);
    free(out);
}

static void test_adjudicator_invalid_regex_warnings(void **state)
{
    cJSON *answer = answer_for_text(
        "{\"returncode\":0,\"expected_output_patterns\":[\"ok\",\"(\"],\"write_behavior\":"
        "{\"mode\":\"conditional\",\"expected_when\":[\"[a-\"]},\"stdout\":\"{\\\"type\\\":"
        "\\\"result\\\",\\\"subtype\\\":\\\"success\\\",\\\"result\\\":\\\"ok\\\"}\"}");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(answer, "warnings");
    (void)state;
    assert_int_equal(cJSON_GetArraySize(w), 2);
    assert_true(strncmp(cJSON_GetArrayItem(w, 0)->valuestring,
                        "invalid regex in expected_output_patterns[1]: ", 46) == 0);
    assert_true(strncmp(cJSON_GetArrayItem(w, 1)->valuestring,
                        "invalid regex in write_behavior.expected_when[0]: ", 50) == 0);
    /* The invalid pattern never matches: the contract is violated. */
    assert_string_equal(str_of(answer, "content_state"), "contract_violation");
    assert_string_equal(str_of(answer, "outcome"), "failed");
    cJSON_Delete(answer);
}

static void test_adjudicator_bold_key_normalised(void **state)
{
    cJSON *answer = answer_for_text(
        "{\"returncode\":0,\"expected_output_patterns\":[\"plan_path\\\\s*=\\\\s*/\\\\S+\"],"
        "\"stdout\":\"{\\\"type\\\":\\\"result\\\",\\\"subtype\\\":\\\"success\\\",\\\"result\\\":"
        "\\\"**plan_path** = /tmp/p.md\\\"}\"}");
    (void)state;
    assert_string_equal(str_of(answer, "outcome"), "succeeded");
    assert_string_equal(str_of(answer, "content_state"), "complete");
    cJSON_Delete(answer);
}

/* A long result (the windowed search leaves an offset limit on the match context) whose
 * tokens are bold past the first window: every bold key is rewritten, wherever it sits. */
static void test_adjudicator_bold_key_in_long_result(void **state)
{
    cJSON *answer = answer_for_text(
        "{\"returncode\":0,\"termination\":\"completed\",\"channel\":\"channel_b\","
        "\"completion_marker\":\"%%ORDER_UP%%\",\"expected_output_patterns\":["
        "\"verdict\\\\s*=\\\\s*(GO|NO GO)\",\"plan_path\\\\s*=\\\\s*/\\\\S+\"],"
        "\"stdout\":\"{\\\"type\\\":\\\"result\\\",\\\"subtype\\\":\\\"success\\\","
        "\\\"result\\\":\\\"The plan was checked against the repository, the open issues "
        "and the tests; nothing is missing.\\\\n**verdict** = GO\\\\n**plan_path** = "
        "/tmp/plan.md %%ORDER_UP%%\\\"}\"}");
    (void)state;
    assert_string_equal(str_of(answer, "outcome"), "succeeded");
    assert_string_equal(str_of(answer, "content_state"), "complete");
    cJSON_Delete(answer);
}

static void test_adjudicator_rejects_broken_reports(void **state)
{
    vd_session_report r;
    vd_adjudication a;
    const char *bad_utf8 = "\xc3\x28";
    (void)state;
    vd_session_report_init(&r);
    r.termination = VD_TERMINATION__MAX;
    assert_int_equal(vd_adjudicate(&r, &a), VD_ERR_INVALID_FIELD);
    vd_session_report_init(&r);
    r.stdout_text = bad_utf8;
    assert_int_equal(vd_adjudicate(&r, &a), VD_ERR_INVALID_FIELD);
    vd_session_report_init(&r);
    r.n_expected_output_patterns = 1;
    assert_int_equal(vd_adjudicate(&r, &a), VD_ERR_INVALID_FIELD);
    vd_session_report_init(&r);
    r.max_consecutive_retries = 0;
    assert_int_equal(vd_adjudicate(&r, &a), VD_ERR_INVALID_FIELD);
    vd_adjudication_cleanup(&a);
}

static void test_adjudicator_enum_names_round_trip(void **state)
{
    (void)state;
    for (int i = 0; i < VD_SUBTYPE_LABEL__MAX; i++) {
        vd_subtype_label l = VD_SUBTYPE_LABEL__MAX;
        assert_true(vd_subtype_label_parse(vd_subtype_label_name((vd_subtype_label)i), &l));
        assert_int_equal(l, i);
    }
    for (int i = 0; i < VD_RETRY_REASON__MAX; i++) {
        vd_retry_reason v = VD_RETRY_REASON__MAX;
        assert_true(vd_retry_reason_parse(vd_retry_reason_name((vd_retry_reason)i), &v));
        assert_int_equal(v, i);
    }
    assert_string_equal(vd_channel_name(VD_CHANNEL_B), "channel_b");
    assert_string_equal(vd_termination_name(VD_TERMINATION__MAX), "invalid");
    assert_false(vd_cli_subtype_parse("Success", &(vd_cli_subtype){0}));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adjudicator_vectors),
        cmocka_unit_test(test_adjudicator_properties),
        cmocka_unit_test(test_adjudicator_codec_errors),
        cmocka_unit_test(test_adjudicator_codec_defaults),
        cmocka_unit_test(test_adjudicator_codec_parsed_result_array),
        cmocka_unit_test(test_adjudicator_duplicate_keys_first_wins),
        cmocka_unit_test(test_adjudicator_thinking_only_turn),
        cmocka_unit_test(test_adjudicator_prompt_too_long),
        cmocka_unit_test(test_adjudicator_result_array_form),
        cmocka_unit_test(test_adjudicator_trailing_garbage_ignored),
        cmocka_unit_test(test_adjudicator_truncation_counts_code_points),
        cmocka_unit_test(test_adjudicator_invalid_regex_warnings),
        cmocka_unit_test(test_adjudicator_bold_key_normalised),
        cmocka_unit_test(test_adjudicator_bold_key_in_long_result),
        cmocka_unit_test(test_adjudicator_rejects_broken_reports),
        cmocka_unit_test(test_adjudicator_enum_names_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
