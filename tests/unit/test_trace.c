/* test_trace.c - trace.h: which traceparent values are accepted (the W3C Trace Context
 * examples and the malformed forms its test suite sends), that a malformed one starts a new
 * trace rather than failing, and the traceparent verdictd answers with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/trace.h"

#define TID "4bf92f3577b34da6a3ce929d0e0e4736"
#define SID "00f067aa0ba902b7"

static void test_trace_valid_forms(void **state)
{
    (void)state;
    static const char *const good[] = {
        "00-" TID "-" SID "-01",
        "00-" TID "-" SID "-00",
        "01-" TID "-" SID "-01-what-the-future-brings", /* a later version: its prefix */
        "cc-" TID "-" SID "-09",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        vd_trace t = {0};
        if (!vd_trace_parse(good[i], &t))
            fail_msg("refused %s", good[i]);
        assert_string_equal(t.trace_id, TID);
        assert_string_equal(t.parent_span_id, SID);
    }
}

static void test_trace_malformed_forms(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "00",
        "00-" TID "-" SID "-01-",                         /* version 00 has four fields */
        "00-" TID "-" SID "-1",                           /* one-digit flags */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-" SID "-01", /* upper case */
        "00-00000000000000000000000000000000-" SID "-01", /* all-zero trace id */
        "00-" TID "-0000000000000000-01",                 /* all-zero parent id */
        "ff-" TID "-" SID "-01",                          /* version ff is invalid */
        "0g-" TID "-" SID "-01",
        "00_" TID "-" SID "-01",
        "00-" TID "-" SID "-0x",
        "01-" TID "-" SID "-01x", /* a later version's extra fields start with '-' */
        "00-" TID "z" SID "-01",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        vd_trace t = {0};
        if (vd_trace_parse(bad[i], &t))
            fail_msg("accepted %s", bad[i]);
        assert_string_equal(t.trace_id, "");
    }
    assert_false(vd_trace_parse(NULL, &(vd_trace){0}));
}

static void test_trace_begin_keeps_or_restarts(void **state)
{
    (void)state;
    vd_trace t;
    char tp[56];
    vd_trace_begin(&t, "00-" TID "-" SID "-01", "vendor=abc,other=1");
    assert_true(t.remote);
    assert_string_equal(t.trace_id, TID);
    assert_string_equal(t.tracestate, "vendor=abc,other=1");
    assert_int_equal(strlen(t.span_id), 16);
    assert_string_not_equal(t.span_id, SID); /* our own span, its parent the caller's */
    vd_trace_format(&t, tp);
    assert_int_equal(strlen(tp), 55);
    assert_memory_equal(tp, "00-" TID "-", 36);
    assert_string_equal(tp + 52, "-01");
    /* malformed: ignored, a new trace; its tracestate dropped with it */
    vd_trace_begin(&t, "00-" TID "-" SID "-0", "vendor=abc");
    assert_false(t.remote);
    assert_true(vd_trace_id_valid(t.trace_id));
    assert_string_not_equal(t.trace_id, TID);
    assert_string_equal(t.tracestate, "");
    assert_string_equal(t.parent_span_id, "");
    vd_trace_begin(&t, NULL, NULL);
    assert_true(vd_trace_id_valid(t.trace_id));
    /* a tracestate with a control byte is dropped, the traceparent kept */
    vd_trace_begin(&t, "00-" TID "-" SID "-00", "a=b\x01");
    assert_true(t.remote);
    assert_string_equal(t.tracestate, "");
    assert_int_equal(t.flags, 0);
}

static void test_trace_id_valid(void **state)
{
    (void)state;
    assert_true(vd_trace_id_valid(TID));
    assert_false(vd_trace_id_valid("4bf92f3577b34da6a3ce929d0e0e473"));
    assert_false(vd_trace_id_valid("4BF92F3577B34DA6A3CE929D0E0E4736"));
    assert_false(vd_trace_id_valid("00000000000000000000000000000000"));
    assert_false(vd_trace_id_valid(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_valid_forms),
        cmocka_unit_test(test_trace_malformed_forms),
        cmocka_unit_test(test_trace_begin_keeps_or_restarts),
        cmocka_unit_test(test_trace_id_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
