/* test_lint_rules.c - the pure parts of the rejection lint and the briefing, table-driven: the
 * classifier of reasons that read like a tooling failure (positives and genuine rejections), the
 * lint's rule (order, force, strict evidence), the tool_result texts and delays, and the briefing
 * text (runs told once, the advice, the length bound). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/briefing.h"
#include "verdict/lint.h"
#include "verdict/tool_result.h"

static void test_lint_classifier(void **state)
{
    (void)state;
    static const struct {
        const char *reason;
        bool tooling;
    } rows[] = {
        {"tool-error", true},
        {"tool_error", true},
        {"Tool error", true},
        {"error", true},
        {"failed", true},
        {"the wiki_upsert tool failed", true},
        {"Timeout while fetching", true},
        {"request timed out", true},
        {"ReadTimeout", true},
        {"failed to call wiki_upsert", true},
        {"HTTP 503 from the provider", true},
        {"http 5xx", true},
        {"got HTTP 500", true},
        {"RuntimeException in skill", true},
        {"exception: KeyError", true},
        {"rate limit reached", true},
        {"Connection refused", true},
        {"upsert failed", true},
        {"internal server error", true},
        /* genuine judgements of the source */
        {"duplicate of an existing article", false},
        {"spam", false},
        {"off-topic", false},
        {"paywalled", false},
        {"an exceptional article, but off topic", false},
        {"too thin: one-line post", false},
        {"the article contains factual errors", false},
        {"low quality, machine translated", false},
        {"HTTP/1.1 article about 500 recipes", false},
        {"irrelevant to the tooling topic", false},
        {"", false},
        {NULL, false},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (vd_lint_reads_like_tooling(rows[i].reason) != rows[i].tooling)
            fail_msg("'%s': want %d", rows[i].reason ? rows[i].reason : "(null)", rows[i].tooling);
    }
}

static const char *const failures[] = {"could not save the article: database locked",
                                       "HTTP 503 from the wiki upstream proxy (req_9f3ac2)"};

static void test_lint_rule(void **state)
{
    (void)state;
    static const struct {
        vd_lint_input in;
        vd_error rc;
        const char *field;
        bool overridden;
    } rows[] = {
        {{"duplicate", false, false, false, false, false, false, NULL, false, NULL, 0, false},
         VD_OK,
         NULL,
         false},
        /* tooling words alone never refuse (a signal, test_lint_signal); with a tool failure
         * on the item's record or an open incident they do */
        {{"tool-error", false, false, false, false, false, false, NULL, false, NULL, 0, false},
         VD_OK,
         NULL,
         false},
        {{"tool-error", false, false, false, false, false, false, NULL, false, failures, 2, false},
         VD_ERR_REJECTION_SUSPECT,
         "reason",
         false},
        {{"the API is down", false, false, false, false, false, false, NULL, false, NULL, 0, true},
         VD_ERR_REJECTION_SUSPECT,
         "reason",
         false},
        {{"spam", false, true, false, false, false, false, NULL, false, NULL, 0, false},
         VD_ERR_REJECTION_SUSPECT,
         "disposition",
         false},
        {{"spam", false, false, true, false, false, false, NULL, false, NULL, 0, false},
         VD_ERR_REJECTION_SUSPECT,
         "disposition",
         false},
        {{"tool-error", true, true, true, false, false, false, NULL, false, NULL, 0, false},
         VD_OK,
         NULL,
         true},
        {{"spam", true, false, false, false, false, false, NULL, false, NULL, 0, false},
         VD_OK,
         NULL,
         false},
        /* strict mode: evidence first, not waived by force */
        {{"spam", false, false, false, true, false, false, NULL, false, NULL, 0, false},
         VD_ERR_MISSING_FIELD,
         "evidence",
         false},
        {{"spam", true, true, false, true, false, false, NULL, false, NULL, 0, false},
         VD_ERR_MISSING_FIELD,
         "evidence",
         false},
        {{"spam", false, false, false, true, true, false, NULL, false, NULL, 0, false},
         VD_ERR_EVIDENCE_NOT_FOUND,
         "evidence",
         false},
        {{"spam", false, false, false, true, true, true, NULL, false, NULL, 0, false},
         VD_OK,
         NULL,
         false},
        {{"spam", false, true, false, true, true, true, NULL, false, NULL, 0, false},
         VD_ERR_REJECTION_SUSPECT,
         "disposition",
         false},
        {{"spam", true, true, false, true, true, true, NULL, false, NULL, 0, false},
         VD_OK,
         NULL,
         true},
        /* reason_code other: evidence from the payload, or force */
        {{"spam", false, false, false, false, false, false, NULL, true, NULL, 0, false},
         VD_ERR_MISSING_FIELD,
         "evidence",
         false},
        {{"spam", false, false, false, false, true, false, "x", true, NULL, 0, false},
         VD_ERR_EVIDENCE_NOT_FOUND,
         "evidence",
         false},
        {{"spam", false, false, false, false, true, true, "x", true, NULL, 0, false},
         VD_OK,
         NULL,
         false},
        {{"spam", true, false, false, false, false, false, NULL, true, NULL, 0, false},
         VD_OK,
         NULL,
         false},
        /* the reason or evidence restates one of the item's tool failures */
        {{"Rejected: Could not save the article:   Database LOCKED", false, false, false, false,
          false, false, NULL, false, failures, 2, false},
         VD_ERR_REJECTION_SUSPECT,
         "reason",
         false},
        {{"thin", false, false, false, false, true, true, "HTTP 503 from the wiki upstream proxy",
          false, failures, 2, false},
         VD_ERR_REJECTION_SUSPECT,
         "evidence",
         false},
        {{"could not save the article", true, false, false, false, false, false, NULL, false,
          failures, 2, false},
         VD_OK,
         NULL,
         true},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        vd_lint_verdict v = vd_lint_judge(&rows[i].in);
        if (v.rc != rows[i].rc || v.overridden != rows[i].overridden)
            fail_msg("row %zu: rc %d overridden %d", i, v.rc, v.overridden);
        if (rows[i].field)
            assert_string_equal(v.field, rows[i].field);
        else
            assert_null(v.field);
        assert_true((v.rc == VD_OK) == (v.why == NULL));
    }
}

/* Shared runs: case and whitespace do not matter, 23 bytes are not enough, any script counts,
 * and only whole runs of 24 bytes match (not scattered letters). */
static void test_lint_shares_span(void **state)
{
    (void)state;
    assert_true(vd_lint_shares_span("The API said: RATE LIMIT exceeded for key",
                                    "error: rate   limit exceeded for key abc", 24));
    assert_false(vd_lint_shares_span("abcdefghijklmnopqrstuvw", "abcdefghijklmnopqrstuvw", 24));
    assert_true(
        vd_lint_shares_span("abcdefghijklmnopqrstuvwx", "..abcdefghijklmnopqrstuvwx..", 24));
    assert_true(vd_lint_shares_span("Der Artikel konnte nicht gespeichert werden",
                                    "Fehler: Der Artikel konnte nicht gespeichert werden (500)",
                                    24));
    assert_true(vd_lint_shares_span("記事を保存できませんでした。データベースがロックされています",
                                    "エラー: 記事を保存できませんでした。データベース", 24));
    assert_false(vd_lint_shares_span("The article is a thin press release with no facts",
                                     "wiki_upsert: permission denied for page Foo", 24));
    assert_false(vd_lint_shares_span(NULL, "x", 24));
    assert_false(vd_lint_shares_span("x", NULL, 24));
}

/* The words signal: accepted and noted when nothing backs it, not noted when refused or when
 * the reason has no tooling words. */
static void test_lint_signal(void **state)
{
    (void)state;
    vd_lint_verdict v = vd_lint_judge(&(vd_lint_input){.reason = "the API is down"});
    assert_int_equal(v.rc, VD_OK);
    assert_string_equal(v.signal, VD_LINT_SIGNAL_WORDS);
    assert_false(v.overridden);
    v = vd_lint_judge(&(vd_lint_input){.reason = "spam"});
    assert_null(v.signal);
    v = vd_lint_judge(
        &(vd_lint_input){.reason = "the API is down", .n_failures = 2, .failures = failures});
    assert_int_equal(v.rc, VD_ERR_REJECTION_SUSPECT);
    assert_null(v.signal);
    v = vd_lint_judge(
        &(vd_lint_input){.reason = "the API is down", .force = true, .incident_open = true});
    assert_int_equal(v.rc, VD_OK);
    assert_true(v.overridden);
}

/* Same template, no 24-byte run: other ids, numbers, quoted values, a reworded variable part,
 * in English and German and Spanish, whole or quoted amid other words; a template of fewer
 * than three constant words, or another failure, is not matched. */
static void test_lint_same_template(void **state)
{
    (void)state;
    static const struct {
        const char *text, *error;
        bool same;
    } rows[] = {
        {"Invalid post ID 98 for site 12 (request req_ab12cd)",
         "Invalid post ID 4521 for site 77 (request req_9f3ac2)", true},
        {"The tool said: Invalid post ID 98 for site 12 (request req_ab12cd). Rejecting.",
         "Invalid post ID 4521 for site 77 (request req_9f3ac2)", true},
        {"Template hero-banner not found", "Template rate-limit-banner not found", true},
        {"Datei 'b.pdf' fehlt (Ordner 9, Versuch 1)", "Datei 'a.txt' fehlt (Ordner 17, Versuch 3)",
         true},
        {"El campo 'fecha' no vale (línea 4, columna 2)",
         "El campo 'titulo' no vale (línea 88, columna 31)", true},
        {"Article is spam", "Article is locked", false},
        {"The article is a thin press release with no facts",
         "wiki_upsert: permission denied for page Foo", false},
        {"Invalid post ID 98", "Connection reset by peer after 30s", false},
        {NULL, "x", false},
        {"x", NULL, false},
        {"", "", false},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (rows[i].text && rows[i].error &&
            vd_lint_shares_span(rows[i].text, rows[i].error, VD_LINT_SHARED_MIN))
            fail_msg("row %zu shares a run", i);
        if (vd_lint_same_template(rows[i].text, rows[i].error) != rows[i].same)
            fail_msg("row %zu: want %d", i, rows[i].same);
    }
}

static void test_lint_tool_result_texts(void **state)
{
    (void)state;
    static const struct {
        vd_disposition d;
        const char *code;
        vd_item_state to;
        double delay;
        const char *text;
    } rows[] = {
        {VD_DISPOSITION_DEFER_ITEM, "tool_error", VD_ITEM_DEFERRED, 10.2,
         "Recorded: deferred (tool_error). The source stays eligible and is retried in about 10 "
         "s. Stop now."},
        {VD_DISPOSITION_DEFER_ITEM, "low_confidence", VD_ITEM_MANUAL_REVIEW, 0,
         "Recorded: deferred (low_confidence). The item waits for a person's review. Stop now."},
        {VD_DISPOSITION_REJECT_SOURCE, "duplicate", VD_ITEM_REJECTED, 0,
         "Recorded: rejected (duplicate). The source is closed for good. Stop now."},
        {VD_DISPOSITION_COMPLETE, NULL, VD_ITEM_PROCESSED, 0,
         "Recorded: completed. The item is processed. Stop now."},
        {VD_DISPOSITION_FAIL, "engine_error", VD_ITEM_DEFERRED, 7200,
         "Recorded: failed (engine_error). The item is retried in about 2 h. Stop now."},
        {VD_DISPOSITION_FAIL, "retry_budget_exhausted", VD_ITEM_FAILED, 0,
         "Recorded: failed (retry_budget_exhausted). The item is not retried. Stop now."},
    };
    char out[VD_TOOL_RESULT_MAX];
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        vd_tool_result_disposition(rows[i].d, rows[i].code, rows[i].to, rows[i].delay, out,
                                   sizeof(out));
        assert_string_equal(out, rows[i].text);
    }
    static const struct {
        double s;
        const char *text;
    } delays[] = {{0, "about 1 s"},       {89, "about 89 s"},  {90, "about 2 min"},
                  {3599, "about 60 min"}, {5400, "about 2 h"}, {129600, "about 2 days"}};
    for (size_t i = 0; i < sizeof(delays) / sizeof(delays[0]); i++) {
        vd_tool_result_delay(delays[i].s, out, sizeof(out));
        assert_string_equal(out, delays[i].text);
    }
    assert_false(vd_tool_result_failure("wiki_upsert", "deterministic", "Do not call it again.",
                                        out, sizeof(out)));
    assert_string_equal(out, "'wiki_upsert' failed (deterministic). Do not call it again.");
}

static void test_lint_briefing_text(void **state)
{
    (void)state;
    static const vd_briefing_tool upsert[] = {
        {"wiki_upsert", "deterministic", "target_path must stay inside root"}};
    static const vd_briefing_tool fetch[] = {{"web_fetch", "transient", "HTTP 503"}};
    vd_briefing_attempt a[] = {
        {1, "deferred", "tool_error", "one", upsert, 1},
        {2, "deferred", "tool_error", "two", upsert, 1},
        {3, "expired", NULL, NULL, NULL, 0},
        {4, "failed", "engine_error", "boom", fetch, 1},
    };
    char *t = vd_briefing_render(1, NULL, 0);
    assert_string_equal(t, "Attempt 1. No earlier attempts.");
    free(t);
    t = vd_briefing_render(3, a, 2);
    assert_string_equal(t, "Attempt 3. Attempts 1\xe2\x80\x93"
                           "2 deferred (tool_error): 'wiki_upsert' failed deterministically "
                           "('target_path must stay inside root'). Do not reject the source "
                           "for that; if the tool fails again, call defer_item.");
    free(t);
    t = vd_briefing_render(5, a + 2, 2);
    assert_string_equal(t, "Attempt 5. Attempt 3 ran out of time (the lease expired). Attempt 4 "
                           "failed (engine_error): 'web_fetch' failed transiently ('HTTP 503'). "
                           "Those tool failures were transient: calling the tool again may "
                           "succeed.");
    free(t);
    /* bounded: 20 attempts with long, different reasons leave the oldest out */
    vd_briefing_attempt many[20];
    char reasons[20][400];
    for (int i = 0; i < 20; i++) {
        memset(reasons[i], 'a' + i, 399);
        reasons[i][399] = '\0';
        many[i] = (vd_briefing_attempt){i + 1, "deferred", "other", reasons[i], NULL, 0};
    }
    t = vd_briefing_render(21, many, 20);
    assert_true(strlen(t) <= VD_BRIEFING_MAX);
    assert_non_null(strstr(t, "earlier attempts left out."));
    assert_non_null(strstr(t, "Attempt 20 deferred (other)"));
    assert_null(strstr(t, "Attempt 1 deferred"));
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lint_classifier),    cmocka_unit_test(test_lint_rule),
        cmocka_unit_test(test_lint_shares_span),   cmocka_unit_test(test_lint_signal),
        cmocka_unit_test(test_lint_same_template), cmocka_unit_test(test_lint_tool_result_texts),
        cmocka_unit_test(test_lint_briefing_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
