/* test_outage.c - a frozen database under load. The test starts its own
 * PostgreSQL cluster (so freezing it cannot hurt other tests), runs claim-and-complete
 * clients and a /healthz prober against verdictd, then stops every PostgreSQL process with
 * SIGSTOP for a few seconds: every request must still be answered within the database
 * deadline (200, or 503 retryable with Retry-After), /healthz must stay fast, work must
 * resume within 1 s of SIGCONT, and every acknowledged completion must be in the database. */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "verdict/util.h"
#include "vt.h"
#include "vt_api.h"
#include "vt_pg.h"

#define CLIENTS 6
#define ITEMS 4000
#define DB_TIMEOUT_MS 1000
#define FREEZE_SECONDS 4.0
#define MAX_ACKED 20000
#define MAX_PROBES 2000

static vt_pg pg; /* the cluster of its own */
static vt_server srv;

/* The postmaster and its children: every process of this cluster. */
static int cluster_pids(pid_t *out, int max)
{
    char path[128];
    FILE *f = NULL;
    long pm = pg.dir[0] ? (long)vt_pg_postmaster(&pg) : 0;
    int n = 0;
    DIR *d = NULL;
    struct dirent *e = NULL;
    if (pm <= 0)
        return 0;
    out[n++] = (pid_t)pm;
    d = opendir("/proc");
    while (d && (e = readdir(d)) && n < max) {
        long pid = strtol(e->d_name, NULL, 10), ppid = 0;
        char stat[512], *p = NULL;
        if (pid <= 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(stat, sizeof(stat), f) && (p = strrchr(stat, ')')) &&
            sscanf(p + 2, "%*c %ld", &ppid) == 1 && ppid == pm)
            out[n++] = (pid_t)pid;
        fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

static void cluster_signal(int sig)
{
    pid_t pids[256];
    int n = cluster_pids(pids, 256);
    for (int i = 0; i < n; i++)
        kill(pids[i], sig);
}

typedef struct shared {
    _Atomic int phase; /* 0 warm, 1 frozen, 2 resumed, 3 stop */
    double frozen_at, resumed_at;
    _Atomic double first_ok_after; /* first 200 claim after SIGCONT (monotonic) */
    _Atomic long answered, ok, unavailable, bad_status, not_retryable, slow;
    _Atomic double worst;
    _Atomic long acked_n;
    int64_t acked[MAX_ACKED];
    double probes[MAX_PROBES];
    _Atomic int nprobes;
} shared;

static shared S;

static void note_latency(double secs)
{
    double w = atomic_load(&S.worst);
    while (secs > w && !atomic_compare_exchange_weak(&S.worst, &w, secs))
        ;
    if (secs > (DB_TIMEOUT_MS + 1500) / 1000.0)
        atomic_fetch_add(&S.slow, 1);
}

/* Check one answer: 200, or 503 retryable with Retry-After. */
static bool judge(const vt_resp *r, double secs)
{
    atomic_fetch_add(&S.answered, 1);
    note_latency(secs);
    if (r->status == 200) {
        atomic_fetch_add(&S.ok, 1);
        return true;
    }
    if (r->status == 503) {
        const cJSON *rt = cJSON_GetObjectItem(r->json, "retryable");
        atomic_fetch_add(&S.unavailable, 1);
        if (!cJSON_IsTrue(rt) || !r->retry_after[0])
            atomic_fetch_add(&S.not_retryable, 1);
        return false;
    }
    fprintf(stderr, "unexpected status %ld: %s\n", r->status, r->body ? r->body : "");
    atomic_fetch_add(&S.bad_status, 1);
    return false;
}

static void *client(void *arg)
{
    char body[200];
    int index = (int)(intptr_t)arg;
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"outage\", \"worker_id\": \"w%d\", \"limit\": 1}", index);
    while (atomic_load(&S.phase) < 3) {
        double t0 = vd_monotonic();
        vt_resp r = vt_http(&srv, "POST", "/v1/claims", VT_WORKER, body, NULL);
        const cJSON *claims = NULL;
        if (judge(&r, vd_monotonic() - t0) && (claims = cJSON_GetObjectItem(r.json, "claims")) &&
            cJSON_GetArraySize(claims) == 1) {
            const cJSON *c = cJSON_GetArrayItem(claims, 0);
            vt_claim cl = {(int64_t)vt_num(c, "job_id"), (int64_t)vt_num(c, "item.id"), 1, ""};
            double first = 0;
            snprintf(cl.token, sizeof(cl.token), "%s", vt_str(c, "claim_token"));
            if (atomic_load(&S.phase) == 2) /* the first claim answered after SIGCONT */
                atomic_compare_exchange_strong(&S.first_ok_after, &first, vd_monotonic());
            t0 = vd_monotonic();
            vt_resp d = vt_dispose(&srv, &cl, "\"disposition\": \"complete\"");
            if (judge(&d, vd_monotonic() - t0)) {
                long i = atomic_fetch_add(&S.acked_n, 1);
                if (i < MAX_ACKED)
                    S.acked[i] = cl.job_id;
            }
            vt_resp_free(&d);
        }
        if (r.status == 503) { /* a polite client backs off (a little: the test is short) */
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        vt_resp_free(&r);
    }
    vt_http_thread_cleanup();
    return NULL;
}

static void *prober(void *arg)
{
    (void)arg;
    while (atomic_load(&S.phase) < 3) {
        double t0 = vd_monotonic();
        vt_resp r = vt_http(&srv, "GET", "/healthz", NULL, NULL, NULL);
        double secs = vd_monotonic() - t0;
        int i = atomic_load(&S.nprobes);
        if (r.status != 200) /* counted, asserted by the main thread */
            atomic_fetch_add(&S.bad_status, 1);
        if (atomic_load(&S.phase) == 1 && i < MAX_PROBES) {
            S.probes[i] = secs;
            atomic_store(&S.nprobes, i + 1);
        }
        vt_resp_free(&r);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    vt_http_thread_cleanup();
    return NULL;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_outage_sigstop(void **state)
{
    pthread_t t[CLIENTS + 1];
    char env_timeout[64];
    (void)state;
    snprintf(env_timeout, sizeof(env_timeout), "VERDICT_DB_TIMEOUT_MS=%d", DB_TIMEOUT_MS);
    const char *env[] = {env_timeout, "VERDICT_LOG_LEVEL=warn", "VERDICT_THREADS=4", NULL};
    vt_server_start(&srv, env); /* migrates the new database */
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('outage')");
    vt_seed_items("outage", "item-", ITEMS, 5, 3);
    for (int i = 0; i < CLIENTS; i++)
        pthread_create(&t[i], NULL, client, (void *)(intptr_t)i);
    pthread_create(&t[CLIENTS], NULL, prober, NULL);
    sleep_s(1.0);
    S.frozen_at = vd_monotonic();
    cluster_signal(SIGSTOP);
    atomic_store(&S.phase, 1);
    sleep_s(FREEZE_SECONDS);
    atomic_store(&S.phase, 2);
    S.resumed_at = vd_monotonic();
    cluster_signal(SIGCONT);
    sleep_s(2.5);
    atomic_store(&S.phase, 3);
    for (int i = 0; i <= CLIENTS; i++)
        pthread_join(t[i], NULL);
    vt_server_stop(&srv);

    int np = atomic_load(&S.nprobes);
    qsort(S.probes, (size_t)np, sizeof(double), cmp_double);
    double p99 = np ? S.probes[(np * 99) / 100 - (np >= 100 ? 1 : 0)] : 1;
    double first = atomic_load(&S.first_ok_after);
    fprintf(stderr,
            "answered %ld (200: %ld, 503: %ld), worst %.0f ms; healthz during the freeze: %d "
            "probes, p99 %.1f ms, max %.1f ms; first claim %.0f ms after SIGCONT; %ld acked\n",
            atomic_load(&S.answered), atomic_load(&S.ok), atomic_load(&S.unavailable),
            atomic_load(&S.worst) * 1000, np, p99 * 1000, np ? S.probes[np - 1] * 1000 : 0,
            first > 0 ? (first - S.resumed_at) * 1000 : -1, atomic_load(&S.acked_n));
    assert_int_equal(atomic_load(&S.bad_status), 0);
    assert_int_equal(atomic_load(&S.not_retryable), 0);
    assert_true(atomic_load(&S.unavailable) > 0); /* the freeze was felt */
    assert_int_equal(atomic_load(&S.slow), 0);    /* every answer within the bound */
    assert_true(np >= 20);
    assert_true(p99 < 0.050);
    assert_true(S.probes[np - 1] < 0.250); /* a loaded 2-CPU box may stall one probe */
    assert_true(first > 0 && first - S.resumed_at < 1.0);
    /* nothing acknowledged is lost */
    long n = atomic_load(&S.acked_n);
    n = n < MAX_ACKED ? n : MAX_ACKED;
    for (long i = 0; i < n; i += 300) { /* 300 ids per query: vt_sql's buffer is 8 KiB */
        char ids[6000] = "";
        size_t len = 0;
        long k = 0;
        for (; k < 300 && i + k < n; k++)
            len += (size_t)snprintf(ids + len, sizeof(ids) - len, "%s%lld", k ? "," : "",
                                    (long long)S.acked[i + k]);
        assert_int_equal(vt_sql_long("SELECT count(*) FROM jobs WHERE id IN (%s) AND"
                                     " status = 'completed'",
                                     ids),
                         k);
    }
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'outage'"
                                 " AND state = 'processed'"),
                     vt_sql_long("SELECT count(*) FROM jobs WHERE status = 'completed'"));
}

/* A cluster of its own (freezing it cannot hurt other tests), fast settings, said so; srv is
 * started by the test. */
static vt_fixture fx = {
    .pg = &pg,
    .pg_conf = "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
               "max_connections = 100",
};

static void thaw(void)
{
    cluster_signal(SIGCONT); /* never leave it frozen */
}

static int setup(void **state)
{
    (void)state;
    vt_fixture_setup(&fx);
    atexit(thaw); /* before the fixture's removal, when a failed check ends the program */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    thaw();
    return vt_fixture_teardown(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outage_sigstop),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
