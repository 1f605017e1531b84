/* test_wait.c - util.h's monotonic waits: a deadline measured on vd_monotonic() is waited
 * for its full length on a condition variable from vd_cond_init (the same deadline on a
 * CLOCK_REALTIME condition variable, the default, is decades in the past and returns at
 * once: the mistake this helper exists to prevent), a passed deadline returns at once, and a
 * signal ends the wait early. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include <cmocka.h>

#include "verdict/util.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* How long a wait until now + secs took, and whether it reported the deadline. */
static double timed_wait(pthread_cond_t *cv, double secs, bool *signalled)
{
    double t0 = vd_monotonic();
    pthread_mutex_lock(&mu);
    *signalled = vd_cond_wait_until(cv, &mu, t0 + secs);
    pthread_mutex_unlock(&mu);
    return vd_monotonic() - t0;
}

static void test_wait_full_length_on_the_monotonic_clock(void **state)
{
    pthread_cond_t cv;
    bool signalled = true;
    (void)state;
    assert_int_equal(vd_cond_init(&cv), 0);
    double took = timed_wait(&cv, 0.2, &signalled);
    assert_false(signalled);
    assert_true(took >= 0.19);
    assert_true(took < 2.0);
    pthread_cond_destroy(&cv);
}

static void test_wait_default_condvar_would_not_wait(void **state)
{
    pthread_cond_t cv;
    struct timespec ts;
    double t0;
    (void)state;
    /* the contrast: a monotonic deadline handed to a CLOCK_REALTIME condition variable */
    pthread_cond_init(&cv, NULL);
    t0 = vd_monotonic() + 0.2;
    ts.tv_sec = (time_t)t0;
    ts.tv_nsec = (long)((t0 - (double)ts.tv_sec) * 1e9);
    double start = vd_monotonic();
    pthread_mutex_lock(&mu);
    pthread_cond_timedwait(&cv, &mu, &ts);
    pthread_mutex_unlock(&mu);
    assert_true(vd_monotonic() - start < 0.1);
    pthread_cond_destroy(&cv);
}

static void test_wait_passed_deadline(void **state)
{
    pthread_cond_t cv;
    bool signalled = true;
    (void)state;
    assert_int_equal(vd_cond_init(&cv), 0);
    assert_true(timed_wait(&cv, -5.0, &signalled) < 0.05);
    assert_false(signalled);
    assert_true(timed_wait(&cv, 0.0, &signalled) < 0.05);
    assert_false(signalled);
    pthread_cond_destroy(&cv);
}

typedef struct pinger {
    pthread_cond_t *cv;
    bool *flag;
} pinger;

static void *ping(void *p)
{
    pinger *pg = p;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&mu);
    *pg->flag = true;
    pthread_cond_signal(pg->cv);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void test_wait_signal_ends_it_early(void **state)
{
    pthread_cond_t cv;
    pthread_t t;
    bool flag = false, signalled = false;
    pinger pg = {&cv, &flag};
    double t0 = vd_monotonic(), deadline = t0 + 10.0;
    (void)state;
    assert_int_equal(vd_cond_init(&cv), 0);
    pthread_mutex_lock(&mu);
    assert_int_equal(pthread_create(&t, NULL, ping, &pg), 0);
    while (!flag && (signalled = vd_cond_wait_until(&cv, &mu, deadline)))
        ;
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    assert_true(flag);
    assert_true(signalled);
    assert_true(vd_monotonic() - t0 < 5.0);
    pthread_cond_destroy(&cv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_full_length_on_the_monotonic_clock),
        cmocka_unit_test(test_wait_default_condvar_would_not_wait),
        cmocka_unit_test(test_wait_passed_deadline),
        cmocka_unit_test(test_wait_signal_ends_it_early),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
