/* test_templates.c - the failure-template miner and the evidence classifier
 * (src/service/templates.c, template_class.c): masks, JSON bodies, merging into one template
 * when a value varies (slug, file name, req id, duration, git hash, letters-only id), keeping
 * different bugs apart, and classification of the wordings quoted in the issue. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/templates.h"

static void render(const char *text, char *buf, size_t n)
{
    vd_tpl_msg m;
    vd_tpl_parse(text, &m);
    vd_tpl_render(&m, buf, n);
}

static void test_templates_masks(void **state)
{
    (void)state;
    static const struct {
        const char *in, *want;
    } table[] = {
        {"Post 503 does not exist.", "Post <num> does not exist"},
        {"parameter 'timeout' must be an integer", "parameter <q> must be an integer"},
        {"cannot write /srv/wiki/504/a.md: denied", "cannot write <path> : denied"},
        {"see https://example.org/a?b=1, then retry", "see <url> , then retry"},
        {"request req_9f3ac2 took 1.2s", "request <*> took <*>"},
        {"commit a1b2c3d is unknown", "commit <*> is unknown"},
        {"can't parse it", "can't parse it"},
        {"{\"code\":\"rest_forbidden\",\"message\":\"Sorry, you are not allowed.\","
         "\"data\":{\"status\":403}}",
         "{ \"code\" : \"rest_forbidden\" , \"message\" : <q> , \"data\" : { \"status\" : <num> "
         "} }"},
        {"Datei «bericht.pdf» nicht gefunden", "Datei <q> nicht gefunden"},
        {"", ""},
    };
    char buf[VD_TPL_TEXT_MAX + 1];
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        render(table[i].in, buf, sizeof(buf));
        if (strcmp(buf, table[i].want) != 0)
            fail_msg("case %zu: '%s' -> '%s', want '%s'", i, table[i].in, buf, table[i].want);
    }
}

/* Feed texts to one store; return the template id of each. */
static void ids_of(const char *const *texts, size_t n, int64_t *ids)
{
    vd_tpl_mem s;
    char text[VD_TPL_TEXT_MAX + 1];
    vd_tpl_mem_init(&s);
    for (size_t i = 0; i < n; i++) {
        vd_tpl_msg m;
        vd_tpl_parse(texts[i], &m);
        assert_true(vd_tpl_mem_add(&s, &m, &ids[i], text, sizeof(text)));
    }
    vd_tpl_mem_cleanup(&s);
}

static void test_templates_same_bug_one_template(void **state)
{
    (void)state;
    static const char *const groups[][3] = {
        {"Post hello-world not found", "Post my-second-post not found", "Post abc not found"},
        {"cannot open report.pdf for writing", "cannot open notes.txt for writing",
         "cannot open a.md for writing"},
        {"upstream req_9f3ac2 failed after 1.2s", "upstream req_00ab12 failed after 15ms",
         "upstream req_77 failed after 3s"},
        {"build a1b2c3d broke the schema", "build 9f8e7d6 broke the schema",
         "build 0000abc broke the schema"},
        {"user alice lacks permission edit_posts", "user bob lacks permission edit_posts",
         "user carol lacks permission edit_posts"},
    };
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
        int64_t ids[3];
        ids_of(groups[g], 3, ids);
        if (ids[0] != ids[1] || ids[1] != ids[2])
            fail_msg("group %zu split: %lld %lld %lld", g, (long long)ids[0], (long long)ids[1],
                     (long long)ids[2]);
    }
}

static void test_templates_different_bugs_apart(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{\"code\":\"rest_post_invalid_id\",\"message\":\"Invalid post ID.\",\"data\":{\"status\":"
        "404}}",
        "{\"code\":\"rest_forbidden\",\"message\":\"Sorry, you are not allowed to do that.\","
        "\"data\":{\"status\":403}}",
        "connection reset by peer",
        "connection refused by peer",
    };
    int64_t ids[4];
    ids_of(texts, 4, ids);
    assert_true(ids[0] != ids[1]);
    assert_true(ids[2] != ids[3]);
}

static void test_templates_merge_wildcards(void **state)
{
    (void)state;
    vd_tpl_mem s;
    vd_tpl_msg m;
    int64_t id = 0;
    char text[VD_TPL_TEXT_MAX + 1];
    vd_tpl_mem_init(&s);
    vd_tpl_parse("Template rate-limit-banner not found", &m);
    assert_true(vd_tpl_mem_add(&s, &m, &id, text, sizeof(text)));
    vd_tpl_parse("Template footer not found", &m);
    assert_true(vd_tpl_mem_add(&s, &m, &id, text, sizeof(text)));
    assert_int_equal(id, 1);
    assert_string_equal(text, "Template <*> not found");
    vd_tpl_mem_cleanup(&s);
}

static void test_templates_classify_evidence(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        vd_tpl_class want;
    } table[] = {
        {"parameter 'timeout' must be an integer", VD_TPL_DETERMINISTIC},
        {"Post 503 does not exist", VD_TPL_DETERMINISTIC},
        {"Invalid post ID 429", VD_TPL_DETERMINISTIC},
        {"Template 'rate-limit-banner' not found", VD_TPL_DETERMINISTIC},
        {"cannot read /var/cache/504/page.html", VD_TPL_DETERMINISTIC},
        {"open /srv/timeout/429/x: no such file or directory", VD_TPL_DETERMINISTIC},
        {"HTTP 503 Service Unavailable", VD_TPL_TRANSIENT},
        {"status: 429", VD_TPL_TRANSIENT},
        {"503 Service Unavailable", VD_TPL_TRANSIENT},
        {"request to https://api.example.com/v1 timed out after 30s", VD_TPL_TRANSIENT},
        {"read ECONNRESET", VD_TPL_TRANSIENT},
        {"{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}"
         "}",
         VD_TPL_TRANSIENT},
        {"{\"code\":\"rest_forbidden\",\"message\":\"Sorry\",\"data\":{\"status\":403}}",
         VD_TPL_DETERMINISTIC},
        {"Parameter «timeout» ist ungültig", VD_TPL_DETERMINISTIC},
        {"Le modèle « x » est introuvable", VD_TPL_DETERMINISTIC},
        {"Zeitüberschreitung beim Lesen der Antwort", VD_TPL_TRANSIENT},
        {"接続がタイムアウトしました", VD_TPL_TRANSIENT},
        {"El recurso no existe", VD_TPL_DETERMINISTIC},
        {"iteration_cap", VD_TPL_NONE},
    };
    char why[256];
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        vd_tpl_msg m;
        vd_tpl_parse(table[i].text, &m);
        vd_tpl_class c = vd_tpl_classify(NULL, &m, why, sizeof(why));
        if (c != table[i].want)
            fail_msg("case %zu '%s': %d (%s), want %d", i, table[i].text, c, why, table[i].want);
    }
}

/* A word that varies across failures becomes <*> and stops being evidence. */
static void test_templates_classify_on_constants(void **state)
{
    (void)state;
    vd_tpl_msg m;
    char why[256];
    vd_tpl_parse("fetch of timeout failed", &m);
    assert_int_equal(vd_tpl_classify("fetch of <*> failed", &m, why, sizeof(why)), VD_TPL_NONE);
    assert_int_equal(vd_tpl_classify(NULL, &m, why, sizeof(why)), VD_TPL_TRANSIENT);
}

/* Random bytes, quotes, JSON punctuation and UTF-8 fragments, short and far past the token
 * and store limits: no crash (ASan), a template that splits back into the same token count,
 * and a message always matches its own template. */
static void test_templates_random_input(void **state)
{
    (void)state;
    static const char *const pieces[] = {
        "\"",   "'",   "`",   "{",       "}",         ":",        ",",        " ",
        "\\",   "/x/", "503", "a1b2c3d", "http://h/", "\xC2\xAB", "\xC2\xBB", "\xE3\x80\x8C",
        "word", "\t",  "\n",  "x:",      "..."};
    vd_tpl_mem s;
    vd_tpl_mem_init(&s);
    unsigned seed = 29;
    char *text = malloc(20000), tpl[VD_TPL_TEXT_MAX + 1], why[256];
    assert_non_null(text);
    for (int round = 0; round < 400; round++) {
        size_t len = 0, want = (size_t)(rand_r(&seed) % (round % 10 == 0 ? 19000 : 200));
        while (len < want) {
            const char *p = pieces[rand_r(&seed) % (sizeof(pieces) / sizeof(pieces[0]))];
            size_t n = strlen(p);
            memcpy(text + len, p, n);
            len += n;
        }
        text[len] = '\0';
        vd_tpl_msg m;
        int64_t id = 0;
        vd_tpl_parse(text, &m);
        assert_true(m.n >= 0 && m.n <= VD_TPL_TOKENS);
        vd_tpl_render(&m, tpl, sizeof(tpl));
        assert_true(m.n == 0 || vd_tpl_similarity(tpl, &m) >= 0.99);
        (void)vd_tpl_classify(NULL, &m, why, sizeof(why));
        assert_true(vd_tpl_mem_add(&s, &m, &id, tpl, sizeof(tpl)));
        assert_true(id >= 1);
    }
    free(text);
    vd_tpl_mem_cleanup(&s);
}

/* Long words and a long JSON key: the template fits VD_TPL_TEXT_MAX whole, matches its own
 * message, and the shape stays short. */
static void test_templates_long_text_fits(void **state)
{
    (void)state;
    char text[8192] = "\"", tpl[VD_TPL_TEXT_MAX + 1], shape[VD_TPL_SHAPE_MAX + 1];
    size_t len = 1;
    for (int i = 0; i < 100; i++)
        text[len++] = 'k';
    len += (size_t)snprintf(text + len, sizeof(text) - len, "\": 1 ");
    for (int w = 0; w < 80 && len + 70 < sizeof(text); w++) {
        for (int i = 0; i < 60; i++)
            text[len++] = (char)('a' + (w + i) % 26);
        text[len++] = ' ';
    }
    text[len] = '\0';
    vd_tpl_msg m;
    vd_tpl_parse(text, &m);
    vd_tpl_render(&m, tpl, sizeof(tpl));
    assert_true(strlen(tpl) <= VD_TPL_TEXT_MAX);
    assert_true(vd_tpl_similarity(tpl, &m) >= 0.99);
    assert_string_equal(tpl + strlen(tpl) - 3, "<*>"); /* the rest stands as one <*> */
    vd_tpl_shape(&m, shape, sizeof(shape));
    assert_string_equal(strchr(shape, ' '), " <*>");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_templates_masks),
        cmocka_unit_test(test_templates_same_bug_one_template),
        cmocka_unit_test(test_templates_different_bugs_apart),
        cmocka_unit_test(test_templates_merge_wildcards),
        cmocka_unit_test(test_templates_classify_evidence),
        cmocka_unit_test(test_templates_classify_on_constants),
        cmocka_unit_test(test_templates_random_input),
        cmocka_unit_test(test_templates_long_text_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
