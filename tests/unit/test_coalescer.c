/* test_coalescer.c - the coalescer (coalesce.h): a lone item goes at once; items of a group
 * that arrive while its statement runs are served together by the next one, oldest first,
 * at most max_batch at a time; other groups are not held back; a group never has more than
 * max_in_flight statements running; a caller may serve a lone item of an idle group itself
 * (vd_coalescer_lead), and what arrives meanwhile waits for it; every item is served once, under
 * many submitting threads (scripts/test.sh runs this under ThreadSanitizer too); stop serves what
 * is queued and refuses the rest; a statement kept in flight beyond its call (the executor's)
 * holds its slot until done, what it gives back is served first, and stop waits for it. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "verdict/coalesce.h"
#include "verdict/util.h"

#define MAX_CALLS 4096

/* What the statements saw. */
typedef struct seen {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool gate_open; /* while false, statements of group "held" wait */
    int calls;
    char group[MAX_CALLS][16];
    size_t n[MAX_CALLS];
    intptr_t first[MAX_CALLS];
    double at[MAX_CALLS];
    int running[8], most[8]; /* per group index ("g0".."g7") */
    int served[MAX_CALLS];
} seen;

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void record(void *arg, const char *group, void **items, size_t n)
{
    seen *s = arg;
    int gi = group[0] == 'g' ? group[1] - '0' : -1;
    pthread_mutex_lock(&s->mu);
    int k = s->calls++;
    snprintf(s->group[k], sizeof(s->group[k]), "%s", group);
    s->n[k] = n;
    s->first[k] = (intptr_t)items[0];
    s->at[k] = vd_monotonic();
    for (size_t i = 0; i < n; i++)
        s->served[(intptr_t)items[i]]++;
    if (gi >= 0 && ++s->running[gi] > s->most[gi])
        s->most[gi] = s->running[gi];
    while (strcmp(group, "held") == 0 && !s->gate_open)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (gi >= 0) {
        sleep_ms(1);
        pthread_mutex_lock(&s->mu);
        s->running[gi]--;
        pthread_mutex_unlock(&s->mu);
    }
}

static seen *seen_new(void)
{
    static seen s;
    memset(&s, 0, sizeof(s));
    pthread_mutex_init(&s.mu, NULL);
    vd_cond_init(&s.cv);
    return &s;
}

static int calls_of(seen *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->calls;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static void wait_calls(seen *s, int n)
{
    double end = vd_monotonic() + 10;
    while (calls_of(s) < n && vd_monotonic() < end)
        sleep_ms(1);
    assert_true(calls_of(s) >= n);
}

static void test_alone_goes_at_once(void **state)
{
    seen *s = seen_new();
    (void)state;
    vd_coalescer *c = vd_coalescer_start(2, 100, 1, record, s);
    assert_non_null(c);
    double t0 = vd_monotonic();
    assert_true(vd_coalescer_submit(c, "x", (void *)1));
    wait_calls(s, 1);
    assert_int_equal(s->n[0], 1);
    assert_true(s->at[0] - t0 < 0.05); /* a thread hand-off, not a batching delay */
    vd_coalescer_free(c);
}

static void test_waiting_items_go_together(void **state)
{
    seen *s = seen_new();
    (void)state;
    vd_coalescer *c = vd_coalescer_start(2, 100, 1, record, s);
    assert_true(vd_coalescer_submit(c, "held", (void *)1));
    wait_calls(s, 1); /* item 1's statement is in flight, held at the gate */
    for (intptr_t i = 2; i <= 5; i++)
        assert_true(vd_coalescer_submit(c, "held", (void *)i));
    assert_true(vd_coalescer_submit(c, "other", (void *)9));
    wait_calls(s, 2); /* the other group is not held back by "held" */
    assert_string_equal(s->group[1], "other");
    sleep_ms(20);
    assert_int_equal(calls_of(s), 2); /* "held" has one statement in flight: 2..5 wait */
    pthread_mutex_lock(&s->mu);
    s->gate_open = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    wait_calls(s, 3);
    assert_string_equal(s->group[2], "held");
    assert_int_equal(s->n[2], 4);     /* one statement for the four */
    assert_int_equal(s->first[2], 2); /* oldest first */
    vd_coalescer_free(c);
}

static void test_max_batch(void **state)
{
    seen *s = seen_new();
    (void)state;
    vd_coalescer *c = vd_coalescer_start(1, 2, 1, record, s);
    assert_true(vd_coalescer_submit(c, "held", (void *)1));
    wait_calls(s, 1);
    for (intptr_t i = 2; i <= 6; i++)
        assert_true(vd_coalescer_submit(c, "held", (void *)i));
    pthread_mutex_lock(&s->mu);
    s->gate_open = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    wait_calls(s, 4);
    assert_int_equal(s->n[1], 2);
    assert_int_equal(s->n[2], 2);
    assert_int_equal(s->n[3], 1);
    assert_int_equal(s->first[3], 6);
    vd_coalescer_free(c);
}

/* A group with a cap of its own (vd_coalescer_cap) takes at most that many items a statement;
 * another group of the same coalescer keeps the coalescer's max_batch; a cap above max_batch
 * is refused. */
static void test_group_cap(void **state)
{
    seen *s = seen_new();
    (void)state;
    vd_coalescer *c = vd_coalescer_start(1, 5, 1, record, s);
    assert_false(vd_coalescer_cap(c, "held", 6));
    assert_true(vd_coalescer_cap(c, "held", 2));
    assert_true(vd_coalescer_submit(c, "held", (void *)1));
    wait_calls(s, 1);
    for (intptr_t i = 2; i <= 6; i++)
        assert_true(vd_coalescer_submit(c, "held", (void *)i));
    for (intptr_t i = 10; i <= 16; i++) /* queued behind "held"'s statement: one runner */
        assert_true(vd_coalescer_submit(c, "other", (void *)i));
    pthread_mutex_lock(&s->mu);
    s->gate_open = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    wait_calls(s, 6); /* held: 1, then 2 + 2 + 1; other: 5 + 2 */
    size_t held = 0, other = 0;
    for (int k = 1; k < 6; k++) {
        if (strcmp(s->group[k], "held") == 0) {
            assert_true(s->n[k] <= 2);
            held += s->n[k];
        } else {
            assert_true(s->n[k] <= 5);
            other += s->n[k];
        }
    }
    assert_int_equal(held, 5);
    assert_int_equal(other, 7);
    sleep_ms(20);
    assert_int_equal(calls_of(s), 6);
    vd_coalescer_free(c);
}

typedef struct submitter {
    vd_coalescer *c;
    int from, count;
} submitter;

static void *submit_many(void *arg)
{
    submitter *m = arg;
    for (int i = m->from; i < m->from + m->count; i++) {
        char g[4] = {'g', (char)('0' + i % 4), 0};
        if (!vd_coalescer_submit(m->c, g, (void *)(intptr_t)i))
            return (void *)1;
        if (i % 7 == 0)
            sleep_ms(1);
    }
    return NULL;
}

static void test_many_threads_each_item_once(void **state)
{
    seen *s = seen_new();
    pthread_t t[8];
    submitter m[8];
    (void)state;
    vd_coalescer *c = vd_coalescer_start(3, 16, 2, record, s);
    for (int i = 0; i < 8; i++) {
        m[i] = (submitter){c, 1 + i * 250, 250};
        assert_int_equal(pthread_create(&t[i], NULL, submit_many, &m[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        void *r = NULL;
        pthread_join(t[i], &r);
        assert_null(r);
    }
    vd_coalescer_stop(c); /* serves everything queued */
    for (int i = 1; i <= 2000; i++)
        assert_int_equal(s->served[i], 1);
    for (int g = 0; g < 4; g++)
        assert_true(s->most[g] <= 2); /* max_in_flight */
    vd_coalesce_stats st = vd_coalescer_stats(c);
    assert_int_equal(st.items, 2000);
    assert_true(st.largest <= 16);
    assert_false(vd_coalescer_submit(c, "g0", (void *)1)); /* stopped: refused */
    vd_coalescer_free(c);
}

static void test_lead_when_idle(void **state)
{
    seen *s = seen_new();
    (void)state;
    vd_coalescer *c = vd_coalescer_start(1, 100, 1, record, s);
    assert_true(vd_coalescer_lead(c, "g0"));  /* idle: the caller serves it itself */
    assert_false(vd_coalescer_lead(c, "g0")); /* one statement in flight: no second leader */
    assert_true(vd_coalescer_lead(c, "g1"));  /* another group is idle */
    vd_coalescer_led(c, "g1");
    for (intptr_t i = 1; i <= 3; i++)
        assert_true(vd_coalescer_submit(c, "g0", (void *)i));
    sleep_ms(20);
    assert_int_equal(calls_of(s), 0);         /* they wait for the leader's statement */
    assert_false(vd_coalescer_lead(c, "g0")); /* items wait: they go first */
    vd_coalescer_led(c, "g0");
    wait_calls(s, 1);
    assert_int_equal(s->n[0], 3); /* together, on a runner */
    vd_coalescer_stop(c);
    vd_coalesce_stats st = vd_coalescer_stats(c);
    assert_int_equal(st.statements, 3);
    assert_int_equal(st.items, 5);
    vd_coalescer_free(c);
}

static void test_long_key_refused(void **state)
{
    seen *s = seen_new();
    char key[VD_COALESCE_GROUP_MAX + 2];
    (void)state;
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    vd_coalescer *c = vd_coalescer_start(1, 4, 1, record, s);
    assert_false(vd_coalescer_submit(c, key, (void *)1));
    vd_coalescer_free(c);
    assert_int_equal(s->calls, 0);
}

/* A statement that goes on after its call (as on the executor): the first call of group "k"
 * keeps its statement in flight and leaves its items unserved. */
static vd_coalescer *kept_c;
static void *kept_items[8];
static size_t kept_n;

static void keep_first(void *arg, const char *group, void **items, size_t n)
{
    seen *s = arg;
    pthread_mutex_lock(&s->mu);
    bool first = kept_n == 0 && strcmp(group, "k") == 0;
    if (first) {
        memcpy(kept_items, items, n * sizeof(*items));
        kept_n = n;
    }
    pthread_mutex_unlock(&s->mu);
    if (first)
        assert_true(vd_coalescer_keep(kept_c, group));
    else
        record(arg, group, items, n);
}

static size_t kept_count(seen *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = kept_n;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* The slot stays taken until vd_coalescer_done: nothing else of the group runs meanwhile
 * (max_in_flight 1); what the kept statement gives back is served first, with what waited. */
static void test_kept_statement_holds_its_slot(void **state)
{
    seen *s = seen_new();
    (void)state;
    kept_n = 0;
    kept_c = vd_coalescer_start(2, 100, 1, keep_first, s);
    assert_non_null(kept_c);
    assert_false(vd_coalescer_keep(kept_c, "none")); /* no statement of it in flight */
    assert_true(vd_coalescer_submit(kept_c, "k", (void *)(intptr_t)1));
    sleep_ms(20);
    assert_true(vd_coalescer_submit(kept_c, "k", (void *)(intptr_t)2));
    assert_true(vd_coalescer_submit(kept_c, "k", (void *)(intptr_t)3));
    assert_true(vd_coalescer_submit(kept_c, "other", (void *)(intptr_t)4));
    wait_calls(s, 1); /* another group is not held back */
    sleep_ms(50);
    assert_int_equal(calls_of(s), 1);
    assert_int_equal(kept_count(s), 1);
    assert_true(vd_coalescer_done(kept_c, "k", kept_items, kept_n)); /* given back */
    wait_calls(s, 2);
    assert_string_equal(s->group[1], "k");
    assert_int_equal(s->first[1], 1); /* the given back item first */
    assert_int_equal(s->n[1], 3);
    vd_coalescer_free(kept_c);
    assert_int_equal(s->served[1] + s->served[2] + s->served[3] + s->served[4], 4);
}

static void *stopper(void *arg)
{
    vd_coalescer_stop(arg);
    return NULL;
}

/* A stop waits for the kept statement, and serves what it gives back. */
static void test_stop_waits_for_kept(void **state)
{
    seen *s = seen_new();
    pthread_t t;
    (void)state;
    kept_n = 0;
    kept_c = vd_coalescer_start(1, 100, 1, keep_first, s);
    assert_non_null(kept_c);
    assert_true(vd_coalescer_submit(kept_c, "k", (void *)(intptr_t)5));
    for (int i = 0; i < 1000 && kept_count(s) == 0; i++)
        sleep_ms(1);
    assert_int_equal(kept_count(s), 1);
    assert_int_equal(pthread_create(&t, NULL, stopper, kept_c), 0);
    sleep_ms(50);
    assert_false(vd_coalescer_submit(kept_c, "k", (void *)(intptr_t)6)); /* stopping */
    assert_int_equal(calls_of(s), 0);
    assert_true(vd_coalescer_done(kept_c, "k", kept_items, kept_n));
    pthread_join(t, NULL); /* returns only once the given back item was served */
    assert_int_equal(calls_of(s), 1);
    assert_int_equal(s->served[5], 1);
    vd_coalescer_free(kept_c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alone_goes_at_once),
        cmocka_unit_test(test_waiting_items_go_together),
        cmocka_unit_test(test_max_batch),
        cmocka_unit_test(test_group_cap),
        cmocka_unit_test(test_many_threads_each_item_once),
        cmocka_unit_test(test_lead_when_idle),
        cmocka_unit_test(test_long_key_refused),
        cmocka_unit_test(test_kept_statement_holds_its_slot),
        cmocka_unit_test(test_stop_waits_for_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
