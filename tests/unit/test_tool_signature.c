/* test_tool_signature.c - the tool-failure signature normaliser (src/service/incidents.c): a table
 * of texts and their signatures, pairs that must share one signature (they differ only in a
 * path, number, id, hash, URL or quoted value) and pairs that must not (other wording), the
 * length bound at a UTF-8 boundary, and the incident hint. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/incidents.h"

static const struct {
    const char *in, *want;
} table[] = {
    {"target_path must stay inside root", "target_path must stay inside root"},
    {"  spaced \t out\n text  ", "spaced out text"},
    {"HTTP 500 after 3 tries", "HTTP <n> after <n> tries"},
    {"took 1.5s, 1,024 bytes", "took <n>s, <n> bytes"},
    {"cannot write /srv/wiki/pages/17.md", "cannot write <path>"},
    {"cannot write ./out/a.md: denied", "cannot write <path>: denied"},
    {"file C:\\wiki\\a.md locked", "file <path> locked"},
    {"see https://example.org/a?b=1 for details", "see <url> for details"},
    {"item 3f2504e0-4f89-11d3-9a0c-0305e82c3301 missing", "item <id> missing"},
    {"commit 8f3a9c2e1b is unknown", "commit <hex> is unknown"},
    {"bad pointer 0xdeadBEEF", "bad pointer <hex>"},
    {"title 'Hello world' too long", "title <q> too long"},
    {"target_path '/srv/wiki/17/a.md' must stay inside root",
     "target_path <q> must stay inside root"},
    {"open \"https://x.org/a b\" failed", "open <q> failed"},
    {"key \"slug-42\" taken", "key <q> taken"},
    {"column `post_title` is null", "column <q> is null"},
    {"can't parse it", "can't parse it"}, /* an apostrophe inside a word opens nothing */
    {"unterminated 'quote here", "unterminated 'quote here"},
    {"deadbeef stays a word", "deadbeef stays a word"}, /* letters only: not a hash */
    {"post_42 failed", "post_<n> failed"},
    {"", ""},
};

static void test_tool_signature_table(void **state)
{
    (void)state;
    char buf[VD_SIGNATURE_MAX + 1];
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        size_t n = vd_tool_signature(table[i].in, buf, sizeof(buf));
        if (strcmp(buf, table[i].want) != 0)
            fail_msg("case %zu: '%s' -> '%s', want '%s'", i, table[i].in, buf, table[i].want);
        assert_int_equal(n, strlen(buf));
    }
}

static const struct {
    const char *a, *b;
    int same;
} pairs[] = {
    /* the Job 640 failure on two items: one signature */
    {"wiki_upsert: target_path '/srv/wiki/items/17/page.md' must stay inside root (item 17)",
     "wiki_upsert: target_path '/srv/wiki/items/912/x.md' must stay inside root (item 912)", 1},
    {"write failed: /var/data/a/1.json", "write failed: /tmp/b.json", 1},
    {"post 42 exists", "post 7 exists", 1},
    {"request 8f3a9c2e1b failed", "request 0a1b2c3d4e5f failed", 1},
    {"slug \"a-b\" taken", "slug \"c\" taken", 1},
    {"GET https://x.org/1 gave 404", "GET http://y.net/a/b gave 404", 1},
    {"id 3f2504e0-4f89-11d3-9a0c-0305e82c3301", "id 00000000-0000-0000-0000-000000000000", 1},
    {"timeout  after\t5s", "timeout after 9s", 1},
    /* other wording: two signatures */
    {"target_path must stay inside root", "target_path must be absolute", 0},
    {"permission denied: /a/b", "file not found: /a/b", 0},
    {"wiki_upsert failed", "wiki_update failed", 0},
    {"HTTP 500", "HTTPS 500", 0},
};

static void test_tool_signature_pairs(void **state)
{
    (void)state;
    char a[VD_SIGNATURE_MAX + 1], b[VD_SIGNATURE_MAX + 1];
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        vd_tool_signature(pairs[i].a, a, sizeof(a));
        vd_tool_signature(pairs[i].b, b, sizeof(b));
        if ((strcmp(a, b) == 0) != pairs[i].same)
            fail_msg("pair %zu: '%s' vs '%s' should %s", i, a, b,
                     pairs[i].same ? "be one signature" : "be two signatures");
    }
}

static void test_tool_signature_bounds(void **state)
{
    (void)state;
    char big[2000], buf[VD_SIGNATURE_MAX + 1], tiny[4];
    /* 'é' (2 bytes) repeated: the cut must not split one */
    for (size_t i = 0; i + 2 < sizeof(big); i += 2) {
        big[i] = (char)0xC3;
        big[i + 1] = (char)0xA9;
        big[i + 2] = '\0';
    }
    size_t n = vd_tool_signature(big, buf, sizeof(buf));
    assert_true(n <= VD_SIGNATURE_MAX);
    assert_int_equal(n % 2, 0);
    assert_int_equal(strlen(buf), n);
    assert_int_equal(vd_tool_signature("abcdef", tiny, sizeof(tiny)), 3);
    assert_string_equal(tiny, "abc");
    assert_int_equal(vd_tool_signature(NULL, tiny, sizeof(tiny)), 0);
}

static void test_tool_signature_incident_hint(void **state)
{
    (void)state;
    vd_incident_ref inc = {.id = 7, .items = 12};
    char hint[512];
    snprintf(inc.tool, sizeof(inc.tool), "wiki_upsert");
    vd_incident_hint(&inc, hint, sizeof(hint));
    assert_non_null(strstr(hint, "'wiki_upsert' fails the same way on 12 items"));
    assert_non_null(strstr(hint, "not a problem with the source"));
    assert_non_null(strstr(hint, "defer_item with reason_code tool_error"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tool_signature_table),
        cmocka_unit_test(test_tool_signature_pairs),
        cmocka_unit_test(test_tool_signature_bounds),
        cmocka_unit_test(test_tool_signature_incident_hint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
