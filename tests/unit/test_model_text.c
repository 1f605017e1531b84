/* test_model_text.c - every text a model reads keeps model_text.h's rules: the tool
 * descriptions and every description in their argument schemas, the tool_result of every
 * disposition outcome, every tool-failure hint (with its tool_result prefix) and the incident
 * hint, the MCP refusal text of every error code, and briefings; quotes are cut at a word
 * boundary with "…". Also the rule checker itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/http_internal.h"
#include "verdict/briefing.h"
#include "verdict/incidents.h"
#include "verdict/model_text.h"
#include "verdict/tool_failures.h"
#include "verdict/tool_result.h"

/* A long tool name and a long error, with spaces (cut at a word) and without. */
static const char long_tool[] = "wordpress_rest_api_posts_upsert_with_featured_media_and_terms "
                                "for the editorial calendar of the newsroom";
static const char long_error[] =
    "rest_post_invalid_id: Invalid post ID. The post you are trying to update does not exist "
    "any more, it may have been deleted by another editor while the job was running";

static void check_text(const char *what, const char *text, bool ends_turn)
{
    const char *why = vd_model_text_violation(text, ends_turn);
    if (why)
        fail_msg("%s: %s: \"%s\"", what, why, text);
}

/* Every "description" of a JSON schema, at any depth. */
static void check_descriptions(const char *tool, const cJSON *node)
{
    const cJSON *c = NULL;
    if (!node)
        return;
    cJSON_ArrayForEach(c, node)
    {
        if (c->string && strcmp(c->string, "description") == 0 && cJSON_IsString(c))
            check_text(tool, c->valuestring, false);
        else
            check_descriptions(tool, c);
    }
}

static void test_model_text_tool_descriptions(void **state)
{
    (void)state;
    for (size_t i = 0; i < vd_agent_tool_count; i++) {
        check_text(vd_agent_tools[i].name, vd_agent_tools[i].description, false);
        cJSON *schema = vd_agent_tools[i].schema();
        check_descriptions(vd_agent_tools[i].name, schema);
        cJSON_Delete(schema);
    }
}

static void test_model_text_dispositions(void **state)
{
    (void)state;
    static const char *const codes[] = {NULL,
                                        "irrelevant",
                                        "too_thin",
                                        "duplicate",
                                        "spam",
                                        "low_quality",
                                        "other",
                                        "tool_error",
                                        "quality_gate",
                                        "provider_error",
                                        "low_confidence",
                                        "dependency_outage",
                                        "engine_error",
                                        "retry_budget_exhausted",
                                        "churn"};
    static const double delays[] = {0, 10.2, 5400, 129600, 604800};
    char out[VD_TOOL_RESULT_MAX], what[64];
    for (int d = 0; d < VD_DISPOSITION__MAX; d++)
        for (int to = 0; to < VD_ITEM__MAX; to++)
            for (size_t c = 0; c < sizeof(codes) / sizeof(codes[0]); c++)
                for (size_t k = 0; k < sizeof(delays) / sizeof(delays[0]); k++) {
                    vd_tool_result_disposition((vd_disposition)d, codes[c], (vd_item_state)to,
                                               delays[k], out, sizeof(out));
                    snprintf(what, sizeof(what), "disposition %d to %d", d, to);
                    check_text(what, out, true); /* a disposition ends the turn */
                }
}

static void test_model_text_tool_failures(void **state)
{
    (void)state;
    static const char *const tools[] = {"wiki_upsert", long_tool, "x"};
    static const vd_tool_kind kinds[] = {VD_TOOL_KIND_DETERMINISTIC, VD_TOOL_KIND_TRANSIENT};
    char out[VD_TOOL_RESULT_MAX];
    vd_tool_verdict v;
    for (size_t t = 0; t < 3; t++)
        for (size_t k = 0; k < 2; k++)
            for (int required = 0; required < 2; required++)
                for (long repeat = 1; repeat <= 3; repeat++) {
                    vd_tool_verdict_decide(kinds[k], tools[t], required, repeat, 3, &v);
                    check_text("hint", v.hint, false);
                    vd_tool_result_failure(tools[t], vd_tool_kind_name(kinds[k]), v.hint, out,
                                           sizeof(out));
                    check_text("tool_result", out, false);
                }
    vd_tool_verdict_decide(VD_TOOL_KIND_DETERMINISTIC, "search", false, 1, 3, &v);
    assert_non_null(strstr(v.hint, "If the item cannot be finished without it, call defer_item."));
    vd_incident_ref inc = {42, 17, "wiki_upsert"};
    char hint[512];
    vd_incident_hint(&inc, hint, sizeof(hint));
    check_text("incident hint", hint, false);
    /* a tool name of 200 bytes (the longest a failure stores), with spaces and without: the
     * quote is cut at a word boundary with "…" and the hint keeps the rules */
    static const char *const names[] = {long_tool, "x"};
    for (size_t i = 0; i < 2; i++) {
        memset(inc.tool, 0, sizeof(inc.tool));
        for (size_t k = 0; k + 1 < sizeof(inc.tool); k++)
            inc.tool[k] = names[i][k % strlen(names[i])];
        assert_int_equal(strlen(inc.tool), 200);
        vd_incident_hint(&inc, hint, sizeof(hint));
        check_text("incident hint, long tool", hint, false);
        assert_non_null(strstr(hint, "\xe2\x80\xa6' fails the same way"));
        vd_tool_result_failure(inc.tool, "deterministic", hint, out, sizeof(out));
        check_text("incident tool_result, long tool", out, false);
    }
}

static void test_model_text_refusals(void **state)
{
    (void)state;
    static const char *const fields[] = {NULL, "reason", "evidence", long_tool};
    char out[4 * VD_MODEL_TEXT_MAX], what[64];
    for (int e = 1; e < VD_ERR__MAX; e++)
        for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
            vd_model_refusal((vd_error)e, fields[f], out, sizeof(out));
            snprintf(what, sizeof(what), "refusal %s", vd_error_code((vd_error)e));
            check_text(what, out, vd_model_refusal_ends_turn((vd_error)e));
        }
    vd_model_refusal(VD_ERR_REJECTION_SUSPECT, "reason", out, sizeof(out));
    assert_int_equal(vd_model_text_tools(out), 1);
    assert_non_null(strstr(out, "defer_item"));
    vd_model_refusal(VD_ERR_CLAIM_LOST, NULL, out, sizeof(out));
    assert_null(strstr(out, "laim new"));
}

static void test_model_text_briefings(void **state)
{
    (void)state;
    static const vd_briefing_tool det[] = {{long_tool, "deterministic", long_error},
                                           {"search", "transient", "HTTP 503"}};
    vd_briefing_attempt a[20];
    for (int i = 0; i < 20; i++)
        a[i] = (vd_briefing_attempt){i + 1,
                                     i % 3 ? "deferred" : "expired",
                                     "tool_error",
                                     long_error,
                                     i % 2 ? det : NULL,
                                     i % 2 ? 2 : 0};
    for (size_t n = 0; n <= 20; n++) {
        char *t = vd_briefing_render((int)n + 1, a, n);
        assert_non_null(t);
        check_text("briefing", t, false);
        free(t);
    }
    char *t = vd_briefing_render(2, a + 1, 1);
    assert_non_null(strstr(t, "\xe2\x80\xa6')")); /* the error is quoted, cut */
    free(t);
}

static void test_model_text_quote(void **state)
{
    (void)state;
    char out[200];
    vd_model_quote("short", 40, out, sizeof(out));
    assert_string_equal(out, "short");
    vd_model_quote("the post you are trying to update does not exist", 20, out, sizeof(out));
    assert_string_equal(out, "the post you are\xe2\x80\xa6");
    vd_model_quote("abcdefghijklmnopqrstuvwxyz", 10, out, sizeof(out));
    assert_string_equal(out, "abcdefghij\xe2\x80\xa6");
    /* never inside a character: 'é' is two bytes */
    vd_model_quote("ééééééééé", 5, out, sizeof(out));
    assert_string_equal(out, "éé\xe2\x80\xa6");
    vd_model_quote(NULL, 5, out, sizeof(out));
    assert_string_equal(out, "");
}

static void test_model_text_checker(void **state)
{
    (void)state;
    char long_text[400];
    memset(long_text, 'a', 281);
    long_text[281] = '\0';
    assert_non_null(vd_model_text_violation(long_text, false));
    assert_null(vd_model_text_violation("Call defer_item.", false));
    assert_non_null(vd_model_text_violation("Call defer_item or fail_item.", false));
    assert_non_null(vd_model_text_violation("Read it with GET /v1/jobs/{id}.", false));
    assert_non_null(vd_model_text_violation("Claim new work instead.", false));
    assert_non_null(vd_model_text_violation("Recorded.", true));
    assert_non_null(vd_model_text_violation("Recorded. Stop now.", false));
    assert_null(vd_model_text_violation("Recorded. Stop now.", true));
    assert_int_equal(vd_model_text_tools("defer_items and my_defer_item"), 0);
    /* the old texts this replaced broke the rules */
    assert_non_null(vd_model_text_violation(vd_error_hint(VD_ERR_CLAIM_LOST), true));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_text_tool_descriptions),
        cmocka_unit_test(test_model_text_dispositions),
        cmocka_unit_test(test_model_text_tool_failures),
        cmocka_unit_test(test_model_text_refusals),
        cmocka_unit_test(test_model_text_briefings),
        cmocka_unit_test(test_model_text_quote),
        cmocka_unit_test(test_model_text_checker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
