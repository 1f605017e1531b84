/* test_faults.c - the fault suite (ctest label fault; plain build only), each test on
 * PostgreSQL clusters of its own, loopback only, a few seconds each: kill -9 of verdictd under
 * load (x3), PostgreSQL restart -m fast and kill -9 of its postmaster under load (503 only;
 * recovery < 1 s after the database accepts again), two replicas with short leases (no item
 * completed twice, every late holder 409), and a failover to a promoted synchronous standby
 * through a multi-host URL with target_session_attrs=read-write (503 only during the switch,
 * first 2xx within 2 s of the promotion). The durability checks read the database. */
#include <libpq-fe.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vt.h"
#include "vt_api.h"
#include "vt_pg.h"

#define CLIENTS 16
#define MAX_ACKS 200000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pause_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* ---- the load: claim one item, complete it; acknowledged completions are remembered ---- */

typedef struct load {
    vt_server *srv;
    const char *flow;
    volatile bool stop;
    pthread_mutex_t mu;
    long long acks[MAX_ACKS];
    long n_acks, ok, e503, other;
    double mark;     /* a moment (now_s) to measure the first 2xx after; 0: none */
    double first_ok; /* the first 2xx answered after mark */
    pthread_t t[CLIENTS];
} load;

static void note(load *l, const vt_resp *r, long long ack)
{
    double t = now_s();
    pthread_mutex_lock(&l->mu);
    if (r->status >= 200 && r->status < 300) {
        l->ok++;
        if (l->mark > 0 && l->first_ok == 0 && t > l->mark)
            l->first_ok = t;
        if (ack && l->n_acks < MAX_ACKS)
            l->acks[l->n_acks++] = ack;
    } else if (r->status == 503) {
        l->e503++;
    } else {
        if (l->other++ < 5)
            fprintf(stderr, "unexpected %ld: %s\n", r->status, r->body ? r->body : "");
    }
    pthread_mutex_unlock(&l->mu);
}

static void *load_client(void *arg)
{
    load *l = arg;
    char body[200], path[80];
    snprintf(body, sizeof(body), "{\"flow_step_id\": \"%s\", \"worker_id\": \"w\"}", l->flow);
    while (!l->stop) {
        vt_resp r = vt_http(l->srv, "POST", "/v1/claims", VT_WORKER, body, NULL);
        cJSON *c = r.status == 200 && r.json
                       ? cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "claims"), 0)
                       : NULL;
        if (r.status != 0) /* 0: verdictd itself is gone (the kill -9 test) */
            note(l, &r, 0);
        if (c) {
            long long job = (long long)vt_num(c, "job_id");
            char b[200];
            snprintf(path, sizeof(path), "/v1/jobs/%lld/disposition", job);
            snprintf(b, sizeof(b), "{\"claim_token\": \"%s\", \"disposition\": \"complete\"}",
                     vt_str(c, "claim_token"));
            vt_resp d = vt_http(l->srv, "POST", path, VT_WORKER, b, NULL);
            if (d.status != 0)
                note(l, &d, d.status == 200 ? job : 0);
            vt_resp_free(&d);
        } else if (r.status != 200) {
            pause_s(0.02);
        }
        vt_resp_free(&r);
    }
    vt_http_thread_cleanup();
    return NULL;
}

static void load_start(load *l, vt_server *srv, const char *flow)
{
    memset(l, 0, sizeof(*l));
    l->srv = srv;
    l->flow = flow;
    pthread_mutex_init(&l->mu, NULL);
    for (int i = 0; i < CLIENTS; i++)
        assert_int_equal(pthread_create(&l->t[i], NULL, load_client, l), 0);
}

static void load_stop(load *l)
{
    l->stop = true;
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(l->t[i], NULL);
}

static void register_n(vt_server *srv, const char *flow, int n)
{
    static char body[120000];
    for (int base = 0; base < n; base += 500) {
        size_t len = (size_t)snprintf(body, sizeof(body), "{\"items\": [");
        for (int i = base; i < base + 500 && i < n; i++)
            len += (size_t)snprintf(body + len, sizeof(body) - len,
                                    "%s{\"flow_step_id\": \"%s\", \"source_type\": \"t\","
                                    " \"item_identifier\": \"i%d\"}",
                                    i > base ? ", " : "", flow, i);
        snprintf(body + len, sizeof(body) - len, "]}");
        vt_resp r = vt_http(srv, "POST", "/v1/items", VT_ADMIN, body, NULL);
        assert_int_equal(r.status, 200);
        vt_resp_free(&r);
    }
}

/* Every acknowledged completion, read back from the database at `url`: its job completed,
 * its item processed, its transition there. */
static void verify_acks(const load *l, const char *url)
{
    PGconn *pg = PQconnectdb(url);
    assert_int_equal(PQstatus(pg), CONNECTION_OK);
    long missing = 0;
    for (long i = 0; i < l->n_acks; i++) {
        char sql[300];
        snprintf(sql, sizeof(sql),
                 "SELECT 1 FROM jobs j JOIN items it ON it.id = j.item_id JOIN audit t"
                 " ON t.job_id = j.id AND t.to_state = 'processed' WHERE j.id = %lld"
                 " AND j.status = 'completed' AND it.state = 'processed'",
                 l->acks[i]);
        PGresult *res = PQexec(pg, sql);
        missing += PQntuples(res) != 1;
        PQclear(res);
    }
    PQfinish(pg);
    fprintf(stderr, "  %ld acknowledged completions, %ld missing in the database\n", l->n_acks,
            missing);
    assert_true(l->n_acks > 0);
    assert_int_equal(missing, 0);
}

static vt_pg pg;
static char durable_conf[] = "fsync = on\nsynchronous_commit = on";

static void own_cluster(void)
{
    vt_pg_init(&pg, durable_conf);
    vt_pg_start(&pg);
    vt_pg_use(&pg);
    vt_db_setup();
}

static void drop_cluster(void)
{
    vt_db_teardown();
    vt_pg_destroy(&pg);
}

static void test_fault_kill9_verdictd(void **state)
{
    (void)state;
    const char *env[] = {"VERDICT_THREADS=4", "VERDICT_LOG_LEVEL=warn", NULL};
    double t0 = now_s();
    own_cluster();
    for (int round = 0; round < 3; round++) {
        vt_server srv;
        load l;
        vt_server_start(&srv, env);
        if (round == 0)
            register_n(&srv, "k9", 20000);
        load_start(&l, &srv, "k9");
        pause_s(1.0);
        kill(srv.pid, SIGKILL);
        waitpid(srv.pid, NULL, 0);
        load_stop(&l);
        unlink(srv.log_path);
        fprintf(stderr, "kill -9 of verdictd, round %d:\n", round + 1);
        verify_acks(&l, vt_db_setup_url());
        assert_int_equal(l.other, 0);
    }
    drop_cluster();
    fprintf(stderr, "  (%.1f s)\n", now_s() - t0);
}

/* A database outage under load: `fault` takes PostgreSQL down and brings it back, returning
 * when it accepts connections again. Only 503 in between; the first 2xx within 1 s. */
static void outage_under_load(const char *name, void (*fault)(void))
{
    const char *env[] = {"VERDICT_THREADS=4", "VERDICT_LOG_LEVEL=error",
                         "VERDICT_DB_TIMEOUT_MS=2000", NULL};
    vt_server srv;
    load l;
    double t0 = now_s();
    own_cluster();
    vt_server_start(&srv, env);
    register_n(&srv, "out", 20000);
    load_start(&l, &srv, "out");
    pause_s(1.0);
    fault();
    l.mark = now_s(); /* the database accepts connections again */
    pause_s(2.0);
    load_stop(&l);
    double recovery = l.first_ok > 0 ? l.first_ok - l.mark : -1;
    fprintf(stderr,
            "%s: %ld 2xx, %ld 503, %ld other; first 2xx %.3f s after the database"
            " accepted again\n",
            name, l.ok, l.e503, l.other, recovery);
    verify_acks(&l, vt_db_setup_url());
    vt_server_stop(&srv);
    drop_cluster();
    fprintf(stderr, "  (%.1f s)\n", now_s() - t0);
    assert_int_equal(l.other, 0);
    assert_true(recovery >= 0 && recovery < 1.0);
}

static void restart_fast(void)
{
    assert_int_equal(vt_pg_sh("/usr/lib/postgresql/15/bin/pg_ctl -D %s/data -m fast -w -t 60 "
                              "restart >/dev/null",
                              pg.dir),
                     0);
}

static void kill9_postmaster(void)
{
    pid_t pm = vt_pg_postmaster(&pg);
    assert_true(pm > 0);
    kill(pm, SIGKILL);
    /* the backends notice their postmaster's death and leave; then it can start again */
    for (int i = 0; i < 300; i++) {
        if (vt_pg_sh("/usr/lib/postgresql/15/bin/pg_ctl -D %s/data -l %s/postgres.log -w -t 60"
                     " start >/dev/null 2>&1",
                     pg.dir, pg.dir) == 0)
            return;
        pause_s(0.1);
    }
    fail_msg("PostgreSQL did not start again");
}

static void test_fault_pg_restart_fast(void **state)
{
    (void)state;
    outage_under_load("PostgreSQL restart -m fast", restart_fast);
}

static void test_fault_pg_kill9_postmaster(void **state)
{
    (void)state;
    outage_under_load("kill -9 of the postmaster", kill9_postmaster);
}

/* ---- two replicas, short leases ---- */

typedef struct late_ctx {
    vt_server *srv[2];
    int me;
    long ok, late409, other;
} late_ctx;

static void *late_client(void *arg)
{
    late_ctx *c = arg;
    double end = now_s() + 9.0;
    for (int n = 0; now_s() < end; n++) {
        vt_server *s = c->srv[(c->me + n) % 2];
        vt_resp r = vt_http(s, "POST", "/v1/claims", VT_WORKER,
                            "{\"flow_step_id\": \"two\", \"worker_id\": \"w\","
                            " \"lease_seconds\": 5}",
                            NULL);
        cJSON *k = r.status == 200 && r.json
                       ? cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "claims"), 0)
                       : NULL;
        if (!k) {
            vt_resp_free(&r);
            pause_s(0.05);
            continue;
        }
        bool slow = c->me % 4 == 0 && n == 0; /* a holder that outlives its lease */
        if (slow)
            pause_s(7.0);
        char path[80], b[200];
        snprintf(path, sizeof(path), "/v1/jobs/%lld/disposition", (long long)vt_num(k, "job_id"));
        snprintf(b, sizeof(b), "{\"claim_token\": \"%s\", \"disposition\": \"complete\"}",
                 vt_str(k, "claim_token"));
        vt_resp d = vt_http(c->srv[(c->me + n + 1) % 2], "POST", path, VT_WORKER, b, NULL);
        if (slow && d.status == 409)
            c->late409++;
        else if (!slow && d.status == 200)
            c->ok++;
        else
            c->other++;
        vt_resp_free(&d);
        vt_resp_free(&r);
    }
    vt_http_thread_cleanup();
    return NULL;
}

static void test_fault_two_replicas_short_leases(void **state)
{
    (void)state;
    const char *env[] = {"VERDICT_THREADS=4", "VERDICT_SWEEP_INTERVAL_SECONDS=1",
                         "VERDICT_LOG_LEVEL=warn", NULL};
    vt_server a, b;
    late_ctx ctx[CLIENTS];
    pthread_t t[CLIENTS];
    double t0 = now_s();
    own_cluster();
    vt_server_start(&a, env);
    vt_server_start(&b, env);
    register_n(&a, "two", 3000);
    for (int i = 0; i < CLIENTS; i++) {
        ctx[i] = (late_ctx){{&a, &b}, i, 0, 0, 0};
        assert_int_equal(pthread_create(&t[i], NULL, late_client, &ctx[i]), 0);
    }
    long ok = 0, late = 0, other = 0;
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(t[i], NULL);
        ok += ctx[i].ok;
        late += ctx[i].late409;
        other += ctx[i].other;
    }
    long twice = vt_sql_long("SELECT count(*) FROM (SELECT item_id FROM jobs WHERE status ="
                             " 'completed' GROUP BY item_id HAVING count(*) > 1) s");
    long expired = vt_sql_long("SELECT count(*) FROM jobs WHERE status = 'expired'");
    fprintf(stderr,
            "two replicas, 5 s leases: %ld completions, %ld late holders answered 409,"
            " %ld other; %ld jobs expired by the sweepers; items completed twice: %ld (%.1f s)\n",
            ok, late, other, expired, twice, now_s() - t0);
    vt_server_stop(&a);
    vt_server_stop(&b);
    drop_cluster();
    assert_int_equal(late, CLIENTS / 4);
    assert_int_equal(other, 0);
    assert_int_equal(twice, 0);
    assert_true(ok > 100);
}

/* ---- failover to a promoted synchronous standby ---- */

static void test_fault_failover_promoted_standby(void **state)
{
    (void)state;
    vt_pg primary, standby;
    vt_server srv;
    load l;
    double t0 = now_s();
    vt_pg_init(&primary, "wal_level = replica\nmax_wal_senders = 5\nhot_standby = on\n"
                         "synchronous_commit = on");
    vt_pg_start(&primary);
    vt_pg_use(&primary);
    const char *url = vt_db_setup();
    const char *db = strstr(url, "dbname=vt_") + 7;
    /* the standby: a base backup of the primary, streaming from it, synchronous */
    vt_pg_init(&standby, NULL);
    vt_pg_sh("rm -rf %s/data && /usr/lib/postgresql/15/bin/pg_basebackup -h 127.0.0.1 -p %d"
             " -U postgres -D %s/data -R -X stream -c fast >/dev/null 2>&1",
             standby.dir, primary.port, standby.dir);
    char path[200];
    snprintf(path, sizeof(path), "%s/data/postgresql.auto.conf", standby.dir);
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fprintf(f,
            "port = %d\nunix_socket_directories = '%s'\nprimary_conninfo = 'host=127.0.0.1"
            " port=%d user=postgres application_name=standby1'\n",
            standby.port, standby.dir, primary.port);
    fclose(f);
    vt_pg_start(&standby);
    /* synchronous from now on: every acknowledged commit is on the standby too */
    free(vt_sql("ALTER SYSTEM SET synchronous_standby_names = 'standby1'"));
    free(vt_sql("SELECT pg_reload_conf()"));
    for (int i = 0; i < 100 && vt_sql_long("SELECT count(*) FROM pg_stat_replication WHERE"
                                           " sync_state = 'sync'") < 1;
         i++)
        pause_s(0.1);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM pg_stat_replication WHERE"
                                 " sync_state = 'sync'"),
                     1);
    char dburl[300];
    snprintf(dburl, sizeof(dburl),
             "VERDICT_DATABASE_URL=host=127.0.0.1,127.0.0.1 port=%d,%d"
             " user=postgres dbname=%s target_session_attrs=read-write sslmode=disable"
             " gssencmode=disable",
             primary.port, standby.port, db);
    const char *env[] = {dburl, "VERDICT_THREADS=4", "VERDICT_LOG_LEVEL=error",
                         "VERDICT_DB_TIMEOUT_MS=2000", NULL};
    vt_server_start(&srv, env);
    register_n(&srv, "fo", 20000);
    load_start(&l, &srv, "fo");
    pause_s(1.5);
    vt_pg_stop(&primary, "fast");
    double stopped = now_s();
    assert_int_equal(vt_pg_sh("/usr/lib/postgresql/15/bin/pg_ctl -D %s/data -w -t 60 promote"
                              " >/dev/null",
                              standby.dir),
                     0);
    l.mark = now_s();
    pause_s(2.5);
    load_stop(&l);
    double first = l.first_ok > 0 ? l.first_ok - l.mark : -1;
    fprintf(stderr,
            "failover: %ld 2xx, %ld 503, %ld other; promotion took %.3f s after the"
            " primary stopped; first 2xx %.3f s after the promotion\n",
            l.ok, l.e503, l.other, l.mark - stopped, first);
    char new_url[200];
    snprintf(new_url, sizeof(new_url), "host=127.0.0.1 port=%d user=postgres dbname=%s",
             standby.port, db);
    verify_acks(&l, new_url);
    vt_server_stop(&srv);
    vt_pg_destroy(&standby);
    vt_pg_destroy(&primary);
    fprintf(stderr, "  (%.1f s)\n", now_s() - t0);
    assert_int_equal(l.other, 0);
    assert_true(first >= 0 && first < 2.0);
}

int main(int argc, char **argv)
{
    vt_pg_require();
    if (argc > 1) /* one test by name (a glob), e.g. "*failover*" */
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_kill9_verdictd),
        cmocka_unit_test(test_fault_pg_restart_fast),
        cmocka_unit_test(test_fault_pg_kill9_postmaster),
        cmocka_unit_test(test_fault_two_replicas_short_leases),
        cmocka_unit_test(test_fault_failover_promoted_standby),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
