/* test_classify.c - `verdictd classify` (src/http/classify_cli.c): JSON lines in, one JSON
 * line out each, in order, through the server's miner and classifier; the second failure of
 * a template is a recurrence; a bad line answers an error and the run goes on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/classify.h"

static char *run(const char *input, int *rc)
{
    FILE *in = tmpfile(), *out = tmpfile();
    assert_non_null(in);
    assert_non_null(out);
    fputs(input, in);
    rewind(in);
    *rc = vd_classify_run(in, out);
    long n = ftell(out);
    char *buf = calloc((size_t)n + 1, 1);
    assert_non_null(buf);
    rewind(out);
    assert_int_equal(fread(buf, 1, (size_t)n, out), (size_t)n);
    fclose(in);
    fclose(out);
    return buf;
}

static void test_classify_lines_in_order(void **state)
{
    (void)state;
    int rc = -1;
    char *out =
        run("{\"tool\":\"wp\",\"error\":\"Post 503 does not exist\"}\n"
            "{\"tool\":\"fetch\",\"error\":\"HTTP 503 Service Unavailable\","
            "\"kind\":\"transient\"}\n"
            "{\"tool\":\"wp\",\"error\":\"Post 77 does not exist\",\"kind\":\"transient\"}\n"
            "{\"tool\":\"x\",\"error\":\"parameter 'timeout' must be an integer\","
            "\"kind\":\"unknown\"}\n",
            &rc);
    assert_int_equal(rc, 0);
    static const char *const want[] = {
        "{\"class\":\"deterministic\",\"template_id\":1,\"template\":\"Post <num> does not "
        "exist\",\"why\":\"deterministic: 'does not exist' in the template's constant text\"}",
        "{\"class\":\"transient\",\"template_id\":2,\"template\":\"HTTP <num> Service "
        "Unavailable\",\"why\":\"transient: 'unavailable' in the template's constant text\"}",
        "{\"class\":\"deterministic\",\"template_id\":1,",
        "{\"class\":\"deterministic\",\"template_id\":3,\"template\":\"parameter <q> must be an "
        "integer\"",
    };
    char *line = out;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        if (strncmp(line, want[i], strlen(want[i])) != 0)
            fail_msg("line %zu: %s", i + 1, line);
        line = nl + 1;
    }
    assert_string_equal(line, "");
    free(out);
}

static void test_classify_bad_lines(void **state)
{
    (void)state;
    int rc = -1;
    char *out = run("not json\n{\"tool\":\"t\"}\n{\"tool\":\"t\",\"error\":\"e\",\"extra\":1}\n"
                    "{\"tool\":\"t\",\"error\":\"e\",\"kind\":\"maybe\"}\n"
                    "{\"tool\":\"t\",\"error\":\"disk full\"}\n",
                    &rc);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "{\"error\":\"line 1: not JSON\"}\n"));
    assert_non_null(strstr(out, "{\"error\":\"line 2: tool and error are required\"}\n"));
    assert_non_null(strstr(out, "line 3: unknown member"));
    assert_non_null(strstr(out, "line 4: kind must be"));
    assert_non_null(strstr(out, "{\"class\":\"deterministic\",\"template_id\":1,"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify_lines_in_order),
        cmocka_unit_test(test_classify_bad_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
